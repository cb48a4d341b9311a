import json
import os

from openai import OpenAI


class Toolbox:
    def read_file(self, path: str) -> str:
        with open(path) as handle:
            return handle.read()

    def list_dir(self, path: str) -> list[str]:
        return os.listdir(path)

    def _cache(self) -> dict:
        return {}


client = OpenAI()


def run(messages: list) -> None:
    toolbox = Toolbox()
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)
    for call in reply.choices[0].message.tool_calls or []:
        method = getattr(toolbox, call.function.name)
        method(**json.loads(call.function.arguments))
