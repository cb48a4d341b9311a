"""guardkit.plugins.crewai against the real package, driven by a scripted CrewAI LLM (no network).

Allowed calls run once and are reported, denied calls never run and the model reads the denial,
approvals come from another thread, termination and the ``llm_turn`` cap end the run, parallel
calls are each requested once, a tool added after ``guard`` is guarded; ``kickoff``,
``akickoff`` and ``Agent.kickoff`` alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

if not os.environ.get("GUARDKIT_TEST_CREWAI"):  # the crewai venv sets it: there, never skip
    pytest.importorskip("crewai", reason="crewai runs in its own venv: make test-crewai")

from crewai import Agent, Crew, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool, tool
from guardkit.plugins.crewai import guard

import guardkit
from guardkit import Guard, TurnDenied

pytestmark = pytest.mark.crewai

RAN: list[str] = []


@tool("pay")
def pay(amount: int) -> str:
    """Pay an invoice."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool("wipe")
def wipe(path: str) -> str:
    """Delete everything under a path."""
    RAN.append(f"wipe {path}")
    return f"wiped {path}"


@tool("explode")
def explode(x: int) -> str:
    """Always fails."""
    RAN.append(f"explode {x}")
    raise ValueError("kaboom")


@tool("whoami")
def whoami(tag: str) -> str:
    """Say which action this call runs under."""
    RAN.append(f"whoami {tag}")
    return f"{tag} {guardkit.current_action_id()}"


class Lookup(BaseTool):
    name: str = "lookup"
    description: str = "Look a customer up."

    def _run(self, who: str) -> str:
        RAN.append(f"lookup {who}")
        return f"{who} is a customer"


@tool("fetch")
async def fetch(url: str) -> str:
    """Fetch a page."""
    await asyncio.sleep(0)
    RAN.append(f"fetch {url}")
    return f"page {url}"


Step = list[tuple[str, dict[str, Any]]] | str


class ReAct(BaseLLM):
    """A model without native function calling: CrewAI's ReAct text format."""

    steps: list[str] = []  # noqa: RUF012 - a pydantic field
    seen: list[str] = []  # noqa: RUF012

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(json.dumps(messages, default=str))
        return self.steps.pop(0) if self.steps else "Thought: done\nFinal Answer: ok"


class Scripted(BaseLLM):
    """Answers each call from a script: a list of tool calls (native function calling) or text.
    Keeps the messages of every call in ``seen``."""

    steps: list[Any] = []  # noqa: RUF012 - a pydantic field
    seen: list[Any] = []  # noqa: RUF012
    loop: Step | None = None

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages) if not isinstance(messages, str) else messages)
        if self.steps:
            step = self.steps.pop(0)
        else:
            step = self.loop if self.loop is not None else "All done."
        if isinstance(step, str):
            return step
        return [
            {
                "id": f"call-{len(self.seen)}-{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args_)},
            }
            for i, (name, args_) in enumerate(step)
        ]

    async def acall(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        return self.call(messages, *args, **kwargs)

    def supports_function_calling(self) -> bool:
        return True

    def tool_results(self, turn: int) -> list[str]:
        """What the tools answered, as the model read it at call ``turn`` (0-based)."""
        return [m["content"] for m in self.seen[turn] if m.get("role") == "tool"]


@pytest.fixture(autouse=True)
def _clean_runs() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


@pytest.fixture
def g() -> Iterator[Guard]:
    with Guard(":memory:") as guard_:
        yield guard_


def policy(**tools: dict[str, Any]) -> dict[str, Any]:
    return {"budget": 100, "tools": {"llm_turn": {"cost": 0}, **tools}}


def requested(g: Guard, agent_id: str) -> list[tuple[str, Any]]:
    records = g.log(agent_id)["records"]
    return [
        (r["payload"]["tool"], r["payload"]["input"])
        for r in records
        if r["kind"] == "action_requested"
    ]


def outcomes(g: Guard, agent_id: str) -> list[str]:
    return [r["payload"]["status"] for r in g.log(agent_id)["records"] if r["kind"] == "outcome"]


def crew(llm: Scripted, *tools: Any, **agent_options: Any) -> Crew:
    clerk = Agent(
        role="clerk",
        goal="do the work",
        backstory="a clerk",
        llm=llm,
        tools=list(tools),
        **agent_options,
    )
    task = Task(description="Do the work", expected_output="a sentence", agent=clerk)
    return Crew(agents=[clerk], tasks=[task])


def test_an_allowed_call_runs_once_and_is_reported(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 5}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 5})]])
    result = guard(crew(llm, pay, wipe), g.agent("bot")).kickoff()
    assert result.raw == "All done."
    assert RAN == ["pay 5"]
    assert requested(g, "bot") == [("llm_turn", {}), ("pay", {"amount": 5}), ("llm_turn", {})]
    assert outcomes(g, "bot") == ["success"] * 3
    assert g.status("bot")["spent"] == 5
    assert llm.tool_results(1) == ["paid 5"]


