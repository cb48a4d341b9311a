"""A scripted MCP client standing in for Claude Desktop or an IDE: it talks to the proxy.

    python client.py [--db guard.db] [--workspace workspace]

It starts ``guardkit mcp proxy`` over stdio (which starts ``files_server.py``), then does what a
model might: list the tools, read a file, try the shell (denied: not in the policy), and delete a
folder (waits until you approve it from a second terminal). Then it prints the ledger.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters, types

HERE = Path(__file__).resolve().parent
AGENT = "files-bot"


def text(result: types.CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def session(db: Path, workspace: Path) -> None:
    proxy = StdioServerParameters(
        command=sys.executable,
        args=["-m", "guardkit", "mcp", "proxy", "--agent", AGENT,
              "--policy", str(HERE / "policy.toml"), "--db", str(db), "--poll", "0.5",
              "--server-name", "files", "--", sys.executable, str(HERE / "files_server.py")],
        env={**os.environ, "FILES_ROOT": str(workspace)},
    )  # fmt: skip
    async with Client(proxy) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        print("tools the model sees:", ", ".join(tools))
        print("read_file:", text(await client.call_tool("read_file", {"path": "notes/todo.txt"})))
        shell = await client.call_tool("run_command", {"command": "rm -rf ."})
        print("run_command:", text(shell))
        print(
            f"delete_path: waiting for a human. In a second terminal:\n"
            f"    guardkit pending {AGENT} --db {db}\n"
            f"    guardkit approve {AGENT} act-N --by you --db {db}",
            flush=True,
        )
        deleted = await client.call_tool("delete_path", {"path": "old-logs"})
        print("delete_path:", text(deleted))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("guard.db"))
    parser.add_argument("--workspace", type=Path, default=Path("workspace"))
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    (workspace / "notes").mkdir(parents=True, exist_ok=True)
    (workspace / "notes" / "todo.txt").write_text("ship the MCP proxy\n")
    (workspace / "old-logs").mkdir(exist_ok=True)
    (workspace / "old-logs" / "app.log").write_text("...\n")
    anyio.run(session, args.db.resolve(), workspace)
    print("old-logs still there:", (workspace / "old-logs").exists())
    print("\nThe ledger:", flush=True)
    subprocess.run(
        [sys.executable, "-m", "guardkit", "log", AGENT, "--db", str(args.db)], check=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
