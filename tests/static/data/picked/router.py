import httpx

URL = "https://api.openai.com/v1/chat/completions"


def ask(prompt, max_tokens=256):
    reply = httpx.post(URL, json={"messages": [{"role": "user", "content": prompt}]})
    return reply.json()["choices"][0]["message"]["content"]


def weather(prompt):
    return "sunny"


def search(prompt):
    return httpx.get("https://example.org/search", params={"q": prompt}).text


HELPERS = [weather, search]


def answer(prompt):
    menu = "\n".join(f"{i + 1}: {f.__name__}" for i, f in enumerate(HELPERS))
    index = int(ask(f"Pick one tool by number:\n{menu}\n\n{prompt}", max_tokens=1))
    chosen = HELPERS[index - 1]
    return ask(f"Context: {chosen(prompt)}\n\n{prompt}")


def rotate(prompt, turn):
    # picked by the turn count, not by the model: no dispatch
    return HELPERS[turn % len(HELPERS)](prompt)


def first_word(prompt):
    # the reply indexed by a constant is data, not a callee
    words = ask(prompt).split()
    return words[0]
