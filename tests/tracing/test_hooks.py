"""Tracing through the real ``guardkit.tool`` decorator and ``guardkit.loop.run``."""

from __future__ import annotations

import asyncio
import threading

import pytest
from opentelemetry.trace import StatusCode

import guardkit
import guardkit.loop as _loop
from guardkit import ToolDenied, tracing
from guardkit.checks.paths import PathRule
from guardkit.testing import ScriptedModel


def _sync_search(query: str) -> str:
    return f"found {query}"


async def _async_search(query: str) -> str:
    await asyncio.sleep(0)
    return f"found {query}"


def _gen_search(query: str):
    yield "found"
    yield query


def _call(kind: str, tool):
    if kind == "sync":
        return tool("x")
    if kind == "async":
        return asyncio.run(tool("x"))
    return list(tool("x"))


KINDS = {"sync": _sync_search, "async": _async_search, "generator": _gen_search}


@pytest.mark.parametrize("kind", list(KINDS))
def test_decorated_tool_allowed(otel, guard, kind):
    search = guardkit.tool("search", guard=guard.agent("bot"))(KINDS[kind])
    assert _call(kind, search) in ("found x", ["found", "x"])
    span = otel.one("execute_tool search")
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.type": "function",
        "guardkit.agent_id": "bot",
        "guardkit.decision": "allowed",
        "guardkit.action_id": "act-1",
        "guardkit.cost": 2,
        "guardkit.remaining": 98,
    }
    assert span.status.status_code is StatusCode.UNSET
    (event,) = otel.events()
    assert event.span_id == span.context.span_id


@pytest.mark.parametrize("kind", list(KINDS))
def test_decorated_tool_denied(otel, guard, kind):
    ran = []
    body = KINDS[kind]

    def spy(query: str):
        ran.append(query)
        return body(query)

    rm = guardkit.tool("rm", guard=guard.agent("bot"))(spy if kind == "sync" else body)
    with pytest.raises(ToolDenied):
        _call(kind, rm)
    assert ran == []
    span = otel.one("execute_tool rm")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "guardkit.denied"
    assert span.attributes["guardkit.reason"] == "tool_not_allowed"
    assert span.attributes["guardkit.agent_id"] == "bot"


def test_decorated_tool_waits_for_approval_in_a_child_span(otel, guard):
    pay = guardkit.tool("pay", guard=guard.agent("bot"), approval_timeout=5, poll=0.01)(
        _sync_search
    )
    timer = threading.Timer(0.05, lambda: guard.approve("bot", "act-1", "ann"))
    timer.start()
    try:
        assert pay("inv") == "found inv"
    finally:
        timer.cancel()
    tool, wait = otel.one("execute_tool pay"), otel.one("guardkit.approval")
    assert wait.parent.span_id == tool.context.span_id
    assert wait.attributes["guardkit.approval.status"] == "allowed"
    assert tool.attributes["guardkit.decision"] == "allowed"
    assert tool.status.status_code is StatusCode.UNSET
    assert [e.attributes["guardkit.decision"] for e in otel.events()] == [
        "pending_approval",
        "allowed",
    ]


def test_decorated_tool_approval_timeout(otel, guard):
    pay = guardkit.tool("pay", guard=guard.agent("bot"), approval_timeout=0, poll=0.01)(
        _sync_search
    )
    with pytest.raises(ToolDenied):
        pay("inv")
    assert otel.one("guardkit.approval").attributes["error.type"] == "guardkit.approval_timeout"
    tool = otel.one("execute_tool pay")
    assert tool.attributes["error.type"] == "guardkit.approval_timeout"
    assert tool.attributes["guardkit.reason"] == "approval_timeout"


def test_local_check_denial_names_the_check(otel, guard, tmp_path):
    read = guardkit.tool(
        "search", guard=guard.agent("bot"), paths={"query": PathRule(allow=[str(tmp_path)])}
    )(_sync_search)
    with pytest.raises(ToolDenied):
        read("/etc/passwd")
    attrs = otel.one("execute_tool search").attributes
    assert attrs["guardkit.check"] == "paths"
    assert attrs["guardkit.reason"] == "path_denied"
    assert attrs["error.type"] == "guardkit.denied"
    assert "/etc/passwd" not in repr(dict(attrs))


def test_current_agent_tools_are_traced(otel, guard):
    search = guardkit.tool("search")(_sync_search)
    with guardkit.use_agent(guard.agent("bot")):
        search("q")
    assert otel.one("execute_tool search").attributes["guardkit.agent_id"] == "bot"


def test_nothing_is_emitted_while_off(otel_factory, guard):
    o = otel_factory()
    search = guardkit.tool("search", guard=guard.agent("bot"))(_sync_search)
    assert search("q") == "found q"
    assert o.finished() == []
    assert not tracing.is_enabled()


