import sys

from config import LIMIT
from openai import OpenAI

client = OpenAI()


def summarise(paths):
    for path in paths[:LIMIT]:
        with open(path) as handle:
            text = handle.read()
        reply = client.chat.completions.create(
            model="small", messages=[{"role": "user", "content": text}]
        )
        print(reply.choices[0].message.content)


if __name__ == "__main__":
    summarise(sys.argv[1:])
