"""The seed's loop runs unchanged against guardkit; ``guardkit.loop.run`` does the same job."""

from __future__ import annotations

import threading

import pytest

from guardkit import Guard, GuardError
from guardkit.loop import GUARD_UNREACHABLE, SYSTEM_PROMPT, denial_message, run
from guardkit.testing import ScriptedModel

POLICY = {
    "budget": 30,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 1, "max_calls": 10},
        "search": {"cost": 0},
        "pay": {"cost": 1, "requires_approval": True},
        "flaky": {"cost": 0},
    },
}


# The seed's minimal loop, verbatim but for its import line.
def seed_run(model, guard, tools, messages, max_turns=30):
    for _ in range(max_turns):
        turn = guard.request("llm_turn", {})
        if turn["decision"] != "allowed":
            return f"stopped: {turn.get('reason')}"
        reply = model(messages)
        guard.report(turn["action_id"], "success")
        messages.append(reply.as_message())
        if not reply.tool_calls:
            return reply.text

        for call in reply.tool_calls:
            decision = guard.request(call.name, call.args)
            action_id = decision["action_id"]
            if decision["decision"] == "pending_approval":
                status = guard.wait_for_approval(action_id)
                decision = (
                    {"decision": "allowed"}
                    if status == "allowed"
                    else {"decision": "denied", "reason": {"code": "rejected"}}
                )
            if decision["decision"] == "denied":
                result = f"Denied by the policy guard: {decision['reason']}. Do not retry."
            else:
                try:
                    result = tools[call.name](**call.args)
                    guard.report(action_id, "success")
                except Exception as e:
                    guard.report(action_id, "failure", str(e))
                    result = f"Error: {e}"
            messages.append(call.result_message(result))
            if not guard.status()["alive"]:
                return "terminated"


def _flaky() -> str:
    raise RuntimeError("upstream 503")


@pytest.fixture
def guard():
    with Guard(":memory:") as g:
        g.create_agent("bot", POLICY)
        yield g


def test_seed_loop_runs_unchanged(guard) -> None:
    agent = guard.agent("bot")
    model = ScriptedModel(
        [
            [("search", {"q": "invoices"}), ("delete_everything", {})],
            [("flaky", {})],
            "All invoices are filed.",
        ]
    )
    messages = [{"role": "user", "content": "file the invoices"}]
    answer = seed_run(
        model, agent, {"search": lambda q: f"3 results for {q}", "flaky": _flaky}, messages
    )
    assert answer == "All invoices are filed."
    status = agent.status()
    assert status["spent"] == 3
    assert status["scar_score"] == 3 + 1  # unlisted tool (moderate) + failure (minor)
    tool_results = [m for m in messages if m.get("role") == "tool"]
    assert tool_results[0]["content"] == "3 results for invoices"
    assert tool_results[1]["content"].startswith("Denied by the policy guard:")


def test_seed_loop_stops_when_terminated(guard) -> None:
    agent = guard.agent("bot")
    guard.terminate("bot", "operator stop", "alice")
    assert seed_run(ScriptedModel(["hi"]), agent, {}, []) == (
        "stopped: {'code': 'terminated', 'reason': 'operator stop'}"
    )


def test_run_end_to_end_with_approval(guard) -> None:
    agent = guard.agent("bot")
    model = ScriptedModel(
        [
            [("pay", {"invoice": "INV-1", "amount": 4})],
            [("rm", {"path": "/"})],
            "done",
        ]
    )

    def approver() -> None:
        while not guard.pending("bot"):
            pass
        guard.approve("bot", "act-2", "alice")

    thread = threading.Thread(target=approver)
    thread.start()
    messages = [{"role": "system", "content": SYSTEM_PROMPT}]
    result = run(
        model,
        agent,
        {"pay": lambda invoice, amount: "paid"},
        messages,
        costs={"pay": lambda args: args["amount"]},
        poll=0.01,
    )
    thread.join()
    assert result.outcome == "done"
    assert result.calls == [("pay", "act-2", "allowed"), ("rm", "act-4", "denied")]
    assert agent.status()["spent"] == 3 + 4
    denial = messages[-2]
    assert denial["is_error"] is True
    assert denial["content"] == denial_message({"code": "tool_not_allowed", "tool": "rm"})
    assert denial["content"] == (
        "Denied by the policy guard: tool 'rm' is not allowed. Nothing was done. "
        "Do not retry; choose another approach or ask a human."
    )


def test_run_treats_rejection_and_timeout_as_denials(guard) -> None:
    agent = guard.agent("bot")
    model = ScriptedModel([[("pay", {"amount": 1})], [("pay", {"amount": 2})], "ok"])

    def rejecter() -> None:
        while not guard.pending("bot"):
            pass
        guard.reject("bot", "act-2", "alice", "no")

    thread = threading.Thread(target=rejecter)
    thread.start()
    result = run(model, agent, {"pay": lambda amount: "paid"}, [], approval_timeout=0.2, poll=0.01)
    thread.join()
    assert [c[2] for c in result.calls] == ["denied", "denied"]
    assert "rejected by alice: no" in model.seen[1][-1]["content"]
    assert "no approval within 0.2s" in model.seen[2][-1]["content"]


def test_runaway_model_is_stopped_by_llm_turn(guard) -> None:
    agent = guard.agent("bot")
    model = ScriptedModel([[("search", {"q": str(i)})] for i in range(50)])
    result = run(model, agent, {"search": lambda q: q}, [], max_turns=100)
    assert result.outcome == "denied_turn"
    assert "reached its limit of 10 calls" in result.text
    assert result.turns == 10


def test_run_stops_on_termination_mid_run(guard) -> None:
    agent = guard.agent("bot")

    def harmful_search(q: str) -> str:
        guard.terminate("bot", "monitor saw exfiltration", "monitor")
        return "ok"

    model = ScriptedModel([[("search", {"q": "x"})], "never reached"])
    result = run(model, agent, {"search": harmful_search}, [])
    assert result.outcome == "terminated"
    assert result.text == "monitor saw exfiltration"


def test_guard_unreachable_runs_nothing() -> None:
    class DeadGuard:
        agent_id = "bot"

        def request(self, tool, input=None, cost=None):
            raise GuardError(503, "unavailable", "connection refused")

    result = run(ScriptedModel(["hi"]), DeadGuard(), {}, [])  # type: ignore[arg-type]
    assert result.outcome == "guard_unreachable"
    assert GUARD_UNREACHABLE in result.text


def test_model_errors_are_reported_as_failures(guard) -> None:
    agent = guard.agent("bot")

    def boom(messages):
        raise ConnectionError("provider down")

    with pytest.raises(ConnectionError):
        run(ScriptedModel([boom]), agent, {}, [])
    status = agent.status()
    assert status["scars"][0]["reason"] == "action failed: ConnectionError: provider down"


def test_allowed_tool_without_implementation_fails_cleanly(guard) -> None:
    agent = guard.agent("bot")
    result = run(ScriptedModel([[("search", {"q": 1})], "ok"]), agent, {}, [])
    assert result.calls == [("search", "act-2", "failed")]
    assert agent.status()["scars"][0]["reason"].startswith("action failed: LookupError")
