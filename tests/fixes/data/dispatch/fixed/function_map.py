"""An OpenAI loop with a function map of plain functions and JSON arguments, no try."""

import json

import guardkit
from openai import OpenAI

client = OpenAI()


@guardkit.tool()
def get_weather(city: str) -> str:
    return f"sunny in {city}"


@guardkit.tool()
def send_email(to: str, body: str) -> str:
    return f"sent to {to}"


function_map = {"get_weather": get_weather, "send_email": send_email}
SCHEMAS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in function_map]


def chat(question: str, max_turns: int = 5) -> list:
    messages = [{"role": "user", "content": question}]
    for _ in range(max_turns):
        with guardkit.model_turn():
            reply = client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=SCHEMAS
            )
        message = reply.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        for tool_call in message.tool_calls:
            name = tool_call.function.name
            args = json.loads(tool_call.function.arguments)
            result = guardkit.call_tool(name, args, function_map[name])
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": result})
    return messages
