from kit.agent import Agent
from kit.tools import files, shell


def main() -> None:
    agent = Agent()
    for tool in (shell.Shell(), files.ReadFile()):
        agent.register(tool)
    messages = [{"role": "user", "content": "go"}]
    for _ in range(10):
        if not agent.step(messages):
            break
