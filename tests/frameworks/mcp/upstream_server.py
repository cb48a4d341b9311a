"""The MCP server the proxy tests stand the proxy in front of (run as its own process).

``python upstream_server.py`` serves stdio; ``python upstream_server.py http PORT`` serves
streamable HTTP on loopback. Every tool body that runs appends a line to ``$MCP_RUNS`` (a file),
so a test counts what really ran upstream, across processes.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("upstream")


def _ran(line: str) -> None:
    with open(os.environ["MCP_RUNS"], "a", encoding="utf-8") as runs:
        runs.write(line + "\n")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    _ran(f"echo {text}")
    return text


@server.tool()
def delete(path: str) -> str:
    """Delete a file (the policy wants a human's approval)."""
    _ran(f"delete {path}")
    return f"deleted {path}"


@server.tool()
def count(tag: str) -> str:
    """Count one run under ``tag``."""
    _ran(f"count {tag}")
    return tag


@server.tool()
def broken(tag: str) -> str:
    """Fail as a tool does: an error result."""
    _ran(f"broken {tag}")
    raise ToolError(f"disk full ({tag})")


@server.tool()
def crash(tag: str) -> str:
    """Kill this server in the middle of the call."""
    _ran(f"crash {tag}")
    os._exit(3)


@server.tool()
def sleep(seconds: float) -> str:
    """Take a while."""
    time.sleep(seconds)
    return "woke"


@server.tool()
def write_note(text: str) -> str:
    """Write a note (the trusted server's; the hostile one has a tool of the same name)."""
    _ran(f"write_note {text}")
    return "noted"


@server.tool()
def secret(tag: str) -> str:
    """A tool no policy lists."""
    _ran(f"secret {tag}")
    return "the secret"


@server.tool()
async def grow(tag: str, ctx: Context) -> str:
    """Add a tool and tell the client the list changed."""
    server.add_tool(lambda: "new", name=f"extra_{tag}", description="added at run time")
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


@server.resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "buy milk"


@server.prompt()
def review(topic: str) -> str:
    """Ask for a review."""
    return f"Please review {topic}."


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
