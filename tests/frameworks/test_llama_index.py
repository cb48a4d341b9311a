"""guardkit.plugins.llama_index against the real package, driven by LlamaIndex's own
``MockFunctionCallingLLM`` with a scripted ``response_generator``.

``FunctionAgent`` alone and in an ``AgentWorkflow``: allowed calls run once and are reported,
denied calls never run and the model reads the denial, approvals come from another thread,
termination and the ``llm_turn`` cap end the run, parallel calls are each requested once, a tool
added after ``guard`` is guarded; sync and async tools, streaming and not.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from guardkit.plugins.llama_index import guard, guard_tools
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import AsyncBaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.workflow import Context

import guardkit
from guardkit import Guard, TurnDenied

#: LlamaIndex's workflow runtime lists an agent's steps with ``inspect.getmembers``, which reads
#: pydantic's deprecated ``__fields__`` (and more) on every agent, guarded or not.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

RAN: list[str] = []


def pay(amount: int) -> str:
    """Pay an invoice."""
    RAN.append(f"pay {amount}")
    return f"paid {amount}"


async def wipe(path: str) -> str:
    """Delete everything under a path."""
    RAN.append(f"wipe {path}")
    return f"wiped {path}"


Step = list[tuple[str, dict[str, Any]]] | str


class Script:
    """Answers each model call from a script: tool calls, or a final text answer."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        step = self.steps.pop(0) if self.steps else "done"
        if isinstance(step, str):
            return ChatMessage(role="assistant", content=step)
        blocks = [
            ToolCallBlock(tool_call_id=f"call-{i}", tool_name=name, tool_kwargs=args)
            for i, (name, args) in enumerate(step)
        ]
        return ChatMessage(role="assistant", blocks=blocks)

    def tool_results(self, turn: int) -> list[str]:
        """What the model read from tools at its ``turn``-th call."""
        return [str(m.content) for m in self.seen[turn] if m.role == "tool"]


def agent_with(script: Script, *tools: Any, **kwargs: Any) -> FunctionAgent:
    return FunctionAgent(
        tools=list(tools), llm=MockFunctionCallingLLM(response_generator=script), **kwargs
    )


def run(target: Any, **kwargs: Any) -> Any:
    async def main() -> Any:
        return await target.run(user_msg="go", **kwargs)

    return asyncio.run(main())


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


@pytest.mark.parametrize("streaming", [True, False])
def test_an_allowed_call_runs_once_and_is_reported(g: Guard, streaming: bool) -> None:
    g.create_agent("bot", policy(pay={"cost": 5}))
    script = Script([[("pay", {"amount": 5})]])
    agent = guard(agent_with(script, pay, streaming=streaming), g.agent("bot"))
    assert str(run(agent)) == "done"
    assert RAN == ["pay 5"]
    assert requested(g, "bot") == [("llm_turn", {}), ("pay", {"amount": 5}), ("llm_turn", {})]
    assert outcomes(g, "bot") == ["success"] * 3
    assert g.status("bot")["spent"] == 5
    assert script.tool_results(1) == ["paid 5"]


def test_a_denied_call_never_runs_and_the_model_reads_the_denial(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    script = Script([[("wipe", {"path": "/"})]])
    run(guard(agent_with(script, pay, wipe), g.agent("bot")))
    assert RAN == []
    (seen,) = script.tool_results(1)
    assert "Do not retry" in seen
    assert "wipe" in seen
    assert g.status("bot")["scars"]


def test_a_denied_return_direct_tool_does_not_end_the_run_with_the_denial(g: Guard) -> None:
    g.create_agent("bot", policy())
    script = Script([[("wipe", {"path": "/"})], "I could not wipe it"])
    direct = FunctionTool.from_defaults(async_fn=wipe, return_direct=True)
    assert str(run(guard(agent_with(script, direct), g.agent("bot")))) == "I could not wipe it"
    assert RAN == []


def test_approval_from_another_thread_lets_the_call_run(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1, "requires_approval": True}))
    agent = guard(
        agent_with(Script([[("pay", {"amount": 9})]]), pay),
        g.agent("bot"),
        poll=0.05,
        approval_timeout=10,
    )

    def approve() -> None:
        for _ in range(200):
            pending = g.pending("bot")
            if pending:
                g.approve("bot", pending[0]["action"]["action_id"], "alice")
                return
            time.sleep(0.02)

    helper = threading.Thread(target=approve)
    helper.start()
    run(agent)
    helper.join()
    assert RAN == ["pay 9"]


