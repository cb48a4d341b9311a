"""What an MCP low-level ``call_tool`` branch runs (issue 20): the one project function it
hands the call to, unless the branch acts on the arguments itself (then the branch is the tool
and the project function only formats the result); a branch on a group of names
(``name.startswith("fs_")``) hands its group to a helper, which is the tool."""

from __future__ import annotations

from guardkit.codemods.scanner import scan_source

SERVER = """\
import json
import logging
import shutil

from mcp.server import Server

server = Server("files")
log = logging.getLogger(__name__)


def to_text(value):
    return [json.dumps(value)]


def copy_file(src, dst):
    return shutil.copy(src, dst)


@server.call_tool()
async def call_tool(name: str, arguments: dict):
    if name == "move_file":
        shutil.move(arguments["src"], arguments["dst"])
        return to_text({"moved": arguments["dst"]})
    if name == "copy_file":
        log.info("copying %s", arguments)
        return copy_file(arguments["src"], arguments["dst"])
    raise ValueError(name)
"""


def _tools(source: str) -> set[str]:
    return {f.symbol for f in scan_source(source, "server.py").findings if f.rule == "GK201"}


def test_a_branch_that_acts_itself_is_the_tool_not_its_formatter() -> None:
    assert _tools(SERVER) == {"call_tool[move_file]", "copy_file"}


def test_a_branch_that_only_formats_with_the_project_delegates() -> None:
    delegating = SERVER.replace(
        'shutil.move(arguments["src"], arguments["dst"])\n', 'print("moving")\n'
    )
    assert _tools(delegating) == {"to_text", "copy_file"}
