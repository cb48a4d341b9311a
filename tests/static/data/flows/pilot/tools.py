import subprocess
from typing import Any


class BaseTool:
    name = ""

    def to_params(self) -> dict[str, Any]:
        return {"name": self.name, "type": "custom"}

    async def __call__(self, **kwargs: Any) -> str:
        raise NotImplementedError


class ScreenTool(BaseTool):
    name = "screen"

    async def __call__(self, action: str = "", **kwargs: Any) -> str:
        return subprocess.run(["xdotool", action], capture_output=True, text=True).stdout


class TerminalTool(BaseTool):
    name = "terminal"

    async def __call__(self, command: str = "", **kwargs: Any) -> str:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout


class ToolCollection:
    def __init__(self, *tools: BaseTool) -> None:
        self.tools = tools
        self.tool_map = {tool.to_params()["name"]: tool for tool in tools}

    def to_params(self) -> list[dict[str, Any]]:
        return [tool.to_params() for tool in self.tools]

    async def run(self, *, name: str, tool_input: dict[str, Any]) -> str:
        tool = self.tool_map.get(name)
        if tool is None:
            return f"unknown tool {name}"
        return await tool(**tool_input)
