from abc import ABC, abstractmethod
import subprocess


class Tool(ABC):
    name = ""

    @abstractmethod
    async def execute(self, arguments): ...

    def schema(self):
        return {"name": self.name, "input_schema": {"type": "object"}}


class Shell(Tool):
    name = "run_shell"

    async def execute(self, arguments):
        return subprocess.run(arguments["command"], shell=True, capture_output=True).stdout
