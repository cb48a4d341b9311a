"""pytest11 entry point of guardkit: registers nothing unless an option, marker or fixture asks."""
