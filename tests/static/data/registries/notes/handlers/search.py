async def handle_search(arguments: dict) -> list:
    return [arguments["query"]]
