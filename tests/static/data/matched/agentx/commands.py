import subprocess


class Command:
    tag = ""

    def matches(self, text: str) -> bool:
        return f"```{self.tag}" in text

    def execute(self, text: str) -> str:
        raise NotImplementedError


class RunPython(Command):
    tag = "python"

    def execute(self, text: str) -> str:
        return subprocess.run(["python", "-c", text], capture_output=True, text=True).stdout


class Submit(Command):
    tag = "SUBMIT"

    def execute(self, text: str) -> str:
        return "submitted"
