from openai import OpenAI

from agentx.commands import RunPython, Submit

client = OpenAI()


class Agent:
    def __init__(self) -> None:
        self.commands = [RunPython(), Submit()]

    def step(self, messages: list) -> str:
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        text = reply.choices[0].message.content
        for command in self.commands:
            if command.matches(text):
                return command.execute(text)
        for command in self.commands:
            command.reset() if hasattr(command, "reset") else None
        return text
