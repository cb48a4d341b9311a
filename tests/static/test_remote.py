"""A tool that runs elsewhere (issue 20): an MCP client's ``await session.call_tool(block.name,
block.input)`` handed the name of the tool the model chose runs that tool on the server, where
no decorator of this project reaches: the call is the dispatch (GK202). A record of a tool call
(``ToolCall(name=block.name)``), a call with a name the program chose, and the project's own
method (``self.call_tool``, followed where it is defined) are none."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

CLIENT = """\
from anthropic import Anthropic
from mcp import ClientSession

client = Anthropic()


class ToolCall:
    def __init__(self, name, arguments):
        self.name = name
        self.arguments = arguments


async def process(session: ClientSession, messages):
    response = client.messages.create(model="m", max_tokens=100, messages=messages)
    calls = []
    for block in response.content:
        if block.type == "tool_use":
            calls.append(ToolCall(name=block.name, arguments=block.input))
            result = await session.call_tool(block.name, block.input)
            messages.append({"role": "user", "content": result.content})
    await session.call_tool("status", {})
    return calls
"""


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "client.py"
    path.write_text(textwrap.dedent(CLIENT))
    return path


def _dispatches(found: Found) -> set[tuple[int, str]]:
    return {(f[1], f[3]) for f in found() if f[2] == "GK202"}


def test_a_library_call_handed_the_models_tool_name_is_the_dispatch(
    client: Path, found: Found
) -> None:
    assert _dispatches(found) == {(19, "session.call_tool")}


def test_the_projects_own_method_is_followed_where_it_is_defined(
    client: Path, found: Found
) -> None:
    client.write_text(
        client.read_text().replace(
            "await session.call_tool(block.name", "await self.call_tool(block.name"
        )
    )
    assert _dispatches(found) == set()


@pytest.mark.parametrize("keyword", ["name", "tool_name", "tool", "tool_id"])
def test_the_name_handed_by_keyword_is_a_dispatch(client: Path, found: Found, keyword: str) -> None:
    code = client.read_text().replace(
        "await session.call_tool(block.name, block.input)",
        f"await session.call_tool({keyword}=block.name, arguments=block.input)",
    )
    client.write_text(code)
    assert _dispatches(found) == {(19, "session.call_tool")}
