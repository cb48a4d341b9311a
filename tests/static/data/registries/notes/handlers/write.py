def _path(name: str) -> str:
    return f"notes/{name}.md"


async def handle_append(arguments: dict) -> list:
    with open(_path(arguments["note"]), "a") as note:
        note.write(arguments["text"])
    return ["ok"]
