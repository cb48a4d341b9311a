"""A small but realistic agent code base used by the fix-and-rescan test."""
