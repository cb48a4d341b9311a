from pathlib import Path

from .base import Tool


class ReadFile(Tool):
    name = "read_file"

    def run(self, path: str) -> str:
        return Path(path).read_text()
