"""A low-level MCP server: an if-chain on the tool name, tools in another package."""

from mcp.server import Server

from .handlers import handle_append, handle_search

server = Server("notes")


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list:
    if name == "search":
        return await handle_search(arguments)
    elif name == "append":
        return await handle_append(arguments)
    raise ValueError(f"unknown tool {name}")