def test_a_denied_call_never_runs_and_the_model_reads_the_denial(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    llm = Scripted(model="scripted", steps=[[("wipe", {"path": "/"})]])
    guard(crew(llm, pay, wipe), g.agent("bot")).kickoff()
    assert RAN == []
    [answer] = llm.tool_results(1)
    assert answer.startswith("Denied by the policy guard")
    assert "Do not retry" in answer
    assert "blocked by hook" not in answer
    assert g.status("bot")["scars"]


def test_parallel_calls_are_each_requested_once(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 2}))
    step = [("pay", {"amount": 1}), ("pay", {"amount": 2}), ("wipe", {"path": "/"})]
    llm = Scripted(model="scripted", steps=[step])
    guard(crew(llm, pay, wipe), g.agent("bot")).kickoff()
    assert sorted(RAN) == ["pay 1", "pay 2"]
    tools = [t for t, _ in requested(g, "bot")]
    assert tools.count("pay") == 2
    assert tools.count("wipe") == 1
    assert g.status("bot")["spent"] == 4
    answers = llm.tool_results(1)
    assert {"paid 1", "paid 2"} <= set(answers)
    assert sum(a.startswith("Denied by the policy guard") for a in answers) == 1


def test_a_failing_tool_is_reported_failure_and_the_run_goes_on(g: Guard) -> None:
    g.create_agent("bot", policy(explode={"cost": 0}))
    llm = Scripted(model="scripted", steps=[[("explode", {"x": 1})]])
    assert guard(crew(llm, explode), g.agent("bot")).kickoff().raw == "All done."
    assert RAN == ["explode 1"]
    assert outcomes(g, "bot") == ["success", "failure", "success"]
    failure = next(
        r
        for r in g.log("bot")["records"]
        if r["kind"] == "outcome" and r["payload"]["status"] == "failure"
    )
    assert "kaboom" in json.dumps(failure["payload"])


def test_approval_from_another_thread_lets_the_call_run(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1, "requires_approval": True}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 9})]])
    agents_crew = guard(crew(llm, pay), g.agent("bot"), poll=0.05, approval_timeout=10)

    def approve() -> None:
        for _ in range(500):
            pending = g.pending("bot")
            if pending:
                g.approve("bot", pending[0]["action"]["action_id"], "alice")
                return
            time.sleep(0.02)

    helper = threading.Thread(target=approve)
    helper.start()
    agents_crew.kickoff()
    helper.join()
    assert RAN == ["pay 9"]
    assert llm.tool_results(1) == ["paid 9"]


def test_a_rejection_reaches_the_model_as_a_denial(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1, "requires_approval": True}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 9})]])
    agents_crew = guard(crew(llm, pay), g.agent("bot"), poll=0.05, approval_timeout=10)

    def reject() -> None:
        for _ in range(500):
            pending = g.pending("bot")
            if pending:
                g.reject("bot", pending[0]["action"]["action_id"], "alice", "not this one")
                return
            time.sleep(0.02)

    helper = threading.Thread(target=reject)
    helper.start()
    agents_crew.kickoff()
    helper.join()
    assert RAN == []
    [answer] = llm.tool_results(1)
    assert answer.startswith("Denied by the policy guard")
    assert "not this one" in answer