def test_a_rejected_approval_is_the_tools_result(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1, "requires_approval": True}))
    script = Script([[("pay", {"amount": 9})]])
    agent = guard(agent_with(script, pay), g.agent("bot"), poll=0.05, approval_timeout=10)

    def reject() -> None:
        for _ in range(200):
            pending = g.pending("bot")
            if pending:
                g.reject("bot", pending[0]["action"]["action_id"], "alice", "too much")
                return
            time.sleep(0.02)

    helper = threading.Thread(target=reject)
    helper.start()
    run(agent)
    helper.join()
    assert RAN == []
    assert "Do not retry" in script.tool_results(1)[0]


def test_termination_stops_the_run_at_the_next_model_turn(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}, stop_me={"cost": 0}))

    def stop_me(why: str) -> str:
        """Get terminated."""
        g.terminate("bot", why, "operator")
        return "stopping"

    script = Script([[("stop_me", {"why": "harm"})], [("pay", {"amount": 1})]])
    with pytest.raises(TurnDenied):
        run(guard(agent_with(script, pay, stop_me), g.agent("bot")))
    assert RAN == []
    assert len(script.seen) == 1


def test_the_llm_turn_cap_ends_a_runaway_agent(g: Guard) -> None:
    g.create_agent("bot", policy(llm_turn={"cost": 0, "max_calls": 3}, pay={"cost": 0}))
    forever: list[Step] = [[("pay", {"amount": 1})]] * 50
    script = Script(forever)
    with pytest.raises(TurnDenied):
        run(guard(agent_with(script, pay), g.agent("bot")), max_iterations=100)
    assert len(script.seen) == 3
    assert len(RAN) == 3
    turns = [t for t, _ in requested(g, "bot") if t == "llm_turn"]
    assert len(turns) == 4  # three allowed, the fourth refused


def test_parallel_tool_calls_are_each_requested_once(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}, wipe={"cost": 1}))
    step: Step = [("pay", {"amount": n}) for n in (1, 2, 3)] + [("wipe", {"path": "/tmp"})]
    run(guard(agent_with(Script([step]), pay, wipe), g.agent("bot")))
    assert sorted(RAN) == ["pay 1", "pay 2", "pay 3", "wipe /tmp"]
    calls = [i for t, i in requested(g, "bot") if t != "llm_turn"]
    assert sorted(map(str, calls)) == sorted(
        map(str, [{"amount": 1}, {"amount": 2}, {"amount": 3}, {"path": "/tmp"}])
    )
    assert g.status("bot")["spent"] == 4
    assert outcomes(g, "bot").count("success") == 4 + 2


