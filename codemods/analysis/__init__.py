"""guardkit.codemods.analysis."""
