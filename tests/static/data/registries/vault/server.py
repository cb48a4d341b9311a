from mcp.server import Server

from . import tools

app = Server("vault")
handlers: dict[str, tools.Handler] = {}


def add_handler(handler: tools.Handler) -> None:
    handlers[handler.name] = handler


def get_handler(name: str) -> tools.Handler | None:
    return handlers.get(name)


add_handler(tools.DeleteNote())
add_handler(tools.ListNotes())


@app.call_tool()
async def call_tool(name: str, arguments: dict) -> list:
    handler = get_handler(name)
    if handler is None:
        raise ValueError(f"unknown tool {name}")
    return handler.run(arguments)