def test_a_tool_added_after_guard_is_still_guarded(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    agent = guard(agent_with(Script([[("wipe", {"path": "/"})]]), pay), g.agent("bot"))
    assert agent.tools is not None
    agent.tools.append(FunctionTool.from_defaults(async_fn=wipe))
    run(agent)
    assert RAN == []
    assert ("wipe", {"path": "/"}) in requested(g, "bot")


def test_a_tool_that_raises_is_reported_failure_and_the_model_reads_the_error(g: Guard) -> None:
    g.create_agent("bot", policy(boom={"cost": 0}))

    def boom(x: int) -> str:
        """Fail."""
        raise RuntimeError("disk full")

    script = Script([[("boom", {"x": 1})]])
    run(guard(agent_with(script, boom), g.agent("bot")))
    assert "failure" in outcomes(g, "bot")
    assert script.tool_results(1) == ["disk full"]


def test_the_workflow_context_is_passed_on_and_not_recorded(g: Guard) -> None:
    g.create_agent("bot", policy(note={"cost": 0}))
    contexts: list[object] = []

    async def note(ctx: Context, text: str) -> str:
        """Note something in the run's state."""
        contexts.append(ctx)
        return f"noted {text}"

    note.__annotations__["ctx"] = Context  # as LlamaIndex looks for it (not a string annotation)

    run(guard(agent_with(Script([[("note", {"text": "hi"})]]), note), g.agent("bot")))
    assert len(contexts) == 1
    assert isinstance(contexts[0], Context)
    assert ("note", {"text": "hi"}) in requested(g, "bot")


def test_a_guardkit_tool_function_asks_the_guard_once(g: Guard) -> None:
    g.create_agent("bot", policy(search={"cost": 2}))

    @guardkit.tool
    def search(query: str) -> str:
        """Search."""
        RAN.append(f"search {query}")
        return f"found {query}"

    script = Script([[("search", {"query": "x"})]])
    run(guard(agent_with(script, search), g.agent("bot")))
    assert RAN == ["search x"]
    assert [t for t, _ in requested(g, "bot")].count("search") == 1
    assert g.status("bot")["spent"] == 2


class Echo(AsyncBaseTool):
    """A hand-written tool whose ``acall`` runs its own ``call`` (as many integrations do)."""

    @property
    def metadata(self) -> ToolMetadata:
        return ToolMetadata(name="echo", description="Echo the input.")

    def call(self, input: Any) -> ToolOutput:
        RAN.append(f"echo {input}")
        return ToolOutput(content=str(input), tool_name="echo", raw_input={"input": input})

    async def acall(self, input: Any) -> ToolOutput:
        return self.call(input)


def test_guard_tools_guards_calls_made_outside_an_agent(g: Guard) -> None:
    g.create_agent("bot", policy(echo={"cost": 1}, pay={"cost": 1}))
    echo, pay_tool = guard_tools([Echo(), pay], g.agent("bot"))
    assert echo.call("a").content == "a"
    assert asyncio.run(echo.acall(input="b")).content == "b"  # acall → call: one action
    assert pay_tool(amount=4).content == "paid 4"
    assert RAN == ["echo a", "echo b", "pay 4"]
    assert requested(g, "bot") == [
        ("echo", {"input": "a"}),
        ("echo", {"input": "b"}),
        ("pay", {"amount": 4}),
    ]
    denied = guard_tools([FunctionTool.from_defaults(async_fn=wipe)], g.agent("bot"))[0]
    out = asyncio.run(denied.acall(path="/"))
    assert out.is_error
    assert "Do not retry" in str(out.content)
    assert RAN == ["echo a", "echo b", "pay 4"]


def test_guarding_twice_asks_once(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    agent = agent_with(Script([[("pay", {"amount": 2})]]), pay)
    guard(guard(agent, g.agent("bot")), g.agent("bot"))
    run(agent)
    assert [t for t, _ in requested(g, "bot")] == ["llm_turn", "pay", "llm_turn"]


def test_an_agent_workflow_guards_every_agent_and_leaves_handoff_alone(g: Guard) -> None:
    g.create_agent("team", policy(pay={"cost": 1}))
    lead_script = Script([[("handoff", {"to_agent": "payer", "reason": "pay it"})]])
    payer_script = Script([[("pay", {"amount": 7})], [("wipe", {"path": "/"})], "paid"])
    lead = agent_with(lead_script, name="lead", description="Leads.", can_handoff_to=["payer"])
    payer = agent_with(payer_script, pay, wipe, name="payer", description="Pays.")
    workflow = guard(AgentWorkflow(agents=[lead, payer], root_agent="lead"), g.agent("team"))
    assert str(run(workflow)) == "paid"
    assert RAN == ["pay 7"]
    tools = [t for t, _ in requested(g, "team")]
    assert tools == ["llm_turn", "llm_turn", "pay", "llm_turn", "wipe", "llm_turn"]
    assert "Do not retry" in payer_script.tool_results(2)[-1]


def test_the_early_stopping_answer_is_a_model_turn(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 0}))
    script = Script([[("pay", {"amount": 1})]] * 5)
    # streaming=False: LlamaIndex's streamed early-stopping answer warns of its own deprecated call
    made = agent_with(script, pay, early_stopping_method="generate", streaming=False)
    agent = guard(made, g.agent("bot"))
    run(agent, max_iterations=2)
    assert len(script.seen) == 3  # two steps, then the answer the framework asks for
    assert [t for t, _ in requested(g, "bot")].count("llm_turn") == 3


def test_guard_refuses_what_it_cannot_guard() -> None:
    with pytest.raises(TypeError, match="guard_tools"):
        guard(object())  # type: ignore[type-var]


def test_partial_params_run_so_they_are_recorded(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 0}))

    def pay_to(account: str, amount: int) -> str:
        """Pay an account."""
        RAN.append(f"pay {amount} to {account}")
        return "paid"

    fixed = FunctionTool.from_defaults(pay_to, name="pay", partial_params={"account": "ops"})
    run(guard(agent_with(Script([[("pay", {"amount": 3})]]), fixed), g.agent("bot")))
    assert RAN == ["pay 3 to ops"]
    assert ("pay", {"account": "ops", "amount": 3}) in requested(g, "bot")