def test_termination_stops_the_run_at_the_next_model_turn(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}, stop_me={"cost": 0}))

    @tool("stop_me")
    def stop_me(why: str) -> str:
        """Get terminated."""
        g.terminate("bot", why, "operator")
        return "stopping"

    llm = Scripted(
        model="scripted", steps=[[("stop_me", {"why": "harm"})], [("pay", {"amount": 1})]]
    )
    with pytest.raises(TurnDenied) as stopped:
        guard(crew(llm, stop_me, pay), g.agent("bot")).kickoff()
    assert stopped.value.code == "terminated"
    assert RAN == []
    assert len(llm.seen) == 1  # the model was not called again


def test_the_llm_turn_cap_ends_a_runaway_agent(g: Guard) -> None:
    g.create_agent(
        "loopy",
        {"budget": 100, "tools": {"llm_turn": {"cost": 1, "max_calls": 3}, "pay": {"cost": 0}}},
    )
    llm = Scripted(model="scripted", loop=[("pay", {"amount": 1})])
    with pytest.raises(TurnDenied) as stopped:
        guard(crew(llm, pay, max_iter=50), g.agent("loopy")).kickoff()
    assert stopped.value.code == "tool_call_limit"
    assert len(llm.seen) == 3
    assert RAN == ["pay 1"] * 3


def test_a_tool_added_after_guard_is_guarded(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 3}), ("wipe", {"path": "/"})]])
    agents_crew = guard(crew(llm), g.agent("bot"))
    agents_crew.agents[0].tools.extend([pay, wipe])  # after guard, before the run
    agents_crew.kickoff()
    assert RAN == ["pay 3"]
    assert sorted(t for t, _ in requested(g, "bot")) == ["llm_turn", "llm_turn", "pay", "wipe"]
    assert any(a.startswith("Denied by the policy guard") for a in llm.tool_results(1))


def test_akickoff_guards_sync_and_async_tools(g: Guard) -> None:
    g.create_agent("bot", policy(fetch={"cost": 1}))
    step = [("fetch", {"url": "https://example.org"}), ("wipe", {"path": "/"})]
    llm = Scripted(model="scripted", steps=[step])
    result = asyncio.run(guard(crew(llm, fetch, wipe), g.agent("bot")).akickoff())
    assert result.raw == "All done."
    assert RAN == ["fetch https://example.org"]
    assert sorted(outcomes(g, "bot")) == ["success"] * 3
    assert any(a.startswith("Denied by the policy guard") for a in llm.tool_results(1))


def test_agent_kickoff_is_guarded_too(g: Guard) -> None:
    g.create_agent("solo", policy(pay={"cost": 1}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 2}), ("wipe", {"path": "/"})]])
    solo = guard(
        Agent(role="clerk", goal="pay", backstory="b", llm=llm, tools=[pay, wipe]), g.agent("solo")
    )
    assert solo.kickoff("pay 2").raw == "All done."
    assert RAN == ["pay 2"]
    assert [t for t, _ in requested(g, "solo")].count("llm_turn") == 2


def test_only_guarded_agents_are_guarded_and_guarding_twice_changes_nothing(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    shared = Scripted(model="scripted", steps=[[("wipe", {"path": "/tmp"})], "ok", "ok"])
    free = crew(shared, wipe)
    guarded = guard(guard(crew(shared, pay), g.agent("bot")), g.agent("bot"))
    assert free.kickoff().raw == "ok"  # the shared LLM, and the hooks, leave it alone
    assert RAN == ["wipe /tmp"]
    assert requested(g, "bot") == []
    assert guarded.kickoff().raw == "ok"
    assert requested(g, "bot") == [("llm_turn", {})]


def test_guard_takes_a_crew_or_an_agent() -> None:
    with pytest.raises(TypeError, match="takes a crewai Crew or Agent"):
        guard(object())  # type: ignore[type-var]


def test_the_tool_runs_under_its_action_id(g: Guard) -> None:
    g.create_agent("bot", policy(whoami={"cost": 0}))
    llm = Scripted(model="scripted", steps=[[("whoami", {"tag": "t"})]])
    guard(crew(llm, whoami), g.agent("bot")).kickoff()
    [answer] = llm.tool_results(1)
    action = next(
        r["payload"]["action_id"]
        for r in g.log("bot")["records"]
        if r["kind"] == "action_requested" and r["payload"]["tool"] == "whoami"
    )
    assert answer == f"t {action}"


def test_a_tool_class_is_guarded_added_late_too(g: Guard) -> None:
    g.create_agent("bot", policy(lookup={"cost": 1}))
    llm = Scripted(
        model="scripted", steps=[[("lookup", {"who": "ann"})], [("wipe", {"path": "/"})]]
    )
    agents_crew = guard(crew(llm, Lookup()), g.agent("bot"))
    agents_crew.agents[0].tools.append(wipe)
    agents_crew.kickoff()
    assert RAN == ["lookup ann"]
    assert llm.tool_results(1) == ["ann is a customer"]
    assert llm.tool_results(2)[-1].startswith("Denied by the policy guard")
    assert outcomes(g, "bot") == ["success"] * 4


def test_declared_checks_and_the_reserved_argument_are_refused(g: Guard, tmp_path: Any) -> None:
    rule = {"cost": 0, "paths": {"path": {"allow": [str(tmp_path)]}}}
    g.create_agent("bot", policy(wipe=rule))
    steps = [[("wipe", {"path": "/etc"})], [("wipe", {"path": str(tmp_path), "_guardkit": {}})]]
    llm = Scripted(model="scripted", steps=steps)
    guard(crew(llm, wipe), g.agent("bot")).kickoff()
    assert RAN == []
    assert llm.tool_results(1)[0].startswith("Denied by the policy guard")
    assert llm.tool_results(2)[-1].startswith("Denied by the policy guard")
    codes = [
        r["payload"]["reason"]["code"]
        for r in g.log("bot")["records"]
        if r["kind"] == "action_denied"
    ]
    assert codes == ["path_denied", "reserved_argument"]


def test_a_call_crewai_answers_from_its_cache_is_not_run_again(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 5})], [("pay", {"amount": 5})]])
    guard(crew(llm, pay, cache=True), g.agent("bot")).kickoff()
    assert RAN == ["pay 5"]
    assert llm.tool_results(2)[-1] == "paid 5"
    assert outcomes(g, "bot") == ["success", "success", "success", "failure", "success"]
    assert g.status("bot")["scars"] == []  # not the agent's doing


def test_react_text_format_denials_and_retries(g: Guard) -> None:
    g.create_agent("bot", policy(explode={"cost": 1}))
    steps = [
        'Thought: pay\nAction: pay\nAction Input: {"amount": 5}',
        'Thought: boom\nAction: explode\nAction Input: {"x": 1}',
    ]
    llm = ReAct(model="scripted", steps=steps)
    guard(crew(llm, pay, explode), g.agent("bot")).kickoff()
    assert "pay 5" not in RAN
    assert "Denied by the policy guard: tool 'pay' is not allowed" in llm.seen[1]
    # CrewAI runs a failing tool again on its own: each run is an action, reported failure.
    runs = RAN.count("explode 1")
    assert runs >= 2
    assert [t for t, _ in requested(g, "bot")].count("explode") == runs
    assert outcomes(g, "bot").count("failure") == runs


def test_without_an_agent_guard_the_current_agent_is_asked(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 1})]])
    agents_crew = guard(crew(llm, pay))
    with guardkit.use_agent(g.agent("bot")):
        agents_crew.kickoff()
    assert RAN == ["pay 1"]
    assert [t for t, _ in requested(g, "bot")] == ["llm_turn", "pay", "llm_turn"]


def test_a_guardkit_tool_function_is_handed_the_call_and_asks_once(g: Guard) -> None:
    g.create_agent("bot", policy(refund={"cost": 3}))

    @tool("refund")
    @guardkit.tool
    def refund(amount: int) -> str:
        """Refund a customer."""
        RAN.append(f"refund {amount}")
        return f"refunded {amount}"

    @tool("void")
    @guardkit.tool
    def void(order: str) -> str:
        """Void an order."""
        RAN.append(f"void {order}")
        return "voided"

    llm = Scripted(model="scripted", steps=[[("refund", {"amount": 3}), ("void", {"order": "o1"})]])
    guard(crew(llm, refund, void), g.agent("bot")).kickoff()
    assert RAN == ["refund 3"]
    assert [t for t, _ in requested(g, "bot")].count("refund") == 1
    assert [t for t, _ in requested(g, "bot")].count("void") == 1
    answers = llm.tool_results(1)
    assert "refunded 3" in answers
    assert any(a.startswith("Denied by the policy guard") for a in answers)
    assert g.status("bot")["spent"] == 3


def test_approval_from_another_thread_in_akickoff(g: Guard) -> None:
    g.create_agent("bot", policy(fetch={"cost": 1, "requires_approval": True}))
    llm = Scripted(model="scripted", steps=[[("fetch", {"url": "u"})]])
    agents_crew = guard(crew(llm, fetch), g.agent("bot"), poll=0.05, approval_timeout=10)

    def approve() -> None:
        for _ in range(500):
            pending = g.pending("bot")
            if pending:
                g.approve("bot", pending[0]["action"]["action_id"], "alice")
                return
            time.sleep(0.02)

    helper = threading.Thread(target=approve)
    helper.start()
    asyncio.run(agents_crew.akickoff())
    helper.join()
    assert RAN == ["fetch u"]
    assert llm.tool_results(1) == ["page u"]


class Broken(Scripted):
    def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(messages)
        raise ConnectionError("provider down")


def test_a_model_call_that_raises_is_reported_failure(g: Guard) -> None:
    g.create_agent("bot", policy())
    llm = Broken(model="broken")
    with pytest.raises(ConnectionError):
        guard(crew(llm, max_retry_limit=0), g.agent("bot")).kickoff()
    assert [t for t, _ in requested(g, "bot")] == ["llm_turn"] * len(llm.seen)
    assert outcomes(g, "bot") == ["failure"] * len(llm.seen)


def test_the_guard_hook_goes_last_and_sees_what_an_earlier_hook_changed(g: Guard) -> None:
    from crewai.hooks import register_before_tool_call_hook, unregister_before_tool_call_hook

    g.create_agent("bot", policy(pay={"cost": 1}))

    def halve(context: Any) -> None:
        if context.tool_name == "pay":
            context.tool_input["amount"] = context.tool_input["amount"] // 2

    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 8})]])
    agents_crew = guard(crew(llm, pay), g.agent("bot"))
    register_before_tool_call_hook(halve)
    try:
        guard(agents_crew, g.agent("bot")).kickoff()  # guarding again puts the guard's hook last
    finally:
        unregister_before_tool_call_hook(halve)
    assert RAN == ["pay 4"]
    assert ("pay", {"amount": 4}) in requested(g, "bot")


def test_a_guard_that_fails_while_deciding_refuses_the_call(g: Guard) -> None:
    # CrewAI runs the tool when a hook raises: the guard refuses the call instead
    g.create_agent("bot", policy(pay={"cost": 1}))
    llm = Scripted(model="scripted", steps=[[("pay", {"amount": 1})]])
    guard(crew(llm, pay), g.agent("bot"), costs={"pay": lambda args: args["missing"]}).kickoff()
    assert RAN == []
    [answer] = llm.tool_results(1)
    assert answer.startswith("Error: the policy guard could not decide on this call (KeyError")


def test_kickoff_for_each_runs_guarded_copies(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    steps: list[Step] = [[("wipe", {"path": "/a"})], "done", [("pay", {"amount": 2})], "done"]
    llm = Scripted(model="scripted", steps=steps)
    guard(crew(llm, pay, wipe), g.agent("bot")).kickoff_for_each(inputs=[{"n": 1}, {"n": 2}])
    assert RAN == ["pay 2"]
    tools = [t for t, _ in requested(g, "bot")]
    assert tools == ["llm_turn", "wipe", "llm_turn", "llm_turn", "pay", "llm_turn"]
