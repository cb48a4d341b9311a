import json

from inhouse import make_client

client = make_client()


def next_action(messages: list[dict[str, str]]) -> dict[str, str]:
    try:
        response = client.complete(messages=messages)
        text = response.choices[0].message.content
        return json.loads(text)
    except Exception:
        messages.append({"role": "user", "content": "answer in JSON"})
        return next_action(messages)
