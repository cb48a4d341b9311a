from openai import OpenAI

_client = OpenAI()


def query(history: list[dict[str, str]]) -> str:
    reply = _client.chat.completions.create(model="gpt-4.1", messages=history)
    return reply.choices[0].message.content or ""
