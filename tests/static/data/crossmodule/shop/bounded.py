"""A loop whose bound is enforced in the method it calls."""

from . import Model


class StepLimitReached(Exception):
    pass


class BoundedAgent:
    def __init__(self, model: Model, step_limit: int = 20) -> None:
        self.model = model
        self.step_limit = step_limit
        self.steps = 0

    def step(self) -> dict:
        self.steps += 1
        if self.steps > self.step_limit:
            raise StepLimitReached(self.steps)
        return self.model.query([])

    def run(self) -> None:
        while True:
            self.step()
