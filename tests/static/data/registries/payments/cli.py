"""Commands a person types: a name table no tool forwards to."""

import sys


def build(*args: str) -> None:
    print("build", args)


def clean(*args: str) -> None:
    print("clean", args)


class Cli:
    def __init__(self) -> None:
        self._commands = {"build": build, "clean": clean}

    def run(self, command: str, *args: str) -> None:
        self._commands[command](*args)


if __name__ == "__main__":
    Cli().run(sys.argv[1], *sys.argv[2:])
