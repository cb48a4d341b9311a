"""guardkit.codemods.transforms."""
