"""A low-level MCP server whose call_tool handler runs the model's choice from a table."""

from pathlib import Path

import guardkit
from mcp.server import Server
from mcp.types import TextContent

server = Server("files")


@guardkit.tool()
def read(path: str) -> list[TextContent]:
    return [TextContent(type="text", text=Path(path).read_text())]


HANDLERS = {"read": read}


@server.call_tool()
async def call_tool(name: str, arguments: dict) -> list[TextContent]:
    return guardkit.call_tool(
        name,
        arguments,
        HANDLERS[name],
        on_refusal=lambda refusal: [TextContent(type="text", text=refusal.text)],
    )
