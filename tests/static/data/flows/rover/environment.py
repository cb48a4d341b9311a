import subprocess


class Sandbox:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd

    def execute(self, command: str) -> str:
        done = subprocess.run(command, shell=True, cwd=self.cwd, capture_output=True, text=True)
        return done.stdout + done.stderr
