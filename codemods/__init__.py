"""Static passes and codemods that find and fix unguarded agent code (installed as guardkit.codemods)."""
