"""A retrying decorator of the project over a model helper: its wrapper loops on errors."""

import functools

import openai


def keep_trying(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        while True:
            try:
                return func(*args, **kwargs)
            except openai.APIError:
                continue

    return wrapper


@keep_trying
def tidy(text: str) -> str:
    return text.strip()


@keep_trying
def complete(prompt: str) -> str:
    reply = openai.OpenAI().chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content or ""
