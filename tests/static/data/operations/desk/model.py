import json

from openai import OpenAI

client = OpenAI()


def next_operations(messages):
    reply = client.chat.completions.create(model="gpt-4o", messages=messages)
    return json.loads(reply.choices[0].message.content)
