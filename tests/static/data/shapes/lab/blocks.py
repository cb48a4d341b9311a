import inhouse

session = inhouse.Session()


def measure(size: int) -> int:
    return size * 2


TOOL_HANDLERS = {"measure": measure}


def step(history: list[dict[str, object]]) -> list[dict[str, object]]:
    result = session.send(history)
    for block in result.content:
        if block.type == "tool_use":
            history.append({"output": TOOL_HANDLERS[block.name](**block.input)})
    return history


def show(history: list[dict[str, object]]) -> None:
    # one response read in a loop, and ``.name`` read off an unrelated lookup: no model loop
    result = session.send(history)
    for block in result.content:
        print(block.text)
    for key in ("a", "b"):
        entry = inhouse.catalog(key)
        print(entry.name)


def draft() -> object:
    # building a message sets ``tool_calls``, it reads none: not a model call
    message = inhouse.make_message("assistant")
    message.tool_calls = []
    return message
