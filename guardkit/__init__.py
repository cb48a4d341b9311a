"""guardkit: guard tool-calling LLM agents."""
