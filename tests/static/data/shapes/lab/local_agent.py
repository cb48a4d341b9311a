from inhouse import Generator

generator = Generator("small-model")


def lookup(term: str) -> str:
    return term.upper()


def remove(path: str) -> str:
    return f"removed {path}"


TOOLS = {"lookup": lookup, "remove": remove}


def chat(prompt: str) -> str:
    messages = [{"role": "user", "content": prompt}]
    while True:
        reply = generator.respond(messages, tools=list(TOOLS))
        if not reply.message.tool_calls:
            return reply.message.content
        for call in reply.message.tool_calls:
            if handler := TOOLS.get(call.function.name):
                messages.append({"role": "tool", "content": handler(**call.function.arguments)})
