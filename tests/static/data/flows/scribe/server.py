import os
from pathlib import Path

from openai import OpenAI

client = OpenAI()
ROOT = Path("/srv/notes")


def write_note(name: str, content: str) -> str:
    Path(name).write_text(content)
    with open(os.path.join(ROOT, name), "w") as handle:
        handle.write(content)
    (ROOT / name).open("a").write(content)
    return "ok"


def read_note(tool_name: str, args: dict) -> str:
    return Path(tool_name).read_text(encoding=args["encoding"])


def ask(messages: list) -> str:
    reply = client.chat.completions.create(
        model="gpt-4.1", messages=messages, tools=[write_note, read_note]
    )
    return reply.choices[0].message.content or ""
