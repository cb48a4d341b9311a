import anthropic

from .dispatch import run_one
from .tools.notes import SaveNoteTool
from .tools.shell import ShellTool

client = anthropic.AsyncAnthropic()


class Crew:
    def __init__(self) -> None:
        self.tools = [ShellTool(), SaveNoteTool()]
        self.by_name = {tool.name: tool for tool in self.tools}

    async def turn(self, messages: list) -> str:
        for _ in range(10):
            response = await client.messages.create(
                model="claude-sonnet-4-5",
                max_tokens=1024,
                messages=messages,
                tools=[tool.to_dict() for tool in self.tools],
            )
            results = []
            for block in response.content:
                if block.type == "tool_use":
                    output = await run_one(self.by_name, block.name, block.input)
                    results.append({"type": "tool_result", "tool_use_id": block.id, "content": output})
            if not results:
                return response.content[0].text
            messages.append({"role": "user", "content": results})
        return ""
