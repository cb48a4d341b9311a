"""Async Claude loop over class-based tools: instances by name, an async execute method."""

import asyncio
from typing import Any

import anthropic
import guardkit

client = anthropic.AsyncAnthropic()


class Tool:
    name = ""

    def to_param(self) -> dict:
        return {"name": self.name, "description": self.name, "input_schema": {"type": "object"}}

    async def execute(self, **kwargs: Any) -> str:
        raise NotImplementedError


class Echo(Tool):
    name = "echo"

    async def execute(self, text: str) -> str:
        await asyncio.sleep(0)
        return text


class Shell(Tool):
    name = "shell"

    async def execute(self, command: str) -> str:
        return f"ran {command}"


tools = {tool.name: tool for tool in (Echo(), Shell())}


async def run(task: str) -> list:
    messages = [{"role": "user", "content": task}]
    for _ in range(8):
        async with guardkit.model_turn():
            response = await client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                messages=messages,
                tools=[t.to_param() for t in tools.values()],
            )
        messages.append({"role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            break
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = await guardkit.acall_tool(
                    block.name, block.input, tools[block.name].execute
                )
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
        messages.append({"role": "user", "content": results})
    return messages
