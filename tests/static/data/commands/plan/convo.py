"""A conversation with the model: each send is one model turn, its reply parsed as JSON."""

import json

import anthropic


class Convo:
    def __init__(self) -> None:
        self.client = anthropic.Anthropic()
        self.messages: list[dict[str, str]] = []

    def send_plan(self, prompt: str) -> dict:
        self.messages.append({"role": "user", "content": prompt})
        reply = self.client.messages.create(model="m", max_tokens=512, messages=self.messages)
        return json.loads(reply.content[0].text)
