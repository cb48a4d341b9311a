"""The agent loop: no SDK import here; the model call is two methods away."""

from . import Model


class Agent:
    def __init__(self, model: Model, tools: list) -> None:
        self.model = model
        self.tools = tools
        self.messages: list[dict] = []

    def query(self) -> dict:
        return self.model.query(self.messages)

    def step(self) -> None:
        self.messages.append(self.query())

    def run(self) -> None:
        while True:
            self.step()
