from anthropic import Anthropic

client = Anthropic()
ACTIONS = {}


class Desk:
    def action(summary):
        def record(method):
            ACTIONS[method.__name__] = {"description": summary}
            return method

        return record

    @action("Type text on the screen")
    def type_text(self, text):
        return f"typed {len(text)} characters"

    @action("Press one key")
    def press(self, key):
        return f"pressed {key}"

    def screenshot(self):
        return b""

    def perform(self, name, arguments):
        if name in ACTIONS:
            return getattr(self, name)(**arguments)
        return "unknown action"

    def step(self, messages):
        schemas = [{"name": n, "description": a["description"]} for n, a in ACTIONS.items()]
        for _ in range(5):
            reply = client.messages.create(
                model="m", max_tokens=512, messages=messages, tools=schemas
            )
            for block in reply.content:
                if block.type == "tool_use":
                    messages.append({"role": "user", "content": self.perform(block.name, block.input)})
