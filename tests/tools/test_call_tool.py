"""``guardkit.call_tool`` / ``acall_tool``: one model-chosen tool call run under the guard.

Against an embedded guard on ``:memory:`` and on a SQLite file, and an ``AgentClient`` over a real
guard server on loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import guardkit
from guardkit.refusals import Refusal

POLICY: dict[str, Any] = {
    "budget": 100,
    "scar_limit": 50,
    "tools": {
        "add": {"cost": 2},
        "slow_add": {"cost": 1},
        "pay": {"cost": 1, "requires_approval": True},
    },
}
DENIED = "Denied by the policy guard: tool 'rm' is not allowed. Nothing was done."


@pytest.fixture(params=[":memory:", "sqlite"])
def local(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[guardkit.LocalAgent]:
    where = ":memory:" if request.param == ":memory:" else str(tmp_path / "guard.db")
    with guardkit.Guard(where) as guard:
        guard.create_agent("bot", POLICY)
        yield guard.agent("bot")


def kinds(agent: guardkit.LocalAgent) -> list[tuple[str, dict[str, Any]]]:
    log = agent.guard.log(agent.agent_id)["records"]
    return [(r["kind"], r["payload"]) for r in log if r["kind"] not in ("genesis", "policy")]


def requested(agent: guardkit.LocalAgent) -> list[dict[str, Any]]:
    return [p for k, p in kinds(agent) if k == "action_requested"]


def outcomes(agent: guardkit.LocalAgent) -> list[str]:
    return [p["status"] for k, p in kinds(agent) if k == "outcome"]


def add(a: int, b: int) -> int:
    return a + b


async def slow_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


def test_allowed_call_runs_with_the_parsed_json_and_reports_success(local):
    assert guardkit.call_tool("add", '{"a": 2, "b": 3}', add, guard=local) == 5
    assert requested(local) == [{"action_id": "act-1", "cost": 2, "input": {"a": 2, "b": 3},
                                 "tool": "add"}]  # fmt: skip
    assert outcomes(local) == ["success"]


def test_a_denial_is_the_tool_result_and_nothing_runs(local):
    ran: list[Any] = []
    result = guardkit.call_tool("rm", {"path": "/"}, lambda path: ran.append(path), guard=local)
    assert isinstance(result, str)
    assert result.startswith(DENIED)
    assert "Do not retry" in result
    assert ran == []
    assert [k for k, _ in kinds(local)] == ["action_requested", "action_denied", "scar"]


def test_on_refusal_keeps_the_hosts_result_shape(local):
    def as_blocks(found: Refusal) -> list[dict[str, str]]:
        return [{"type": "text", "text": found.text}]

    blocks = guardkit.call_tool("rm", {}, add, guard=local, on_refusal=as_blocks)
    assert blocks[0]["type"] == "text"
    assert blocks[0]["text"].startswith(DENIED)
    shaped = guardkit.call_tool("rm", {}, add, guard=local, on_refusal=lambda r: r.to_dict())
    assert shaped["refused"] is True
    assert shaped["code"] == "tool_not_allowed"


@pytest.mark.parametrize(
    ("text", "problem"),
    [('{"a": 1,', "not valid JSON"), ("[1, 2]", "a JSON list, not an object"), (b"\xff", "JSON")],
)
def test_bad_json_is_the_models_mistake_not_an_exception(local, text, problem):
    result = guardkit.call_tool("add", text, add, guard=local)
    assert problem in result
    assert "Nothing was done" in result
    assert requested(local) == []


def test_empty_arguments_are_no_arguments(local):
    assert guardkit.call_tool("add", "", lambda: 7, guard=local) == 7
    assert guardkit.call_tool("add", None, lambda: 8, guard=local) == 8


def test_an_unknown_tool_is_a_refusal_and_asks_nothing(local):
    result = guardkit.call_tool("nope", {}, {"add": add}.get("nope"), guard=local)
    assert result.startswith("Error: there is no tool named 'nope'")
    assert requested(local) == []


def test_a_failing_tool_is_reported_and_raises_as_before(local):
    def broken(a: int, b: int) -> int:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        guardkit.call_tool("add", {"a": 1, "b": 2}, broken, guard=local)
    assert outcomes(local) == ["failure"]
    detail = next(p["detail"] for k, p in kinds(local) if k == "outcome")
    assert detail == "ValueError: bad input"


def test_a_wrong_keyword_raises_typeerror_and_is_reported(local):
    with pytest.raises(TypeError):
        guardkit.call_tool("add", {"a": 1, "c": 2}, add, guard=local)
    assert outcomes(local) == ["failure"]


def test_cost_from_the_arguments(local):
    guardkit.call_tool("add", {"a": 4, "b": 1}, add, guard=local, cost=lambda a: a["a"] * 2)
    assert requested(local)[0]["cost"] == 8


def test_the_current_agent_is_asked_when_no_guard_is_passed(local):
    with guardkit.use_agent(local):
        assert guardkit.call_tool("add", {"a": 1, "b": 1}, add) == 2
    assert len(requested(local)) == 1


def test_with_no_agent_configured_the_call_stops_the_agent(monkeypatch):
    monkeypatch.delenv("GUARDKIT_AGENT", raising=False)
    ran: list[int] = []
    try:
        guardkit.call_tool("add", {}, lambda: ran.append(1))
    except Exception:  # an agent's own handler does not swallow it
        pytest.fail("NoAgentConfigured was caught by except Exception")
    except guardkit.NoAgentConfigured:
        pass
    else:
        pytest.fail("nothing was raised")
    assert ran == []


def test_a_guarded_tool_is_handed_the_call_and_asks_once(local):
    @guardkit.tool(cost=5)
    def pay(amount: int) -> str:
        return f"paid {amount}"

    policy_free = guardkit.call_tool("add", {"a": 1, "b": 2}, guardkit.tool()(add), guard=local)
    assert policy_free == 3
    assert [p["tool"] for p in requested(local)] == ["add"]
    result = guardkit.call_tool("rm", {"amount": 3}, guardkit.tool("rm")(pay), guard=local)
    assert result.startswith(DENIED)
    assert [p["tool"] for p in requested(local)] == ["add", "rm"]


def test_a_guarded_tools_local_check_denial_is_the_result(local, tmp_path):
    @guardkit.tool("add", paths={"path": guardkit.PathRule(allow=[str(tmp_path)])})
    def read(path: str) -> str:
        return "read"

    result = guardkit.call_tool("add", {"path": "/etc/passwd"}, read, guard=local)
    assert result.startswith("Denied by the policy guard")
    assert "Nothing was done" in result


def test_a_denial_of_a_nested_call_inside_an_allowed_tool_is_raised(local):
    @guardkit.tool("rm")
    def inner() -> str:
        return "never"

    def outer() -> str:
        return inner()

    with guardkit.use_agent(local), pytest.raises(guardkit.ToolDenied):
        guardkit.call_tool("add", {}, outer, guard=local)
    assert outcomes(local) == ["failure"]


def test_a_guarded_method_is_handed_the_call(local):
    class Adder:
        @guardkit.tool("add")
        def execute(self, a: int, b: int) -> int:
            return a + b

    tools = {"add": Adder()}
    assert guardkit.call_tool("add", {"a": 2, "b": 2}, tools["add"].execute, guard=local) == 4
    assert len(requested(local)) == 1


def test_an_approval_nobody_gives_ends_as_a_refusal(local):
    result = guardkit.call_tool(
        "pay", {"amount": 3}, lambda amount: "paid", guard=local, approval_timeout=0.05, poll=0.01
    )
    assert "Nothing was done" in result
    assert local.action("act-1")["status"] == "denied"


def test_an_async_tool_from_sync_code_is_run_and_reported_when_awaited(local):
    pending = guardkit.call_tool("slow_add", {"a": 1, "b": 2}, slow_add, guard=local)
    assert outcomes(local) == []
    assert asyncio.run(pending) == 3
    assert outcomes(local) == ["success"]


def test_a_guarded_async_tool_from_sync_code_asks_once_when_awaited(local):
    guarded = guardkit.tool("rm")(slow_add)
    with guardkit.use_agent(local):
        pending = guardkit.call_tool("rm", {"a": 1, "b": 2}, guarded)
        assert asyncio.run(pending).startswith(DENIED)
    assert len(requested(local)) == 1


# -- async --------------------------------------------------------------------------------------


def test_acall_tool_awaits_async_tools_and_runs_sync_ones(local):
    async def main() -> tuple[Any, Any, Any]:
        first = await guardkit.acall_tool("slow_add", '{"a": 1, "b": 2}', slow_add, guard=local)
        second = await guardkit.acall_tool("add", {"a": 3, "b": 4}, add, guard=local)
        third = await guardkit.acall_tool("rm", {}, slow_add, guard=local)
        return first, second, third

    first, second, third = asyncio.run(main())
    assert (first, second) == (3, 7)
    assert third.startswith(DENIED)
    assert outcomes(local) == ["success", "success"]


def test_acall_tool_hands_the_call_to_a_guarded_async_tool(local):
    guarded = guardkit.tool("slow_add")(slow_add)
    denied = guardkit.tool("rm")(slow_add)

    async def main() -> tuple[Any, Any]:
        ok = await guardkit.acall_tool("slow_add", {"a": 1, "b": 1}, guarded, guard=local)
        no = await guardkit.acall_tool("rm", {"a": 1, "b": 1}, denied, guard=local)
        return ok, no

    ok, no = asyncio.run(main())
    assert ok == 2
    assert no.startswith(DENIED)
    assert [p["tool"] for p in requested(local)] == ["slow_add", "rm"]


def test_acall_tool_reports_a_failing_async_tool(local):
    async def broken() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(guardkit.acall_tool("add", {}, broken, guard=local))
    assert outcomes(local) == ["failure"]


def test_acall_tool_bad_json_and_shapes(local):
    result = asyncio.run(
        guardkit.acall_tool("add", "{", add, guard=local, on_refusal=lambda r: {"error": r.text})
    )
    assert "not valid JSON" in result["error"]


@pytest.mark.parametrize("path", ["/etc/shadow", "{root}/../../etc/passwd"])
def test_the_policys_path_rules_hold_at_the_dispatch_site(tmp_path, path):
    """A policy's ``paths`` section means the same through ``call_tool`` as through the
    decorators: resolved, not textual; a call outside the root never runs."""
    root = tmp_path / "reports"
    root.mkdir()
    (root / "q1.txt").write_text("ok")
    policy = {
        "budget": 10,
        "tools": {"read_file": {"cost": 0, "paths": {"path": {"allow": [str(root)]}}}},
    }
    ran: list[str] = []

    def read_file(path: str) -> str:
        ran.append(path)
        return "contents"

    with guardkit.Guard(":memory:") as guard:
        guard.create_agent("reader", policy)
        agent = guard.agent("reader")
        inside = guardkit.call_tool(
            "read_file", {"path": str(root / "q1.txt")}, read_file, guard=agent
        )
        assert inside == "contents"
        outside = guardkit.call_tool(
            "read_file", {"path": path.format(root=root)}, read_file, guard=agent
        )
        assert isinstance(outside, str)
        assert outside.startswith("Denied by the policy guard")
        assert ran == [str(root / "q1.txt")]
        denied = [p for k, p in kinds(agent) if k == "action_denied"]
        assert denied
        assert denied[-1]["reason"]["code"] == "path_denied"


def test_a_reserved_guardkit_argument_is_refused_at_the_dispatch_site(local):
    ran: list[Any] = []
    forged = {"a": 1, "b": 2, "_guardkit": {"resolved": "/safe"}}
    result = guardkit.call_tool("add", forged, lambda **kw: ran.append(kw), guard=local)
    assert isinstance(result, str)
    assert result.startswith("Denied by the policy guard")
    assert ran == []
