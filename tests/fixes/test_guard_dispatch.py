"""GuardDispatch: dispatch sites in the shapes hand-written agents use, fixed, re-scanned and run.

Each fixture in ``data/dispatch`` is an agent of its own (written for these tests) and
``data/dispatch/fixed`` holds what ``guardkit fix`` makes of it. The fixed agents are run with
their SDK client replaced by a scripted one that answers with the SDK's own response types:
an allowed call runs, a denied one comes back to the model as the tool's result.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from types import ModuleType
from typing import Any

import anthropic.types
import openai.types.chat
import pytest
from guardkit.codemods import scan
from guardkit.codemods.fixer import fix_source

import guardkit

DATA = Path(__file__).parent / "data" / "dispatch"
FIXTURES = sorted(p.name for p in DATA.glob("*.py"))
DENIED = "Denied by the policy guard:"


@pytest.mark.parametrize("name", FIXTURES)
def test_fix_mends_the_dispatch_site_as_recorded(name: str) -> None:
    before = (DATA / name).read_text()
    result = fix_source(before, str(DATA / name))
    assert result.error is None
    assert "GuardDispatch" in result.applied
    assert result.after == (DATA / "fixed" / name).read_text()
    assert result.followups == ()


@pytest.mark.parametrize("name", FIXTURES)
def test_the_fixed_agent_compiles_rescans_clean_and_fixes_to_itself(
    name: str, tmp_path: Path
) -> None:
    fixed = (DATA / "fixed" / name).read_text()
    compile(fixed, name, "exec")
    target = tmp_path / name
    target.write_text(fixed)
    assert [f for r in scan([str(target)]) for f in r.findings] == []
    assert fix_source(fixed, str(target)).after == fixed


# -- running the fixed agents ---------------------------------------------------------------------


class Scripted:
    """An SDK client whose ``create`` returns scripted responses (``.chat.completions`` for
    OpenAI, ``.messages`` for Anthropic), sync or async."""

    def __init__(self, replies: list[Any], *, is_async: bool = False) -> None:
        self.replies = replies
        self.chat = self.completions = self.messages = self
        self.is_async = is_async
        self.seen: list[Any] = []

    def create(self, **kwargs: Any) -> Any:
        self.seen.append(kwargs["messages"])
        reply = self.replies.pop(0)
        if not self.is_async:
            return reply

        async def later() -> Any:
            return reply

        return later()


_ids = count(1)


def openai_reply(*calls: tuple[str, dict[str, Any]]) -> Any:
    tool_calls = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for name, args in calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": None if calls else "done"}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return openai.types.chat.ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "message": message,
                }
            ],
        }
    )


def anthropic_reply(*calls: tuple[str, dict[str, Any]]) -> Any:
    content = [
        {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": args}
        for name, args in calls
    ] or [{"type": "text", "text": "done"}]
    return anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    loaded: list[str] = []

    def load_fixed(name: str) -> ModuleType:
        module_name = f"_gk_fixed_{Path(name).stem}"
        spec = importlib.util.spec_from_file_location(module_name, DATA / "fixed" / name)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        loaded.append(module_name)
        spec.loader.exec_module(module)
        return module

    yield load_fixed
    for module_name in loaded:
        sys.modules.pop(module_name, None)


@pytest.fixture
def agent() -> Iterator[guardkit.LocalAgent]:
    """Allowed: model turns and the read-only tools; everything else is denied."""
    tools = {
        name: {"cost": 0} for name in ("add", "get_weather", "lookup", "getsize", "echo", "read")
    }
    with guardkit.Guard(":memory:") as guard:
        guard.create_agent("bot", {"budget": 100, "tools": {"llm_turn": {"cost": 1}, **tools}})
        agent = guard.agent("bot")
        with guardkit.use_agent(agent):
            yield agent


def tool_requests(agent: guardkit.LocalAgent) -> list[str]:
    log = agent.guard.log(agent.agent_id)["records"]
    return [
        r["payload"]["tool"]
        for r in log
        if r["kind"] == "action_requested" and r["payload"]["tool"] != "llm_turn"
    ]


def tool_results(messages: list[Any]) -> list[str]:
    out = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "tool":
            out.append(message["content"])
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            out += [b["content"] for b in message["content"] if isinstance(b, dict)]
    return out


def test_lambda_table(load, agent):
    module = load("lambda_table.py")
    module.client = Scripted(
        [
            anthropic_reply(("add", {"a": 2, "b": 3}), ("delete_file", {"path": "/etc"})),
            anthropic_reply(),
        ]
    )
    results = tool_results(module.run("add and delete"))
    assert results[0] == "5"
    assert results[1].startswith(DENIED)
    assert tool_requests(agent) == ["add", "delete_file"]


def test_function_map_of_guarded_functions_asks_once_per_call(load, agent):
    module = load("function_map.py")
    module.client = Scripted(
        [
            openai_reply(
                ("get_weather", {"city": "Oslo"}), ("send_email", {"to": "x", "body": "y"})
            ),
            openai_reply(),
        ]
    )
    results = tool_results(module.chat("weather?"))
    assert results[0] == "sunny in Oslo"
    assert results[1].startswith(DENIED)
    assert tool_requests(agent) == ["get_weather", "send_email"]


def test_getattr_dispatch(load, agent):
    module = load("getattr_dispatch.py")
    module.client = Scripted(
        [
            openai_reply(
                ("lookup", {"order": "A1"}), ("refund", {"order": "A1", "amount_cents": 9})
            ),
            openai_reply(),
        ]
    )
    results = tool_results(module.Assistant().run("refund A1"))
    assert results[0] == "order A1: shipped"
    assert results[1].startswith(DENIED)
    assert tool_requests(agent) == ["lookup", "refund"]


def test_if_chain_over_imported_functions(load, agent, tmp_path):
    module = load("imported_tools.py")
    (tmp_path / "f.txt").write_text("12345")
    module.client = Scripted(
        [
            openai_reply(("getsize", {"filename": str(tmp_path / "f.txt")})),
            openai_reply(("disk_usage", {"path": "/"})),
            openai_reply(),
        ]
    )
    results = tool_results(module.answer("how big?"))
    assert results[0] == "5"
    assert results[1].startswith(DENIED)
    assert tool_requests(agent) == ["getsize", "disk_usage"]


def test_async_class_based_tools(load, agent):
    module = load("class_tools.py")
    module.client = Scripted(
        [
            anthropic_reply(("echo", {"text": "hi"}), ("shell", {"command": "rm -rf /"})),
            anthropic_reply(),
        ],
        is_async=True,
    )
    results = tool_results(asyncio.run(module.run("echo then shell")))
    assert results[0] == "hi"
    assert results[1].startswith(DENIED)
    assert tool_requests(agent) == ["echo", "shell"]


@pytest.mark.parametrize(
    ("name", "tools"),
    [
        ("lambda_table.py", ("add", "delete_file")),
        ("function_map.py", ("get_weather", "send_email")),
        ("imported_tools.py", ("disk_usage", "getsize")),
        ("mcp_handler.py", ("read",)),
        ("class_tools.py", ()),  # a table built at run time: its names are not known here
    ],
)
def test_fix_names_the_tools_it_put_under_the_guard_for_the_policy_skeleton(
    name: str, tools: tuple[str, ...]
) -> None:
    assert fix_source((DATA / name).read_text(), str(DATA / name)).tools == tools


def test_mcp_handler_keeps_its_content_block_shape(agent, tmp_path):
    """The fixed handler's body, run as the server would run it (mcp 1.x's ``@server.call_tool()``
    registration is left out: the installed mcp 2.x has no such decorator)."""
    source = (DATA / "fixed" / "mcp_handler.py").read_text()
    source = source.replace("@server.call_tool()\n", "").replace('server = Server("files")', "")
    namespace: dict[str, Any] = {}
    exec(compile(source, "mcp_handler.py", "exec"), namespace)
    (tmp_path / "notes.txt").write_text("hello")
    handler = namespace["call_tool"]
    [allowed] = asyncio.run(handler("read", {"path": str(tmp_path / "notes.txt")}))
    assert allowed.text == "hello"
    agent.guard.create_agent("reader", {"budget": 10, "tools": {}})
    with guardkit.use_agent(agent.guard.agent("reader")):
        [denied] = asyncio.run(handler("read", {"path": str(tmp_path / "notes.txt")}))
    assert type(denied).__name__ == "TextContent"
    assert denied.type == "text"
    assert denied.text.startswith("Denied by the policy guard: tool 'read' is not allowed.")
