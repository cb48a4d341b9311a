import json

from openai import OpenAI

client = OpenAI()


class Agent:
    def __init__(self, name, helpers=None, notes=None):
        self.name = name
        self.notes = list(notes or [])
        self.table = {fn.__name__: fn for fn in helpers or []}

    def run(self, messages):
        for _ in range(5):
            reply = client.chat.completions.create(model="m", messages=messages)
            for call in reply.choices[0].message.tool_calls or []:
                handler = self.table[call.function.name]
                output = handler(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "content": str(output)})