def test_loop_run_tree(otel, guard):
    def approve_soon():
        threading.Timer(0.05, lambda: guard.approve("bot", "act-5", "ann")).start()

    model = ScriptedModel(
        [
            [("search", {"query": "a"}), ("rm", {"path": "/"})],
            lambda messages: (approve_soon(), [("pay", {"query": "b"})])[1],
            "done",
        ],
        usage=7,
    )
    tools = {"search": _sync_search, "rm": _sync_search, "pay": _sync_search}
    result = _loop.run(
        model, guard.agent("bot"), tools, [], max_turns=5, poll=0.01, approval_timeout=5
    )
    assert result.outcome == "done"
    root = otel.one("invoke_agent bot")
    chats = [s for s in otel.finished() if s.name == "chat"]
    assert len(chats) == 3
    assert all(c.parent.span_id == root.context.span_id for c in chats)
    assert [c.attributes["guardkit.action_id"] for c in chats] == ["act-1", "act-4", "act-6"]
    search, rm, pay = (otel.one(f"execute_tool {n}") for n in ("search", "rm", "pay"))
    for span in (search, rm, pay):
        assert span.parent.span_id == root.context.span_id
        assert span.attributes["gen_ai.agent.name"] == "bot"
    assert search.attributes["gen_ai.tool.call.id"] == "call_1"
    assert search.status.status_code is StatusCode.UNSET
    assert rm.attributes["error.type"] == "guardkit.denied"
    assert otel.one("guardkit.approval").parent.span_id == pay.context.span_id
    assert pay.attributes["guardkit.decision"] == "allowed"
    assert dict(root.attributes) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "bot",
        "guardkit.agent_id": "bot",
        "guardkit.run.outcome": "done",
        "guardkit.run.turns": 3,
    }
    assert root.status.status_code is StatusCode.UNSET


def test_loop_llm_turn_denial_on_the_agent_span(otel, guard):
    policy = {
        "budget": 10,
        "tools": {"llm_turn": {"cost": 1, "max_calls": 1}, "search": {"cost": 1}},
    }
    guard.create_agent("tiny", policy)
    model = ScriptedModel([[("search", {"query": "a"})], "done"])
    result = _loop.run(model, guard.agent("tiny"), {"search": _sync_search}, [], max_turns=5)
    assert result.outcome == "denied_turn"
    root = otel.one("invoke_agent tiny")
    assert root.attributes["guardkit.run.outcome"] == "denied_turn"
    assert root.attributes["guardkit.reason"] == "tool_call_limit"
    assert root.attributes["guardkit.action_id"] == "act-3"
    assert root.attributes["error.type"] == "guardkit.denied"
    assert root.status.status_code is StatusCode.ERROR
    denied = [e for e in otel.events() if e.attributes["gen_ai.tool.name"] == "llm_turn"]
    assert [e.span_id for e in denied] == [root.context.span_id]


def test_loop_tool_failure_is_a_tool_error(otel, guard):
    def broken(query: str) -> str:
        raise RuntimeError("disk full")

    model = ScriptedModel([[("search", {"query": "a"})], "done"])
    _loop.run(model, guard.agent("bot"), {"search": broken}, [], max_turns=3)
    span = otel.one("execute_tool search")
    assert span.attributes["error.type"] == "tool_error"
    assert span.attributes["guardkit.decision"] == "allowed"


class _AsyncScripted:
    """``ScriptedModel`` with a coroutine ``turn``, for ``arun``."""

    def __init__(self, turns) -> None:
        self.inner = ScriptedModel(turns)

    async def turn(self, messages, tools=()):
        await asyncio.sleep(0)
        return self.inner.turn(messages, tools)

    def assistant_message(self, reply):
        return self.inner.assistant_message(reply)

    def tool_result_message(self, call, result, *, is_error):
        return self.inner.tool_result_message(call, result, is_error=is_error)


def test_arun_tree(otel, guard):
    model = _AsyncScripted([[("search", {"query": "a"})], "done"])
    result = asyncio.run(_loop.arun(model, guard.agent("bot"), {"search": _sync_search}, []))
    assert result.outcome == "done"
    root = otel.one("invoke_agent bot")
    chats = [s for s in otel.finished() if s.name == "chat"]
    assert [c.parent.span_id for c in chats] == [root.context.span_id] * 2
    assert all(c.end_time - c.start_time >= 0 for c in chats)
    tool = otel.one("execute_tool search")
    assert tool.parent.span_id == root.context.span_id
    assert tool.attributes["guardkit.decision"] == "allowed"
    assert root.attributes["guardkit.run.turns"] == 2
