"""The model implementation: the only module that imports the SDK."""

import litellm


class LitellmModel:
    def __init__(self, name: str) -> None:
        self.name = name

    def query(self, messages: list[dict]) -> dict:
        return litellm.completion(model=self.name, messages=messages)
