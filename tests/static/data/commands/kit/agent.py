from typing import Any

import anthropic


class Agent:
    def __init__(self) -> None:
        self.client = anthropic.Anthropic()
        self.registry: dict[str, Any] = {}

    def register(self, tool: Any) -> None:
        self.registry[tool.name] = tool

    def step(self, messages: list) -> bool:
        reply = self.client.messages.create(
            model="m", max_tokens=512, messages=messages,
            tools=[t.schema() for t in self.registry.values()],
        )
        for block in reply.content:
            if block.type == "tool_use":
                result = self.registry[block.name].run(**block.input)
                messages.append({"role": "user", "content": str(result)})
        return reply.stop_reason == "tool_use"
