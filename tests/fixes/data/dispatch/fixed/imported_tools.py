"""An if-chain on the model's tool name that runs functions imported from a library."""

import json
from shutil import disk_usage
from os.path import getsize

import guardkit
from openai import OpenAI

client = OpenAI()
SCHEMAS = [
    {"type": "function", "function": {"name": "disk_usage", "parameters": {}}},
    {"type": "function", "function": {"name": "getsize", "parameters": {}}},
]


def answer(question: str) -> list:
    messages = [{"role": "user", "content": question}]
    for _ in range(4):
        with guardkit.model_turn():
            reply = client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=SCHEMAS
            )
        message = reply.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            if call.function.name == "disk_usage":
                out = str(guardkit.call_tool("disk_usage", args, disk_usage))
            elif call.function.name == "getsize":
                out = str(guardkit.call_tool("getsize", args, getsize))
            else:
                out = "unknown tool"
            messages.append({"role": "tool", "tool_call_id": call.id, "content": out})
    return messages
