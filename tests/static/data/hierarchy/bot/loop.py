import json

from bot.provider import Provider
from bot.tools.files import ReadTool, WriteTool
from bot.tools.registry import Registry


class Agent:
    def __init__(self):
        self.provider = Provider()
        self.tools = Registry()
        self.tools.register(ReadTool())
        self.tools.register(WriteTool())

    async def answer(self, messages):
        for _ in range(10):
            response = await self.provider.chat(messages, tools=self.tools.definitions())
            message = response.choices[0].message
            if not message.tool_calls:
                return message.content
            for call in message.tool_calls:
                args = json.loads(call.function.arguments)
                result = await self.tools.run(call.function.name, args)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return None
