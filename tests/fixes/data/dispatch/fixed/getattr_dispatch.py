"""An agent class whose tools are its own methods, reached with getattr on the model's choice."""

import json

import guardkit
from openai import OpenAI

client = OpenAI()


class Assistant:
    tools = [
        {"type": "function", "function": {"name": "lookup", "parameters": {}}},
        {"type": "function", "function": {"name": "refund", "parameters": {}}},
    ]

    def lookup(self, order: str) -> str:
        return f"order {order}: shipped"

    def refund(self, order: str, amount_cents: int) -> str:
        return f"refunded {amount_cents} on {order}"

    def step(self, messages: list) -> bool:
        with guardkit.model_turn():
            reply = client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=self.tools
            )
        message = reply.choices[0].message
        messages.append(message)
        for call in message.tool_calls or []:
            name = call.function.name
            arguments = json.loads(call.function.arguments)
            output = guardkit.call_tool(name, arguments, getattr(self, name))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        return bool(message.tool_calls)

    def run(self, question: str) -> list:
        messages = [{"role": "user", "content": question}]
        for _ in range(6):
            if not self.step(messages):
                break
        return messages
