import anthropic

from crew.executor import Executor
from crew.tools import Shell

client = anthropic.AsyncAnthropic()


async def work(task):
    tools = [Shell()]
    executor = Executor(tools)
    messages = [{"role": "user", "content": task}]
    for _ in range(8):
        reply = await client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            messages=messages,
            tools=executor.schemas(),
        )
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return reply.content
        outputs = await executor.run_all(calls)
        messages.append({"role": "user", "content": str(outputs)})
    return None
