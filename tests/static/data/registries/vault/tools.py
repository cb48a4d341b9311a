"""Tool handler classes: the server looks them up by name."""

import os


class Handler:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, args: dict) -> list:
        raise NotImplementedError


class DeleteNote(Handler):
    def __init__(self) -> None:
        super().__init__("delete_note")

    def run(self, args: dict) -> list:
        os.remove(args["path"])
        return []


class ListNotes(Handler):
    def __init__(self) -> None:
        super().__init__("list_notes")

    def run(self, args: dict) -> list:
        return os.listdir(args["folder"])
