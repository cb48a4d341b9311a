"""``GuardMiddleware`` on a real LangChain ``create_agent`` agent driven by LangChain's fake chat
model, over ``LocalAgent`` (``:memory:``, SQLite) and ``AgentClient`` (a real guard server),
with ``invoke`` and ``ainvoke``."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")

from guardkit.plugins.langchain import GuardMiddleware
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

import guardkit


@pytest.fixture(params=["invoke", "ainvoke"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def invoke(graph: Any, mode: str) -> Any:
    payload = {"messages": [{"role": "user", "content": "go"}]}
    return graph.invoke(payload) if mode == "invoke" else asyncio.run(graph.ainvoke(payload))


def tool_messages(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def test_allowed_call_runs_once_and_is_reported(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    b = backend(lc_policy)
    model = chat([tool_call("search", {"query": "guardkit"}, "c1"), "Found it."])
    graph = create_agent(model, tools=[lc_tools["search"]], middleware=[GuardMiddleware(b.agent)])
    out = b.run(graph, mode)

    (request,) = b.requested("search")
    assert request["input"] == {"query": "guardkit"}
    assert ran == [("search", "guardkit", request["action_id"])]
    outcomes = b.outcomes()
    assert outcomes[request["action_id"]] == "success"
    turns = b.requested("llm_turn")
    assert len(turns) == 2
    assert [outcomes[t["action_id"]] for t in turns] == ["success", "success"]
    (result,) = tool_messages(out)
    assert (result.content, result.status) == ("results for guardkit", "success")
    assert out["messages"][-1].content == "Found it."


def test_async_tool_under_ainvoke(lc_policy, backend, chat, tool_call, lc_tools, ran):
    b = backend(lc_policy)
    model = chat([tool_call("fetch", {"url": "https://example.org"}, "c1"), "Read it."])
    graph = create_agent(model, tools=[lc_tools["fetch"]], middleware=[GuardMiddleware(b.agent)])
    out = b.run(graph, "ainvoke")

    (request,) = b.requested("fetch")
    assert ran == [("fetch", "https://example.org", request["action_id"])]
    assert b.outcomes()[request["action_id"]] == "success"
    assert out["messages"][-1].content == "Read it."


def test_denied_call_never_runs_and_the_model_reads_the_denial(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    b = backend(lc_policy)
    model = chat([tool_call("delete", {"name": "prod"}, "c1"), "I will ask a human."])
    graph = create_agent(model, tools=[lc_tools["delete"]], middleware=[GuardMiddleware(b.agent)])
    out = b.run(graph, mode)

    assert ran == []
    (request,) = b.requested("delete")
    expected = guardkit.refusal(
        {
            "decision": "denied",
            "action_id": request["action_id"],
            "reason": {"code": "tool_not_allowed", "tool": "delete"},
        }
    )
    assert expected is not None
    (denial,) = tool_messages(out)
    assert (denial.content, denial.status, denial.tool_call_id) == (expected.text, "error", "c1")
    assert denial.artifact["guardkit"]["code"] == "tool_not_allowed"
    # The model's second turn was shown the denial sentence, word for word.
    shown = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    assert [m.content for m in shown] == [expected.text]
    assert request["action_id"] not in b.outcomes()
    assert [s["severity"] for s in b.scars()] == ["moderate"]


def test_pending_approval_waits_for_a_human(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode, approver
):
    b = backend(lc_policy)
    model = chat([tool_call("pay", {"amount": 5}, "p1"), "Paid."])
    guard = GuardMiddleware(b.agent, poll=0.05)
    graph = create_agent(model, tools=[lc_tools["pay"]], middleware=[guard])
    human = approver(b)
    out = b.run(graph, mode)
    human.join()

    (request,) = b.requested("pay")
    assert ran == [("pay", 5, request["action_id"])]
    allowed = {r["action_id"]: r for r in b.records("action_allowed")}
    assert allowed[request["action_id"]]["approved_by"] == "alice"
    assert b.outcomes()[request["action_id"]] == "success"
    assert tool_messages(out)[0].content == "paid 5"


def test_rejection_never_runs(lc_policy, backend, chat, tool_call, lc_tools, ran, mode, approver):
    b = backend(lc_policy)
    model = chat([tool_call("pay", {"amount": 500}, "p1"), "Understood."])
    graph = create_agent(
        model, tools=[lc_tools["pay"]], middleware=[GuardMiddleware(b.agent, poll=0.05)]
    )
    human = approver(b, reject="too much")
    out = b.run(graph, mode)
    human.join()

    assert ran == []
    (denial,) = tool_messages(out)
    assert denial.status == "error"
    assert denial.content.startswith("Denied by the policy guard:")
    assert "too much" in denial.content
    assert denial.artifact["guardkit"]["code"] == "rejected"


def test_approval_timeout_withdraws_the_action(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    b = backend(lc_policy)
    model = chat([tool_call("pay", {"amount": 5}, "p1"), "Nobody answered."])
    guard = GuardMiddleware(b.agent, approval_timeout=0.2, poll=0.05)
    out = b.run(create_agent(model, tools=[lc_tools["pay"]], middleware=[guard]), mode)

    assert ran == []
    (denial,) = tool_messages(out)
    assert denial.artifact["guardkit"]["code"] == "approval_timeout"
    (request,) = b.requested("pay")
    assert b.action(request["action_id"])["status"] == "denied"


def test_termination_stops_the_run(lc_policy, backend, chat, tool_call, lc_tools, mode):
    b = backend(lc_policy)

    @tool
    def shutdown(reason: str) -> str:
        """Something an operator watches for."""
        b.ops.terminate(b.agent_id, reason, "monitor")
        return "ok"

    model = chat([tool_call("shutdown", {"reason": "caught exfiltrating"}, "s1"), "never said"])
    out = b.run(create_agent(model, tools=[shutdown], middleware=[GuardMiddleware(b.agent)]), mode)

    assert len(model.seen) == 1  # no model turn after the termination
    last = out["messages"][-1]
    assert isinstance(last, AIMessage)
    assert not last.tool_calls
    assert last.response_metadata["guardkit"]["terminated"] is True
    assert last.content.startswith("Denied by the policy guard:")
    assert not b.status()["alive"]


def test_llm_turn_cap_ends_a_runaway_agent(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    policy = {**lc_policy, "tools": {**lc_policy["tools"], "llm_turn": {"cost": 1, "max_calls": 3}}}
    b = backend(policy)
    forever = (tool_call("search", {"query": f"q{i}"}, f"c{i}") for i in itertools.count())
    model = chat(forever)
    out = b.run(
        create_agent(model, tools=[lc_tools["search"]], middleware=[GuardMiddleware(b.agent)]), mode
    )

    assert len(model.seen) == 3
    assert [r[1] for r in ran] == ["q0", "q1", "q2"]
    last = out["messages"][-1]
    assert isinstance(last, AIMessage)
    assert not last.tool_calls
    assert last.response_metadata["guardkit"]["code"] == "tool_call_limit"


def test_tool_exception_is_a_failure_with_a_minor_scar(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    b = backend(lc_policy)
    model = chat([tool_call("explode", {"x": 1}, "e1"), "It failed."])
    out = b.run(
        create_agent(model, tools=[lc_tools["explode"]], middleware=[GuardMiddleware(b.agent)]),
        mode,
    )

    (request,) = b.requested("explode")
    assert len(ran) == 1
    assert b.outcomes()[request["action_id"]] == "failure"
    (scar,) = b.scars()
    assert scar["severity"] == "minor"
    assert "ValueError: kaboom" in scar["reason"]
    (error,) = tool_messages(out)
    assert error.status == "error"
    assert "ValueError('kaboom')" in error.content
    assert out["messages"][-1].content == "It failed."


def test_costs_are_computed_from_the_arguments(lc_policy, backend, chat, tool_call, lc_tools, mode):
    b = backend({**lc_policy, "budget": 1000})
    model = chat([tool_call("search", {"query": "abcd"}, "c1"), "done"])
    guard = GuardMiddleware(b.agent, costs={"search": lambda args: len(args["query"])})
    b.run(create_agent(model, tools=[lc_tools["search"]], middleware=[guard]), mode)

    assert b.requested("search")[0]["cost"] == 4


def test_the_agent_comes_from_use_agent(
    lc_policy, chat, tool_call, lc_tools, ran, mode, monkeypatch
):
    monkeypatch.delenv("GUARDKIT_AGENT", raising=False)
    monkeypatch.delenv("GUARDKIT_URL", raising=False)
    with guardkit.Guard(":memory:") as guard:
        guard.create_agent("bot", lc_policy)
        model = chat([tool_call("search", {"query": "x"}, "c1"), "done"])
        graph = create_agent(model, tools=[lc_tools["search"]], middleware=[GuardMiddleware()])
        with guardkit.use_agent(guard.agent("bot")):
            invoke(graph, mode)
        assert guard.status("bot")["actions_allowed"] == 3

        model = chat(["never"])
        graph = create_agent(model, tools=[lc_tools["search"]], middleware=[GuardMiddleware()])
        with pytest.raises(guardkit.NoAgentConfigured):
            invoke(graph, mode)
        assert model.seen == []


def test_a_failing_model_call_is_reported(lc_policy, backend, chat, mode):
    b = backend(lc_policy)

    class Down(ConnectionError):
        pass

    model = chat([])
    model.__class__._generate = lambda self, *a, **k: (_ for _ in ()).throw(Down("provider down"))
    graph = create_agent(model, tools=[], middleware=[GuardMiddleware(b.agent)])
    with pytest.raises(Down):
        b.run(graph, mode)
    (turn,) = b.requested("llm_turn")
    assert b.outcomes()[turn["action_id"]] == "failure"


def test_bad_options_fail_at_construction():
    with pytest.raises(ValueError, match="approvals"):
        GuardMiddleware(approvals="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive"):
        GuardMiddleware(approval_timeout=0)


def test_a_turn_outcome_carries_the_tokens_used(lc_policy, backend, chat, mode):
    b = backend(lc_policy)
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    model = chat([AIMessage("Hello.", usage_metadata=usage)])
    b.run(create_agent(model, tools=[], middleware=[GuardMiddleware(b.agent)]), mode)
    (turn,) = b.requested("llm_turn")
    (outcome,) = [r for r in b.records("outcome") if r["action_id"] == turn["action_id"]]
    assert (outcome["status"], outcome["detail"]) == ("success", "usage: 15 tokens")


def test_the_policys_path_rules_apply_to_middleware_tool_calls(tmp_path):
    """One enforcement path: a policy's ``paths`` section holds for a plain LangChain tool."""
    from guardkit.plugins.langchain import GuardMiddleware
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools, **kwargs):
            return self

    reports = tmp_path / "reports"
    reports.mkdir()
    read = []

    @lc_tool
    def read_file(path: str) -> str:
        """Read a file."""
        read.append(path)
        return "secret"

    guard = guardkit.Guard(":memory:")
    rule = {"cost": 1, "paths": {"path": {"allow": [str(reports)]}}}
    guard.create_agent("bot", {"budget": 10, "tools": {"llm_turn": {"cost": 0}, "read_file": rule}})
    call = {"name": "read_file", "args": {"path": "/etc/shadow"}, "id": "c1"}
    model = Scripted(messages=iter([AIMessage("", tool_calls=[call]), "done"]))
    agent = create_agent(model, tools=[read_file], middleware=[GuardMiddleware(guard.agent("bot"))])
    result = agent.invoke({"messages": [{"role": "user", "content": "read"}]})
    assert read == []
    assert result["messages"][2].status == "error"
    denied = [r["payload"] for r in guard.log("bot")["records"] if r["kind"] == "action_denied"]
    assert [d["reason"]["code"] for d in denied] == ["path_denied"]


def test_a_guard_that_cannot_record_is_never_a_tool_message():
    """The middleware words a refusal for the model, but a store that failed stops the agent
    (GuardFailed, which ``except Exception`` lets through) instead of becoming "Error: ..."."""
    from guardkit.plugins.langchain._messages import guard_error_message

    from guardkit.errors import StoreError

    call = {"name": "pay", "args": {}, "id": "c1"}
    with pytest.raises(guardkit.GuardFailed, match="tool call 'pay'"):
        guard_error_message(call, StoreError("store guard.db: disk I/O error"))
    unreachable = guardkit.GuardUnavailable("the guard at http://127.0.0.1:9 could not be reached")
    assert guard_error_message(call, unreachable).status == "error"  # Lineage: tell the model
