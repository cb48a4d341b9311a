from anthropic import AsyncAnthropic

from .tools import ScreenTool, TerminalTool, ToolCollection


async def sampling_loop(messages: list) -> list:
    client = AsyncAnthropic()
    collection = ToolCollection(ScreenTool(), TerminalTool())
    while True:
        response = await client.beta.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=2048,
            messages=messages,
            tools=collection.to_params(),
        )
        messages.append({"role": "assistant", "content": response.content})
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = await collection.run(name=block.name, tool_input=block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        if not results:
            return messages
        messages.append({"role": "user", "content": results})
