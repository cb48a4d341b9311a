import acme_chat


class Handler:
    def __init__(self):
        self.chat = acme_chat.Chat()
        self.meter = acme_chat.Meter()

    async def turn(self, model, messages):
        self.meter.count_tokens(model=model, messages=messages)
        return await self.chat.get_response(model=model, messages=messages)

    def budget(self, model, messages):
        while messages:
            self.meter.count_tokens(model=model, messages=messages.pop())

    def stream(self, model, messages):
        return self.chat.beta.replies.stream(model=model, messages=messages)
