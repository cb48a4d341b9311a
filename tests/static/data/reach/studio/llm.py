from openai import OpenAI

client = OpenAI()


def complete(messages):
    return client.chat.completions.create(model="m", messages=messages)


class Brain:
    def __call__(self, messages):
        return complete(messages)


def make_brain():
    return Brain()
