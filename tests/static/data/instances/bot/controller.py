from bot.files import read_file
from bot.registry import Cache, Registry

registry = Registry()
cache = Cache()


@registry.action("Click an element")
async def click(index: int) -> int:
    return index


@registry.action("Go to a url")
async def go_to_url(url: str) -> str:
    return url


def today() -> str:
    return "Monday"


registry.add("read_file", read_file)
cache.put("today", today)