def test_an_agent_put_in_a_workflow_after_guard_is_guarded(g: Guard) -> None:
    g.create_agent("team", policy(pay={"cost": 1}))
    lead_script = Script([[("handoff", {"to_agent": "late", "reason": "its job"})]])
    lead = agent_with(lead_script, name="lead", description="Leads.")
    other = agent_with(Script([]), name="other", description="Does nothing.")
    workflow = guard(AgentWorkflow(agents=[lead, other], root_agent="lead"), g.agent("team"))
    late_script = Script([[("wipe", {"path": "/"})]])
    workflow.agents["late"] = agent_with(late_script, wipe, name="late", description="Wipes.")
    run(workflow)
    assert RAN == []
    assert ("wipe", {"path": "/"}) in requested(g, "team")
    turns = [t for t, _ in requested(g, "team") if t == "llm_turn"]
    assert len(turns) == len(lead_script.seen) + len(late_script.seen) == 3  # its turns too


def test_every_agent_guard_backend_allows_denies_and_reports(backend: Any) -> None:
    """``LocalAgent`` on ``:memory:`` and SQLite, and ``AgentClient`` over HTTP (its async API on
    the workflow's event loop, closed before the loop is)."""
    case = backend(policy(pay={"cost": 2}))
    script = Script([[("pay", {"amount": 1}), ("wipe", {"path": "/"})]])
    agent = guard(agent_with(script, pay, wipe), case.agent)

    async def main() -> Any:
        try:
            return await agent.run(user_msg="go")
        finally:
            if case.kind == "http":
                await case.agent.aclose()

    assert str(asyncio.run(main())) == "done"
    assert RAN == ["pay 1"]
    assert sorted(r["tool"] for r in case.requested()) == ["llm_turn", "llm_turn", "pay", "wipe"]
    paid, refused = sorted(script.tool_results(1), key=lambda text: "Do not retry" in text)
    assert paid == "paid 1"
    assert "Do not retry" in refused
    assert sorted(case.outcomes().values()) == ["success"] * 3
    assert case.status()["spent"] == 2


def test_importing_without_the_extra_names_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['llama_index.core'] = None\nimport guardkit.plugins.llama_index\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "pip install 'guardkit[llama-index]'" in done.stderr


@pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning")
def test_a_react_agent_is_guarded_the_same_way(g: Guard) -> None:
    g.create_agent("bot", policy(pay={"cost": 1}))
    replies = iter(
        [
            'Thought: I pay, then wipe.\nAction: pay\nAction Input: {"amount": 2}',
            'Thought: now wipe.\nAction: wipe\nAction Input: {"path": "/"}',
            "Thought: I can answer without using any more tools.\nAnswer: finished",
        ]
    )
    seen: list[str] = []

    def react(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(str(messages[-1].content))
        return ChatMessage(role="assistant", content=next(replies))

    llm = MockFunctionCallingLLM(response_generator=react)
    agent = guard(ReActAgent(tools=[pay, wipe], llm=llm, streaming=False), g.agent("bot"))
    assert "finished" in str(run(agent))
    assert RAN == ["pay 2"]
    assert [t for t, _ in requested(g, "bot")] == [
        "llm_turn",
        "pay",
        "llm_turn",
        "wipe",
        "llm_turn",
    ]
    assert any("Do not retry" in text for text in seen)


def test_approval_from_another_process_lets_the_call_run(tmp_path: Any) -> None:
    import subprocess
    import sys

    db = tmp_path / "guard.db"
    with Guard(str(db)) as g:
        g.create_agent("bot", policy(pay={"cost": 1, "requires_approval": True}))
        script = Script([[("pay", {"amount": 6})]])
        agent = guard(agent_with(script, pay), g.agent("bot"), poll=0.05, approval_timeout=30)

        def approve_with_the_cli() -> None:
            for _ in range(500):
                pending = g.pending("bot")
                if pending:
                    action_id = pending[0]["action"]["action_id"]
                    command = [sys.executable, "-m", "guardkit", "approve", "bot", action_id]
                    subprocess.run(
                        [*command, "--by", "alice", "--db", str(db)], check=True, timeout=60
                    )
                    return
                time.sleep(0.02)

        helper = threading.Thread(target=approve_with_the_cli)
        helper.start()
        run(agent)
        helper.join()
        assert RAN == ["pay 6"]
        assert script.tool_results(1) == ["paid 6"]
