import asyncio

from .base import Tool


class ShellTool(Tool):
    name = "shell"
    description = "Run a shell command"

    async def execute(self, command: str = "", **kwargs: object) -> str:
        proc = await asyncio.create_subprocess_shell(command, stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        return out.decode()
