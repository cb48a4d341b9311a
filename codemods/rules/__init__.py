"""guardkit.codemods.rules."""
