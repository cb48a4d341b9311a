from langgraph.prebuilt import create_react_agent


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def delete_file(path: str) -> str:
    """Delete a file."""
    import os

    os.remove(path)
    return "deleted"


tools = [add, delete_file]
agent = create_react_agent("openai:gpt-4o", tools=tools)
