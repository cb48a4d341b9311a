from abc import ABC, abstractmethod
import subprocess


class LLMTool(ABC):
    name = ""
    schema = {}

    def param(self):
        return {"name": self.name, "input_schema": self.schema}

    async def run_async(self, tool_input):
        if not isinstance(tool_input, dict):
            return "bad input"
        return await self.run_impl(tool_input)

    @abstractmethod
    async def run_impl(self, tool_input):
        ...


class ShellTool(LLMTool):
    name = "shell"

    async def run_impl(self, tool_input):
        return subprocess.run(tool_input["command"], shell=True, capture_output=True).stdout


class NoteTool(LLMTool):
    name = "note"

    def __init__(self):
        self.notes = []

    async def run_impl(self, tool_input):
        self.notes.append(tool_input["text"])
        return "noted"
