from openai import OpenAI


class Provider:
    model = "base"
    base_url = ""

    def __init__(self) -> None:
        self.client = self.create_client()

    def create_client(self):
        raise NotImplementedError

    def complete(self, messages):
        return self.client.create(model=self.model, messages=messages)

    def call(self, messages):
        return self.complete(messages).choices[0].message


class LocalProvider(Provider):
    model = "local"
    base_url = "http://127.0.0.1:8000/v1"

    def create_client(self):
        return OpenAI(base_url=self.base_url).chat.completions


class HostedProvider(LocalProvider):
    model = "large"
    base_url = "https://models.example.invalid/v1"
