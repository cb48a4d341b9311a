import subprocess
from pathlib import Path


class Workspace:
    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def run(self, command: str) -> str:
        return subprocess.run(command, shell=True, capture_output=True, text=True).stdout

    def save(self, path: str, content: str) -> None:
        (self.root / path).write_text(content)

    def approve(self, note: str) -> None:
        print("approved", note)

    def reject(self, note: str) -> None:
        print("rejected", note)
