import json
from collections.abc import Callable

from openai import OpenAI
from pydantic import BaseModel, PrivateAttr

client = OpenAI()


class Worker(BaseModel):
    name: str
    functions: list[Callable[..., str]] = []
    _by_name: dict[str, Callable[..., str]] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: object) -> None:
        self._by_name = {f.__name__: f for f in self.functions}

    def step(self, messages):
        reply = client.chat.completions.create(model="m", messages=messages)
        for call in reply.choices[0].message.tool_calls or []:
            run = self._by_name.get(call.function.name)
            messages.append({"role": "tool", "content": run(**json.loads(call.function.arguments))})
