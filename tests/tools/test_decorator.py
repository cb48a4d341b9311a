"""The decorator over every kind of function: signature kept, the pipeline run, denials raised."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest

import guardkit
from guardkit import ToolDenied


def test_sync_tool_is_requested_run_and_reported(agent, ledger, calls):
    @guardkit.tool(guard=agent, cost=lambda a: a["n"] * 2)
    def add(a: int, b: int = 1, *, n: int = 2) -> int:
        """Add two numbers."""
        calls(a, b)
        return a + b

    assert add(1, b=5) == 6
    assert calls.count == 1
    (request,) = ledger(agent, "action_requested")
    assert request["tool"] == "add"
    assert request["input"] == {"a": 1, "b": 5, "n": 2}
    assert request["cost"] == 4
    assert ledger(agent, "outcome") == [{"action_id": "act-1", "status": "success", "detail": ""}]


def test_metadata_and_signature_are_kept(agent):
    def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    wrapped = guardkit.tool(guard=agent)(add)
    assert wrapped.__name__ == "add"
    assert wrapped.__doc__ == "Add."
    assert inspect.signature(wrapped) == inspect.signature(add)
    assert wrapped.__wrapped__ is add
    assert not inspect.iscoroutinefunction(wrapped)


def test_bare_decorator_and_explicit_name(agent, ledger):
    guardkit.use_agent(agent)

    @guardkit.tool
    def one() -> int:
        return 1

    @guardkit.tool("custom.name")
    def two() -> int:
        return 2

    assert one() + two() == 3
    assert [r["tool"] for r in ledger(agent, "action_requested")] == ["one", "custom.name"]


def test_denied_tool_never_runs_and_raises_tool_denied(make_agent, ledger, calls):
    agent = make_agent(tools={"other": {"cost": 0}}, default_rule=None)

    @guardkit.tool(guard=agent)
    def rm(path: str) -> None:
        calls(path)

    with pytest.raises(ToolDenied) as info:
        rm("/")
    assert calls.count == 0
    assert info.value.reason == {"code": "tool_not_allowed", "tool": "rm"}
    assert info.value.message.startswith("Denied by the policy guard: tool 'rm' is not allowed.")
    assert isinstance(info.value, guardkit.GuardError)
    assert ledger(agent, "action_denied")[0]["reason"]["code"] == "tool_not_allowed"


def test_failure_is_reported_and_reraised(agent, ledger):
    @guardkit.tool(guard=agent)
    def boom() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        boom()
    (outcome,) = ledger(agent, "outcome")
    assert outcome["status"] == "failure"
    assert outcome["detail"] == "ValueError: bad input"
    assert agent.status()["scar_score"] == 1


def test_async_tool(agent, ledger, calls):
    @guardkit.tool(guard=agent)
    async def fetch(url: str) -> str:
        calls(url)
        await asyncio.sleep(0)
        return url.upper()

    assert inspect.iscoroutinefunction(fetch)
    assert asyncio.run(fetch("x")) == "X"
    assert calls.count == 1
    assert [r["status"] for r in ledger(agent, "outcome")] == ["success"]


def test_async_denial(make_agent, calls):
    agent = make_agent(default_rule=None)

    @guardkit.tool(guard=agent)
    async def fetch(url: str) -> str:
        calls(url)
        return url

    with pytest.raises(ToolDenied):
        asyncio.run(fetch("x"))
    assert calls.count == 0


def test_generator_tool_requests_at_first_item(agent, ledger):
    @guardkit.tool(guard=agent)
    def count(n: int):
        yield from range(n)

    assert inspect.isgeneratorfunction(count)
    stream = count(3)
    assert ledger(agent, "action_requested") == []
    assert list(stream) == [0, 1, 2]
    assert [r["status"] for r in ledger(agent, "outcome")] == ["success"]


def test_generator_closed_early_and_failing(agent, ledger):
    @guardkit.tool(guard=agent)
    def count(n: int):
        for i in range(n):
            if i == 5:
                raise RuntimeError("five")
            yield i

    stream = count(10)
    assert next(stream) == 0
    stream.close()
    with pytest.raises(RuntimeError):
        list(count(10))
    outcomes = ledger(agent, "outcome")
    assert [(o["status"], o["detail"]) for o in outcomes] == [
        ("success", "closed by the consumer"),
        ("failure", "RuntimeError: five"),
    ]


def test_generator_denied_never_runs(make_agent, calls):
    agent = make_agent(default_rule=None)

    @guardkit.tool(guard=agent)
    def count(n: int):
        calls(n)
        yield n

    with pytest.raises(ToolDenied):
        next(count(1))
    assert calls.count == 0


def test_async_generator_tool(agent, ledger, calls):
    @guardkit.tool(guard=agent)
    async def count(n: int):
        for i in range(n):
            calls(i)
            yield i

    async def consume() -> list[int]:
        return [i async for i in count(3)]

    assert inspect.isasyncgenfunction(count)
    assert asyncio.run(consume()) == [0, 1, 2]
    assert [r["status"] for r in ledger(agent, "outcome")] == ["success"]


def test_async_generator_denied(make_agent, calls):
    agent = make_agent(default_rule=None)

    @guardkit.tool(guard=agent)
    async def count(n: int):
        calls(n)
        yield n

    async def consume() -> list[int]:
        return [i async for i in count(1)]

    with pytest.raises(ToolDenied):
        asyncio.run(consume())
    assert calls.count == 0


class Files:
    def __init__(self, root: str) -> None:
        self.root = root

    @guardkit.tool()
    def read(self, name: str) -> str:
        return f"{self.root}/{name}"

    @classmethod
    @guardkit.tool()
    def kind(cls, n: int) -> str:
        return f"{cls.__name__}:{n}"

    @guardkit.tool()
    @classmethod
    def kind_outer(cls, n: int) -> str:
        return f"{cls.__name__}:{n}"

    @staticmethod
    @guardkit.tool()
    def join(a: str, b: str) -> str:
        return a + b

    @guardkit.tool()
    @staticmethod
    def join_outer(a: str, b: str) -> str:
        return a + b


def test_methods_classmethods_and_staticmethods(agent, ledger):
    guardkit.use_agent(agent)
    files = Files("/srv")
    assert files.read("a") == "/srv/a"
    assert Files.read(files, "b") == "/srv/b"
    assert Files.kind(1) == "Files:1"
    assert files.kind_outer(2) == "Files:2"
    assert Files.join("x", "y") == "xy"
    assert files.join_outer("p", "q") == "pq"
    inputs = [(r["tool"], r["input"]) for r in ledger(agent, "action_requested")]
    assert inputs == [
        ("read", {"name": "a"}),
        ("read", {"name": "b"}),
        ("kind", {"n": 1}),
        ("kind_outer", {"n": 2}),
        ("join", {"a": "x", "b": "y"}),
        ("join_outer", {"a": "p", "b": "q"}),
    ]
    assert list(inspect.signature(Files.join).parameters) == ["a", "b"]
    assert list(inspect.signature(files.read).parameters) == ["name"]


def _kinds() -> dict[str, type]:
    """One class per wrapper kind, each with every way of being a method (ahead of the test)."""

    def make(kind: str) -> type:
        namespace: dict[str, object] = {}
        body = {
            "sync": "    return n",
            "async": "    return n",
            "generator": "    yield n",
            "async generator": "    yield n",
        }[kind]
        prefix = "async def" if kind.startswith("async") else "def"
        source = f"""
