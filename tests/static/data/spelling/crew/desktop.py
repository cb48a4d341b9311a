import json

from openai import OpenAI

client = OpenAI()
ACTIONS = {"press": "Press a key", "type_text": "Type text"}


class Desktop:
    def __init__(self, screen, settings):
        self.screen = screen
        self.settings = settings

    def press(self, key):
        self.screen.press(key)
        return "pressed"

    def type_text(self, text):
        self.screen.write(text)
        return "typed"

    def call_function(self, name, arguments):
        impl = getattr(self, name.lower()) if name.lower() in ACTIONS else None
        if impl is None:
            return "not implemented"
        return impl(**arguments)

    def option(self, key, fallback):
        # a configuration key respelled: not a tool name
        reader = getattr(self.settings, key.upper()) if key else None
        return reader(fallback) if reader else fallback

    def step(self, messages):
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        for call in reply.choices[0].message.tool_calls or []:
            args = json.loads(call.function.arguments)
            messages.append({"role": "tool", "content": self.call_function(call.function.name, args)})
        return messages
