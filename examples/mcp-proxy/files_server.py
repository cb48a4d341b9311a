"""A small MCP server of our own: files in one folder, and a shell. No guard inside it.

It stands for any MCP server a client might use (it could as well be written in TypeScript or
Go): ``guardkit mcp proxy`` guards it from the outside. Everything stays under ``$FILES_ROOT``
(default ``./workspace``).

    python files_server.py          # serves MCP over stdio
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

ROOT = Path(os.environ.get("FILES_ROOT", "workspace")).resolve()
server = MCPServer("files", instructions="Files under one folder, and a shell in it.")


def _inside(path: str) -> Path:
    target = (ROOT / path).resolve()
    if not target.is_relative_to(ROOT):
        raise ToolError(f"{path} is outside the workspace")
    return target


@server.tool()
def list_files(folder: str = ".") -> list[str]:
    """List the files under a folder of the workspace."""
    base = _inside(folder)
    return sorted(str(p.relative_to(ROOT)) for p in base.rglob("*") if p.is_file())


@server.tool()
def read_file(path: str) -> str:
    """Read a text file of the workspace."""
    return _inside(path).read_text(encoding="utf-8")


@server.tool()
def write_file(path: str, text: str) -> str:
    """Write a text file in the workspace (creating folders as needed)."""
    target = _inside(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return f"wrote {len(text)} characters to {path}"


@server.tool()
def delete_path(path: str) -> str:
    """Delete a file or a whole folder of the workspace. Destructive: there is no undo."""
    target = _inside(path)
    if target == ROOT:
        raise ToolError("refusing to delete the workspace itself")
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    return f"deleted {path}"


@server.tool()
def run_command(command: str) -> str:
    """Run a shell command in the workspace and return its output."""
    done = subprocess.run(  # noqa: S602 - a shell is this tool's whole point
        command, shell=True, check=False, cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    return done.stdout + done.stderr


if __name__ == "__main__":
    ROOT.mkdir(parents=True, exist_ok=True)
    server.run()
