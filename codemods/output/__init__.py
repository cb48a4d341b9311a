"""guardkit.codemods.output."""