class K:
    @classmethod
    @guardkit.tool("cls_above")
    {prefix} cls_above(cls, n: int):
    {body}

    @guardkit.tool("cls_below")
    @classmethod
    {prefix} cls_below(cls, n: int):
    {body}

    @staticmethod
    @guardkit.tool("static")
    {prefix} static(n: int):
    {body}

    @guardkit.tool("method")
    {prefix} method(self, n: int):
    {body}
"""
        exec(source, {"guardkit": guardkit}, namespace)
        return namespace["K"]  # type: ignore[return-value]

    return {kind: make(kind) for kind in ("sync", "async", "generator", "async generator")}


def _drive(value: object) -> object:
    import asyncio
    import inspect as _inspect

    if _inspect.iscoroutine(value):
        return asyncio.run(value)
    if _inspect.isasyncgen(value):

        async def drain() -> list[object]:
            return [item async for item in value]

        return asyncio.run(drain())
    if _inspect.isgenerator(value):
        return list(value)
    return value


@pytest.mark.parametrize("kind", ["sync", "async", "generator", "async generator"])
def test_every_wrapper_kind_records_the_same_input_on_every_python(agent, ledger, kind):
    """No ``cls``/``self`` in the recorded input, however the method is made (3.13 changed how
    classmethod binds what it wraps): approvals and provenance see the same input everywhere."""
    guardkit.use_agent(agent)
    k = _kinds()[kind]
    for call in (k.cls_above, k().cls_above, k.cls_below, k().cls_below, k.static, k().method):
        assert _drive(call(1)) in (1, [1])
    inputs = [(r["tool"], r["input"]) for r in ledger(agent, "action_requested")]
    assert inputs == [
        ("cls_above", {"n": 1}),
        ("cls_above", {"n": 1}),
        ("cls_below", {"n": 1}),
        ("cls_below", {"n": 1}),
        ("static", {"n": 1}),
        ("method", {"n": 1}),
    ]


def test_bad_arguments_raise_type_error_before_any_request(agent, ledger):
    @guardkit.tool(guard=agent)
    def f(a: int) -> int:
        return a

    with pytest.raises(TypeError):
        f(1, 2)  # type: ignore[call-arg]
    assert ledger(agent, "action_requested") == []


def test_non_json_arguments_are_recorded_as_text(agent, ledger):
    import pathlib

    @guardkit.tool(guard=agent)
    def f(p: Any, blob: bytes, obj: object, items: tuple[int, ...]) -> None:
        return None

    f(pathlib.Path("/tmp/x"), b"ab", object.__new__(object), (1, 2))
    recorded = ledger(agent, "action_requested")[0]["input"]
    assert recorded["p"] == "/tmp/x"
    assert recorded["blob"] == "ab"
    assert recorded["obj"].startswith("<object object")
    assert recorded["items"] == [1, 2]


@pytest.mark.parametrize(
    "bad",
    [
        {"cost": "3"},
        {"cost": True},
        {"guard": object()},
        {"idempotency": 3},
        {"runtime": "yes"},
        {"output": "maybe"},
        {"paths": {"p": "/tmp"}},
    ],
)
def test_misuse_fails_at_decoration(bad):
    with pytest.raises((TypeError, ValueError)):
        guardkit.tool(**bad)


def test_rules_for_arguments_the_tool_does_not_take_fail_at_decoration(tmp_path):
    with pytest.raises(ValueError, match="doesn't take"):

        @guardkit.tool(paths={"pth": guardkit.PathRule(allow=[str(tmp_path)])})
        def read(path: str) -> str:
            return path

    @guardkit.tool(paths={"pth": guardkit.PathRule(allow=[str(tmp_path)])})
    def read_any(**kwargs: Any) -> str:
        return "ok"


def test_policy_rules_for_unknown_arguments_raise_policy_error(make_agent):
    agent = make_agent(tools={"read": {"cost": 0, "paths": {"pth": {"allow": ["/tmp"]}}}})

    @guardkit.tool(guard=agent)
    def read(path: str) -> str:
        return path

    with pytest.raises(guardkit.PolicyError, match="doesn't take"):
        read("/tmp/x")


def test_decorating_a_non_callable_fails():
    with pytest.raises(TypeError):
        guardkit.tool()(42)  # type: ignore[arg-type]


# -- approvals ------------------------------------------------------------------------------------


def test_pending_then_approved_runs(make_agent, guard, ledger, calls):
    agent = make_agent(tools={"pay": {"cost": 1, "requires_approval": True}})

    @guardkit.tool(guard=agent, poll=0.01, approval_timeout=10)
    def pay(amount: int) -> str:
        calls(amount)
        return "paid"

    def approve() -> None:
        while not guard.pending(agent.agent_id):
            threading.Event().wait(0.005)
        guard.approve(agent.agent_id, "act-1", "alice")

    approver = threading.Thread(target=approve)
    approver.start()
    assert pay(5) == "paid"
    approver.join()
    assert calls.count == 1


def test_pending_then_rejected_raises(make_agent, guard, calls):
    agent = make_agent(tools={"pay": {"cost": 1, "requires_approval": True}})

    @guardkit.tool(guard=agent, poll=0.01, approval_timeout=10)
    def pay(amount: int) -> str:
        calls(amount)
        return "paid"

    def reject() -> None:
        while not guard.pending(agent.agent_id):
            threading.Event().wait(0.005)
        guard.reject(agent.agent_id, "act-1", "alice", "wrong vendor")

    rejecter = threading.Thread(target=reject)
    rejecter.start()
    with pytest.raises(ToolDenied) as info:
        pay(5)
    rejecter.join()
    assert info.value.reason["code"] == "rejected"
    assert info.value.reason["reason"] == "wrong vendor"
    assert calls.count == 0


def test_approval_timeout_is_a_denial(make_agent, calls):
    agent = make_agent(tools={"pay": {"cost": 1, "requires_approval": True}})

    @guardkit.tool(guard=agent, poll=0.01, approval_timeout=0.05)
    def pay(amount: int) -> str:
        calls(amount)
        return "paid"

    with pytest.raises(ToolDenied) as info:
        pay(5)
    assert info.value.reason == {"code": "approval_timeout", "timeout": 0.05}
    assert calls.count == 0


def test_not_waiting_for_approval_raises_at_once(make_agent, calls):
    agent = make_agent(tools={"pay": {"cost": 1, "requires_approval": True}})

    @guardkit.tool(guard=agent, wait_for_approval=False)
    def pay(amount: int) -> str:
        calls(amount)
        return "paid"

    with pytest.raises(ToolDenied) as info:
        pay(5)
    assert info.value.reason == {"code": "pending_approval"}


def test_async_tool_waits_off_the_event_loop(make_agent, guard, calls):
    agent = make_agent(tools={"pay": {"cost": 1, "requires_approval": True}})

    @guardkit.tool(guard=agent, poll=0.01, approval_timeout=10)
    async def pay(amount: int) -> str:
        calls(amount)
        return "paid"

    async def main() -> str:
        async def approve() -> None:
            while not guard.pending(agent.agent_id):
                await asyncio.sleep(0.005)
            guard.approve(agent.agent_id, "act-1", "alice")

        approval = asyncio.create_task(approve())
        result = await pay(1)
        await approval
        return result

    assert asyncio.run(main()) == "paid"
