import litellm


class Assistant:
    def __init__(self, instructions: str, functions: list) -> None:
        self.functions = {f.__name__: f for f in functions}
        self.messages = [{"role": "system", "content": instructions}]

    def ask(self, prompt: str) -> str:
        self.messages.append({"role": "user", "content": prompt})
        reply = litellm.completion(model="m", messages=self.messages)
        return reply.choices[0].message.content
