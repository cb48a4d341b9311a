from litellm import completion

from .tools import TOOLS


def answer(question: str) -> dict:
    return completion(model="m", messages=[{"role": "user", "content": question}], tools=TOOLS)
