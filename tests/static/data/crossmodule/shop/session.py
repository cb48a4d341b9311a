from . import Model
from .responder import respond


class Session:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.messages: list[dict] = []

    def go(self) -> None:
        respond(self)
