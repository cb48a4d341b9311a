import json

from inhouse import make_client

client = make_client()
ACTIONS = [{"type": "function", "function": {"name": "click"}}]


def next_action(messages: list[dict[str, str]]) -> dict[str, str]:
    try:
        response = client.complete(messages=messages, tools=ACTIONS)
        text = response.choices[0].message.content
        return json.loads(text)
    except Exception:
        messages.append({"role": "user", "content": "answer in JSON"})
        return next_action(messages)
