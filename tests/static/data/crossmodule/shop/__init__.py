"""A shop assistant spread over modules, the way real agent projects are."""

from typing import Protocol


class Model(Protocol):
    def query(self, messages: list[dict]) -> dict: ...
