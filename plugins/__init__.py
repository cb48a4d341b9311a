"""Integrations of guardkit with pytest, model providers and agent frameworks."""
