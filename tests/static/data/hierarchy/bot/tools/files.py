from pathlib import Path

from bot.tools.base import Tool


class ReadTool(Tool):
    name = "read"

    async def execute(self, path, **kwargs):
        return Path(path).read_text()


class WriteTool(Tool):
    name = "write"

    async def execute(self, path, text, **kwargs):
        Path(path).write_text(text)
        return "ok"
