"""The model answers in Python calls of its tools, or in one-word commands."""

import anthropic

from .files import list_dir, read_file

client = anthropic.Anthropic()


def ask(history: list) -> str:
    reply = client.messages.create(model="m", max_tokens=512, messages=history)
    return reply.content[0].text


def run_code(code: str) -> object:
    return eval(code.strip(), {"read_file": read_file, "list_dir": list_dir})


def calculate(expression: str) -> object:
    return eval(expression)  # no namespace: not a choice among tools


def step(history: list) -> None:
    text = ask(history)
    history.append({"role": "assistant", "content": text})
    history.append({"role": "user", "content": str(run_code(text))})
    verb, _, rest = text.partition(" ")
    match verb:
        case "open":
            history.append({"role": "user", "content": read_file(rest)})
        case "ls" | "dir":
            history.append({"role": "user", "content": str(list_dir(rest))})
        case _:
            history.append({"role": "user", "content": "unknown command"})
