"""OpenAI function-calling loop (works for DeepSeek too, through base_url)."""

import json
import os

from openai import OpenAI

client = OpenAI(api_key=os.environ.get("DEEPSEEK_API_KEY"), base_url="https://api.deepseek.com")

tools = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> str:
    return f"It is sunny in {city}."


def send_email(to: str, body: str) -> str:
    return f"sent to {to}"


def execute(name, arguments):
    if name == "get_weather":
        return get_weather(**arguments)
    elif name == "send_email":
        return send_email(**arguments)
    return f"unknown tool {name}"


def chat(question: str) -> str:
    messages = [{"role": "user", "content": question}]
    response = client.chat.completions.create(model="deepseek-chat", messages=messages, tools=tools)
    message = response.choices[0].message
    while message.tool_calls:
        messages.append(message)
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": execute(call.function.name, args)}
            )
        response = client.chat.completions.create(
            model="deepseek-chat", messages=messages, tools=tools
        )
        message = response.choices[0].message
    return message.content
