"""Guard MCP tools: a guarding proxy for any MCP server, and middleware for servers you own.

Built on the official ``mcp`` SDK (2.x, ``pip install 'guardkit[mcp]'``):

- ``GuardProxy`` (and ``guardkit mcp proxy -- COMMAND ARGS...``) sits between an MCP client and
  an upstream server (a stdio subprocess in any language, a streamable-HTTP URL, or an in-process
  server): every ``tools/call`` is requested from the guard, waits for a human when the policy
  says so, is forwarded, and its outcome reported. Resources and prompts pass through untouched.
- ``guard_server(server)`` (or ``GuardMiddleware(agent)`` in ``server.middleware``) does the same
  inside an ``MCPServer`` or low-level ``Server`` you write yourself.

A refusal reaches the client as ``CallToolResult(isError=True)`` carrying ``guardkit.refusal``'s
sentence (and its structured form), never the SDK's generic "Error executing tool".
"""

from __future__ import annotations

from .._adapter import require

require("mcp", "mcp")

from .calls import CallPolicy  # noqa: E402 - after the check that names the extra
from .middleware import GuardMiddleware, guard_server  # noqa: E402
from .proxy import GuardProxy, OnChange, Results, Unlisted  # noqa: E402

__all__ = [
    "CallPolicy",
    "GuardMiddleware",
    "GuardProxy",
    "OnChange",
    "Results",
    "Unlisted",
    "guard_server",
]
