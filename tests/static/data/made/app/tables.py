import json

from openai import OpenAI

client = OpenAI()


def get_weather(city: str) -> str:
    return city


def send_email(to: str, body: str) -> str:
    return to


def helper(text: str) -> str:
    return text


TOOLS = [get_weather, send_email]
TOOL_MAP = {f.__name__: f for f in TOOLS}
NAMES = {f.__name__: f.__doc__ for f in [helper]}


def step(messages: list[dict]) -> None:
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)
    for call in reply.choices[0].message.tool_calls or []:
        out = TOOL_MAP[call.function.name](**json.loads(call.function.arguments))
        messages.append({"role": "tool", "tool_call_id": call.id, "content": str(out)})
