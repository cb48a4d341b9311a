import anthropic

from desk.manager import Manager
from desk.tools import NoteTool, ShellTool

client = anthropic.AsyncAnthropic()


async def solve(task):
    tools = [ShellTool(), NoteTool()]
    manager = Manager(tools)
    messages = [{"role": "user", "content": task}]
    for _ in range(20):
        reply = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            messages=messages,
            tools=[t.param() for t in tools],
        )
        uses = [b for b in reply.content if b.type == "tool_use"]
        if not uses:
            return reply.content
        results = []
        for use in uses:
            output = await manager.run_tool(use.name, use.input)
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": output})
        messages.append({"role": "user", "content": results})
    return None
