"""Per-argument checks run before a guarded tool call."""
