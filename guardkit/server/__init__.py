"""The guard server."""
