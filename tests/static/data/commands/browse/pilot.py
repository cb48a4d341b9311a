"""A browser agent: the model writes one text command per turn, a prefix test runs it."""

import openai

from .page import Page


def main(goal: str) -> None:
    page = Page()

    def next_command(content: str, previous: str) -> str:
        reply = openai.Completion.create(
            model="text-davinci-002", prompt=f"{goal}\n{previous}\n{content}", max_tokens=50
        )
        return reply.choices[0].text

    def perform(command: str) -> None:
        command = command.split("\n")[0]
        if command.startswith("SCROLL"):
            page.scroll("down")
        elif command.startswith("CLICK"):
            page.click(command.split(" ")[1])
        elif "TYPE" in command:
            target, text = command.split(" ", 2)[1:]
            page.type(target, text)
        elif command in ("DONE", "STOP"):
            print("finished")

    command = ""
    while True:
        command = next_command(page.text(), command).strip()
        if input("run it? ") != "y":
            continue
        perform(command)
