"""The loop imports the client another module built."""

from .llm import client


def run(messages: list) -> None:
    while True:
        reply = client.chat.completions.create(model="m", messages=messages)
        messages.append(reply.choices[0].message)
