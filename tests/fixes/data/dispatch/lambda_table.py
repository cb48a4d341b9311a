"""A Claude loop whose tools are a table of lambdas, looked up by the model's choice."""

import anthropic

client = anthropic.Anthropic()

TOOL_HANDLERS = {
    "add": lambda a, b: str(a + b),
    "delete_file": lambda path: f"deleted {path}",
}
TOOLS = [
    {"name": name, "description": name, "input_schema": {"type": "object"}}
    for name in TOOL_HANDLERS
]


def run(task: str) -> list:
    messages = [{"role": "user", "content": task}]
    while True:
        response = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=TOOLS
        )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            return messages
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = TOOL_HANDLERS.get(block.name)(**block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})
