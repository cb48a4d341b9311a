"""An MCP server written by hand, as one in another language might be (run as its own process).

It speaks newline-delimited JSON-RPC on stdio without the SDK and misbehaves on purpose: before
answering a ``tools/call`` it writes a line that is not JSON-RPC, and its ``bad`` tool answers
with a result that is not a ``CallToolResult`` (``content`` is not a list).
"""

from __future__ import annotations

import json
import sys

TOOLS = [
    {"name": "bad", "inputSchema": {"type": "object"}},
    {"name": "good", "inputSchema": {"type": "object"}},
]


def answer(request_id: object, result: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(
            request_id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            },
        )
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        sys.stdout.write("this line is not JSON-RPC\n")
        if message["params"]["name"] == "bad":
            answer(request_id, {"content": "not a list"})
        else:
            answer(request_id, {"content": [{"type": "text", "text": "fine"}]})
    else:
        answer(request_id, {})
