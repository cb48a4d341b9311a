import subprocess

from .base import Tool


class Shell(Tool):
    name = "shell"

    def run(self, command: str) -> str:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout
