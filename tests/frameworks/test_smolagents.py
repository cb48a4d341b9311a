"""guardkit.plugins.smolagents against the real package, driven by a scripted smolagents ``Model``.

ToolCallingAgent (the model names a tool) and CodeAgent (the model's Python calls tools inside
smolagents' executor): allowed calls run once and are reported, denied calls never run and the
model reads the denial, approvals come from another thread, termination and the ``llm_turn`` cap
end the run, parallel calls are each requested once, a tool added after ``guard`` is guarded.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("smolagents")

from guardkit.plugins.smolagents import guard
from smolagents import CodeAgent, Model, Tool, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)

from guardkit import Guard, TurnDenied

RAN: list[str] = []


@tool
def pay(amount: int) -> str:
    """Pay an invoice.

    Args:
        amount: How much to pay.
    """
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


@tool
def wipe(path: str) -> str:
    """Delete everything under a path.

    Args:
        path: The folder to wipe.
    """
    RAN.append(f"wipe {path}")
    return f"wiped {path}"


class Lookup(Tool):
    name = "lookup"
    description = "Look a customer up."
    inputs = {"who": {"type": "string", "description": "The customer."}}  # noqa: RUF012
    output_type = "string"

    def forward(self, who: str) -> str:
        RAN.append(f"lookup {who}")
        return f"{who} is a customer"


Step = list[tuple[str, dict[str, Any]]] | str


class Scripted(Model):
    """Answers each turn from a script: a list of tool calls, or CodeAgent code."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(model_id="scripted")
        self.steps = list(steps)
        self.seen: list[str] = []

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        self.seen.append(str(messages[-1]))
        step = self.steps.pop(0) if self.steps else [("final_answer", {"answer": "done"})]
        if isinstance(step, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=step)
        calls = [
            ChatMessageToolCall(
                id=f"call-{i}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=args),
            )
            for i, (name, args) in enumerate(step)
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls)


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


def tool_calling(steps: list[Step], *tools: Any, **kwargs: Any) -> ToolCallingAgent:
    return ToolCallingAgent(tools=list(tools), model=Scripted(steps), **kwargs)


def test_an_allowed_call_runs_once_and_is_reported(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 5}))
    agent = guard(tool_calling([[("pay", {"amount": 5})]], pay, wipe), g.agent("bot"))
    assert agent.run("pay the invoice") == "done"
    assert RAN == ["pay 5"]
    assert [t for t, _ in requested(g, "bot")] == ["llm_turn", "pay", "llm_turn"]
    assert ("pay", {"amount": 5}) in requested(g, "bot")
    assert outcomes(g, "bot") == ["success"] * 3
    assert g.status("bot")["spent"] == 5


def test_a_denied_call_never_runs_and_the_model_reads_the_denial(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    model = Scripted([[("wipe", {"path": "/"})]])
    agent = guard(ToolCallingAgent(tools=[pay, wipe], model=model), g.agent("bot"))
    agent.run("clean up")
    assert RAN == []
    assert "Do not retry" in model.seen[1]
    assert "Please try again" not in model.seen[1]
    assert g.status("bot")["scars"]


def test_code_agent_tool_calls_from_generated_code_are_guarded_one_by_one(g: Guard) -> None:
    g.create_agent("coder", policy(pay={"cost": 2}, lookup={"cost": 0}))
    code = (
        "Thought: pay, look up, then try to wipe.\n<code>\n"
        "a = pay(amount=3)\nb = lookup('ann')\nc = wipe(path='/srv')\n"
        "final_answer(a + ' | ' + b + ' | ' + c)\n</code>"
    )
    agent = guard(CodeAgent(tools=[pay, wipe, Lookup()], model=Scripted([code])), g.agent("coder"))
    answer = agent.run("do it")
    assert RAN == ["pay 3", "lookup ann"]
    assert answer.startswith("paid 3 | ann is a customer | ")
    assert "Do not retry" in answer
    tools = [t for t, _ in requested(g, "coder")]
    assert tools == ["llm_turn", "pay", "lookup", "wipe"]
    assert ("lookup", {"who": "ann"}) in requested(g, "coder")  # positional, bound to its name


def test_approval_from_another_thread_lets_the_call_run(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1, "requires_approval": True}))
    scripted = tool_calling([[("pay", {"amount": 9})]], pay)
    agent = guard(scripted, g.agent("bot"), poll=0.05, approval_timeout=10)

    def approve() -> None:
        for _ in range(200):
            pending = g.pending("bot")
            if pending:
                g.approve("bot", pending[0]["action"]["action_id"], "alice")
                return
            time.sleep(0.02)

    helper = threading.Thread(target=approve)
    helper.start()
    agent.run("pay")
    helper.join()
    assert RAN == ["pay 9"]


def test_termination_stops_the_run_at_the_next_model_turn(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}, stop_me={"cost": 0}))

    @tool
    def stop_me(why: str) -> str:
        """Get terminated.

        Args:
            why: The reason.
        """
        g.terminate("bot", why, "operator")
        return "stopping"

    steps: list[Step] = [[("stop_me", {"why": "harm"})], [("pay", {"amount": 1})]]
    agent = guard(tool_calling(steps, pay, stop_me), g.agent("bot"))
    with pytest.raises(TurnDenied):
        agent.run("go")
    assert RAN == []


def test_the_llm_turn_cap_ends_a_runaway_agent(g: Guard) -> None:
    g.create_agent("bot", policy(llm_turn={"cost": 0, "max_calls": 3}, pay={"cost": 0}))
    forever: list[Step] = [[("pay", {"amount": 1})]] * 50
    agent = guard(tool_calling(forever, pay, max_steps=20), g.agent("bot"))
    assert agent.max_steps == 3
    with pytest.raises(TurnDenied):
        agent.run("loop")
    assert len(RAN) <= 3
    turns = [t for t, _ in requested(g, "bot") if t == "llm_turn"]
    assert len(turns) == 4  # three allowed, the fourth refused


def test_parallel_tool_calls_are_each_requested_once(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    step: Step = [("pay", {"amount": n}) for n in (1, 2, 3)]
    agent = guard(tool_calling([step], pay), g.agent("bot"))
    agent.run("pay three")
    assert sorted(RAN) == ["pay 1", "pay 2", "pay 3"]
    pays = [i for t, i in requested(g, "bot") if t == "pay"]
    assert sorted(p["amount"] for p in pays) == [1, 2, 3]
    assert g.status("bot")["spent"] == 3


def test_a_tool_added_after_guard_is_still_guarded(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    agent = guard(tool_calling([[("wipe", {"path": "/"})]], pay), g.agent("bot"))
    agent.tools["wipe"] = wipe
    agent.run("wipe")
    assert RAN == []
    assert ("wipe", {"path": "/"}) in requested(g, "bot")


class Greet(Tool):
    name = "greet"
    description = "Greet someone."
    inputs = {"who": {"type": "string", "description": "Who."}}  # noqa: RUF012
    output_type = "string"

    def forward(self, who: str) -> str:
        return f"hello {who}"


def test_guarding_twice_asks_once_and_the_tool_source_still_validates(g: Guard) -> None:
    g.create_agent("bot", policy(greet={"cost": 1}))
    greet = Greet()
    before = greet.to_dict()  # smolagents reads and validates the tool's source here
    agent = tool_calling([[("greet", {"who": "bo"})]], greet)
    guard(guard(agent, g.agent("bot")), g.agent("bot"))
    assert greet.to_dict() == before
    agent.run("greet")
    assert [t for t, _ in requested(g, "bot")].count("greet") == 1


def test_a_tool_shared_by_two_agents_answers_to_the_latest_guard(g: Guard) -> None:
    g.create_agent("one", policy(pay={"cost": 1}))
    g.create_agent("two", policy(pay={"cost": 1}))
    guard(tool_calling([], pay), g.agent("one"))
    second = guard(tool_calling([[("pay", {"amount": 2})]], pay), g.agent("two"))
    second.run("pay")
    assert ("pay", {"amount": 2}) in requested(g, "two")
    assert [t for t, _ in requested(g, "one")] == []


def test_managed_agents_are_guarded_with_their_tools_and_turns(g: Guard) -> None:
    g.create_agent("team", policy(pay={"cost": 1}))
    helper = tool_calling([[("wipe", {"path": "/"})]], wipe, name="helper", description="helps")
    top = tool_calling([[("helper", {"task": "wipe it"})]], pay, managed_agents=[helper])
    guard(top, g.agent("team"))
    top.run("delegate")
    assert RAN == []
    tools = [t for t, _ in requested(g, "team")]
    assert "wipe" in tools
    assert tools.count("llm_turn") >= 3  # the helper's turns are gated too


def test_a_tool_that_raises_is_reported_failure(g: Guard) -> None:
    g.create_agent("bot", policy(boom={"cost": 0}))

    @tool
    def boom(x: int) -> str:
        """Fail.

        Args:
            x: Anything.
        """
        raise RuntimeError("disk full")

    agent = guard(tool_calling([[("boom", {"x": 1})]], boom), g.agent("bot"))
    agent.run("fail")
    assert "failure" in outcomes(g, "bot")
