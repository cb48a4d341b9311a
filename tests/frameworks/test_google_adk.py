"""guardkit.plugins.google_adk against the real package, driven by a scripted ADK ``BaseLlm``.

Every model call requests ``llm_turn``; allowed tool calls run once and are reported, refused
ones never run and the model reads the refusal; approvals come from another thread; the
policy's path checks hold; a failing tool, a failing model and a cancelled call are outcomes;
nested agents used as tools are guarded; what the guard cannot see is refused at start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.code_executors import BuiltInCodeExecutor
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool, google_search
from google.adk.tools.agent_tool import AgentTool
from google.genai import types
from guardkit.plugins.google_adk import GuardPlugin, guard
from pydantic import Field

from guardkit import Guard, PolicyError, TurnDenied
from tests.frameworks.conftest import Backend

RAN: list[str] = []
POLICY: dict[str, Any] = {
    "budget": 100,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 1},
        "pay": {"cost": 5, "requires_approval": True},
        "lookup": {"cost": 1},
        "read_file": {"cost": 1, "paths": {"path": {"allow": ["/srv/reports"]}}},
        "explode": {"cost": 0},
        "slow": {"cost": 0},
        "helper": {"cost": 0},
    },
}
Step = str | list[tuple[str, dict[str, Any]]] | Exception


class Scripted(BaseLlm):
    """A model that answers from a script: text, a list of tool calls, or an error to raise."""

    model: str = "scripted"
    steps: list[Any] = Field(default_factory=list)
    seen: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(llm_request)
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, str):
            parts = [types.Part(text=step)]
        else:
            parts = [
                types.Part(function_call=types.FunctionCall(name=name, args=args, id=f"c{n}"))
                for n, (name, args) in enumerate(step)
            ]
        usage = types.GenerateContentResponseUsageMetadata(total_token_count=7)
        yield LlmResponse(content=types.Content(role="model", parts=parts), usage_metadata=usage)


def pay(amount: int) -> dict[str, Any]:
    """Pay an invoice."""
    RAN.append(f"pay {amount}")
    return {"paid": amount}


def lookup(who: str) -> str:
    """Look a customer up."""
    RAN.append(f"lookup {who}")
    return f"{who}: gold"


def wipe(path: str) -> str:
    """Delete everything under a path."""
    RAN.append(f"wipe {path}")
    return "wiped"


def read_file(path: str) -> str:
    """Read a report."""
    RAN.append(f"read {path}")
    return "report"


def explode() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


async def slow() -> str:
    """Takes its time."""
    await asyncio.sleep(30)
    return "late"


def _run(runner: InMemoryRunner, backend: Backend | None = None, text: str = "go") -> list[Any]:
    async def main() -> list[Any]:
        try:
            session = await runner.session_service.create_session(app_name="app", user_id="u")
            message = types.Content(role="user", parts=[types.Part(text=text)])
            return [
                event
                async for event in runner.run_async(
                    user_id="u", session_id=session.id, new_message=message
                )
            ]
        finally:
            if backend is not None and backend.kind == "http":
                await backend.agent.aclose()

    return asyncio.run(main())


def _responses(events: list[Any]) -> list[dict[str, Any]]:
    return [
        part.function_response.response
        for event in events
        if event.content
        for part in event.content.parts or []
        if part.function_response
    ]


def _runner(agent: LlmAgent, guard_agent: Any) -> InMemoryRunner:
    return InMemoryRunner(app=App(name="app", root_agent=agent, plugins=[GuardPlugin(guard_agent)]))


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_allowed_calls_run_once_and_every_model_call_is_a_turn(
    backend: Callable[..., Backend],
) -> None:
    b = backend(POLICY)
    model = Scripted(steps=[[("lookup", {"who": "ada"})], "done"])
    runner = _runner(LlmAgent(name="bot", model=model, tools=[lookup]), b.agent)
    events = _run(runner, b)
    assert RAN == ["lookup ada"]
    assert _responses(events) == [{"result": "ada: gold"}]
    assert [r["tool"] for r in b.requested()] == ["llm_turn", "lookup", "llm_turn"]
    assert sorted(b.outcomes().values()) == ["success"] * 3
    turn = next(r for r in b.records("outcome") if r["action_id"] == "act-1")
    assert turn["detail"] == "usage: 7 tokens"
    assert b.status()["spent"] == 3


def test_an_unlisted_tool_never_runs_and_the_model_reads_why(
    backend: Callable[..., Backend],
) -> None:
    b = backend(POLICY)
    model = Scripted(steps=[[("wipe", {"path": "/"})], "sorry"])
    events = _run(_runner(LlmAgent(name="bot", model=model, tools=[wipe]), b.agent), b)
    assert RAN == []
    (answer,) = _responses(events)
    assert "Nothing was done" in answer["error"]
    assert b.scars()[0]["severity"] == "moderate"
    # The model's next request carries the refusal as the call's response.
    sent = [p.function_response for c in model.seen[1].contents for p in c.parts or []]
    assert any(r is not None and "Nothing was done" in r.response["error"] for r in sent)


def test_an_approval_from_another_thread_runs_the_call_once(
    backend: Callable[..., Backend], approver: Callable[..., Any]
) -> None:
    b = backend(POLICY)
    thread = approver(b)
    model = Scripted(steps=[[("pay", {"amount": 40})], "paid"])
    _run(_runner(LlmAgent(name="bot", model=model, tools=[pay]), b.agent), b)
    thread.join()
    assert RAN == ["pay 40"]
    (requested,) = b.requested("pay")
    assert requested["input"] == {"amount": 40}
    assert b.action("act-2")["approved_by"] == "alice"


def test_a_rejection_is_the_calls_response(
    backend: Callable[..., Backend], approver: Callable[..., Any]
) -> None:
    b = backend(POLICY)
    thread = approver(b, reject="wrong vendor")
    model = Scripted(steps=[[("pay", {"amount": 40})], "ok"])
    events = _run(_runner(LlmAgent(name="bot", model=model, tools=[pay]), b.agent), b)
    thread.join()
    assert RAN == []
    assert "wrong vendor" in _responses(events)[0]["error"]


def test_the_policys_path_rules_hold() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    steps: list[Any] = [
        [("read_file", {"path": "/srv/reports/../../etc/passwd"})],
        [("read_file", {"path": "/srv/reports/q3.txt"})],
        "done",
    ]
    agent = LlmAgent(name="bot", model=Scripted(steps=steps), tools=[read_file])
    events = _run(_runner(agent, guard_.agent("bot")))
    assert RAN == ["read /srv/reports/q3.txt"]
    assert "path" in _responses(events)[0]["error"]
    denied = [r for r in guard_.log("bot")["records"] if r["kind"] == "action_denied"]
    assert denied[0]["payload"]["reason"]["code"] == "path_denied"


def test_a_failing_tool_and_a_failing_model_are_outcomes() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    model = Scripted(steps=[[("explode", {})], ConnectionError("provider down")])
    runner = _runner(LlmAgent(name="bot", model=model, tools=[explode]), guard_.agent("bot"))
    with pytest.raises((RuntimeError, ConnectionError)):
        _run(runner)
    outcomes = [r["payload"] for r in guard_.log("bot")["records"] if r["kind"] == "outcome"]
    tool_outcome = next(o for o in outcomes if "disk on fire" in o["detail"])
    assert tool_outcome["status"] == "failure"
    scars = guard_.agent("bot").status()["scars"]
    assert [s["reason"] for s in scars] == ["action failed: RuntimeError: disk on fire"]


def test_a_failing_model_call_is_the_providers_fault() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    model = Scripted(steps=[ConnectionError("provider down")])
    with pytest.raises(ConnectionError):
        _run(_runner(LlmAgent(name="bot", model=model), guard_.agent("bot")))
    (outcome,) = [r["payload"] for r in guard_.log("bot")["records"] if r["kind"] == "outcome"]
    assert (outcome["status"], outcome["fault"]) == ("failure", "upstream")
    assert guard_.agent("bot").status()["scars"] == []


def test_a_cancelled_call_is_reported_as_the_callers() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    model = Scripted(steps=[[("slow", {})], "done"])
    runner = _runner(LlmAgent(name="bot", model=model, tools=[slow]), guard_.agent("bot"))

    async def main() -> None:
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="go")])

        async def drain() -> None:
            async for _ in runner.run_async(
                user_id="u", session_id=session.id, new_message=message
            ):
                pass

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(drain(), 0.5)

    asyncio.run(main())
    records = guard_.log("bot")["records"]
    (slow_id,) = [
        r["payload"]["action_id"]
        for r in records
        if r["kind"] == "action_requested" and r["payload"]["tool"] == "slow"
    ]
    outcome = next(
        r["payload"]
        for r in records
        if r["payload"].get("action_id") == slow_id and r["kind"] == "outcome"
    )
    assert (outcome["status"], outcome["fault"]) == ("failure", "caller")
    assert guard_.agent("bot").status()["scars"] == []


def test_a_terminated_agent_stops_at_its_next_model_turn() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    guard_.terminate("bot", "runaway", "ops")
    model = Scripted(steps=["never"])
    with pytest.raises(TurnDenied) as stopped:
        _run(_runner(LlmAgent(name="bot", model=model), guard_.agent("bot")))
    assert stopped.value.code == "terminated"
    assert model.seen == []


def test_an_agent_used_as_a_tool_is_guarded_inside() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    inner = LlmAgent(
        name="helper", model=Scripted(steps=[[("wipe", {"path": "/"})], "cannot"]), tools=[wipe]
    )
    outer_model = Scripted(steps=[[("helper", {"request": "clean up"})], "done"])
    outer = LlmAgent(name="bot", model=outer_model, tools=[AgentTool(inner)])
    _run(_runner(outer, guard_.agent("bot")))
    assert RAN == []
    tools = _tools(guard_)
    assert tools.count("llm_turn") == 4  # two of the outer agent, two of the helper's
    assert "helper" in tools


def test_adk_confirmation_comes_first_and_the_guard_is_asked_once_confirmed() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", {**POLICY, "tools": {**POLICY["tools"], "pay": {"cost": 5}}})
    model = Scripted(steps=[[("pay", {"amount": 3})], "waiting", [], "paid"])
    agent = LlmAgent(name="bot", model=model, tools=[FunctionTool(pay, require_confirmation=True)])
    runner = _runner(agent, guard_.agent("bot"))

    async def main() -> None:
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        events = [
            e
            async for e in runner.run_async(user_id="u", session_id=session.id, new_message=message)
        ]
        asked = [
            p.function_call
            for e in events
            if e.content
            for p in e.content.parts or []
            if p.function_call and p.function_call.name == "adk_request_confirmation"
        ]
        assert len(asked) == 1
        assert _tools(guard_) == ["llm_turn"]  # ADK pauses; nothing asked of the guard yet
        answer = types.Part(
            function_response=types.FunctionResponse(
                name="adk_request_confirmation", id=asked[0].id, response={"confirmed": True}
            )
        )
        async for _ in runner.run_async(
            user_id="u",
            session_id=session.id,
            new_message=types.Content(role="user", parts=[answer]),
        ):
            pass

    asyncio.run(main())
    assert RAN == ["pay 3"]
    assert _tools(guard_).count("pay") == 1


def _tools(guard_: Guard) -> list[str]:
    records = guard_.log("bot")["records"]
    return [r["payload"]["tool"] for r in records if r["kind"] == "action_requested"]


def _policy_error(excinfo: pytest.ExceptionInfo[BaseException]) -> PolicyError:
    """ADK wraps what a plugin raises in a RuntimeError naming the plugin; the cause is ours."""
    error = excinfo.value
    found = error if isinstance(error, PolicyError) else error.__cause__
    assert isinstance(found, PolicyError), error
    assert "guardkit" in str(error)
    return found


@pytest.mark.parametrize(
    ("agent", "field"),
    [
        (lambda m: LlmAgent(name="bot", model=m, tools=[google_search]), "google_search"),
        (lambda m: LlmAgent(name="bot", model=m, code_executor=BuiltInCodeExecutor()), "code"),
        (
            lambda m: LlmAgent(
                name="bot",
                model=m,
                tools=[AgentTool(LlmAgent(name="helper", model=m), include_plugins=False)],
            ),
            "include_plugins",
        ),
    ],
)
def test_what_the_guard_cannot_see_is_refused_before_the_model_is_called(
    agent: Callable[[Scripted], LlmAgent], field: str
) -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)
    model = Scripted(model="gemini-2.5-flash", steps=["never"])  # a name ADK's tools accept
    with pytest.raises((PolicyError, RuntimeError)) as refused:
        _run(_runner(agent(model), guard_.agent("bot")))
    assert field in str(_policy_error(refused))
    assert model.seen == []
    assert RAN == []
    if field != "google_search":  # guard() refuses such an app at once
        with pytest.raises(PolicyError, match=field):
            guard(App(name="app", root_agent=agent(model)), guard_.agent("bot"))


def test_the_guard_must_come_first_and_guard_puts_it_there() -> None:
    guard_ = Guard(":memory:")
    guard_.create_agent("bot", POLICY)

    class Cache(BasePlugin):
        pass

    model = Scripted(steps=[[("lookup", {"who": "ada"})], "done"])
    bot = LlmAgent(name="bot", model=model, tools=[lookup])
    plugins = [Cache(name="cache"), GuardPlugin(guard_.agent("bot"))]
    wrong = InMemoryRunner(app=App(name="app", root_agent=bot, plugins=plugins))
    with pytest.raises((PolicyError, RuntimeError)) as refused:
        _run(wrong)
    assert "must come first" in str(_policy_error(refused))
    app = App(name="app", root_agent=bot, plugins=[Cache(name="cache")])
    assert guard(guard(app, guard_.agent("bot"))) is app
    assert [type(p) for p in app.plugins] == [GuardPlugin, Cache]
    _run(InMemoryRunner(app=app))
    assert RAN == ["lookup ada"]


def test_importing_without_the_extra_names_it() -> None:
    import subprocess
    import sys

    code = "import sys; sys.modules['google.adk'] = None\nimport guardkit.plugins.google_adk\n"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0
    assert "pip install 'guardkit[google-adk]'" in done.stderr
