async def read_file(path: str) -> str:
    with open(path) as handle:
        return handle.read()
