"""The OpenAI Agents SDK integration: model turns and tool calls of real ``Runner.run`` runs.

Each test runs the real SDK, driven by a scripted ``agents.Model``, against an in-process guard
(``:memory:`` and a SQLite file) and an ``AgentClient`` talking to a real guard server.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, function_tool
from agents.tool import default_tool_error_function
from agents.tool_context import ToolContext
from guardkit.plugins.openai_agents import GUARDRAIL_NAME, GuardHooks, guard_tools

import guardkit
from tests.frameworks.openai_agents_kit import (  # noqa: F401 - the *_fixture names are fixtures
    Guards,
    ScriptedModel,
    guard_server_fixture,
    guards_fixture,
    make_agent,
    run,
)

#: the SDK's own words for a tool that raised (they change between releases: asked, not copied)
GENERIC = default_tool_error_function(None, RuntimeError("boom"))  # type: ignore[arg-type]
NOT_ALLOWED = (
    "Denied by the policy guard: tool 'wipe' is not allowed. Nothing was done. Do not retry; "
    "choose another approach or ask a human."
)


class Body:
    """The tools' bodies: what ran, with which arguments."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def lookup(self, query: str) -> str:
        self.ran.append(("lookup", {"query": query}))
        return f"found {query}"

    def wipe(self, path: str) -> str:
        self.ran.append(("wipe", {"path": path}))
        return "wiped"


@pytest.fixture
def body() -> Body:
    return Body()


def sdk_tools(body: Body) -> list[FunctionTool]:
    @function_tool
    def lookup(query: str) -> str:
        """Look something up."""
        return body.lookup(query)

    @function_tool
    def wipe(path: str) -> str:
        """Delete a path."""
        return body.wipe(path)

    return [lookup, wipe]


def deploy_tool(ran: list[str]) -> FunctionTool:
    @function_tool
    def deploy(service: str) -> str:
        """Deploy a service (the policy requires a human's approval)."""
        ran.append(service)
        return "deployed"

    return deploy


def guarded_run(g: Guards, model: ScriptedModel, tools: list[Any], **kw: Any) -> Any:
    agent = guard_tools(make_agent(model, tools), g.agent, poll=0.02, approval_timeout=20)
    return g.play(run(agent, hooks=GuardHooks(g.agent), **kw))


def test_allowed_call_runs_once_and_is_reported(guards: Guards, body: Body) -> None:
    model = ScriptedModel([("lookup", {"query": "invoices"})], "Done.")
    result = guarded_run(guards, model, sdk_tools(body))

    assert result.final_output == "Done."
    assert body.ran == [("lookup", {"query": "invoices"})]
    assert [r["input"] for r in guards.requested("lookup")] == [{"query": "invoices"}]
    assert guards.outcomes("lookup") == [("success", "")]
    assert model.only_output(1) == "found invoices"
    # Each model call was one llm_turn, requested first and reported with its usage.
    assert len(guards.requested("llm_turn")) == len(model.inputs) == 2
    assert guards.outcomes("llm_turn") == [("success", "usage: 7 tokens")] * 2


def test_denied_call_never_runs_and_the_model_reads_the_denial(guards: Guards, body: Body) -> None:
    model = ScriptedModel([("wipe", {"path": "/"})], "I will not.")
    result = guarded_run(guards, model, sdk_tools(body))

    assert body.ran == []
    assert model.only_output(1) == NOT_ALLOWED
    assert GENERIC not in str(model.inputs)
    (checked,) = result.tool_input_guardrail_results
    assert checked.guardrail.get_name() == GUARDRAIL_NAME
    assert checked.output.behavior == {"type": "reject_content", "message": NOT_ALLOWED}
    assert checked.output.output_info["code"] == "tool_not_allowed"
    assert guards.outcomes("wipe") == []


def test_parallel_calls_are_each_asked_once(guards: Guards, body: Body) -> None:
    model = ScriptedModel(
        [("lookup", {"query": "a"}), ("wipe", {"path": "/"}), ("lookup", {"query": "b"})], "ok"
    )
    guarded_run(guards, model, sdk_tools(body))

    assert sorted(body.ran, key=str) == [("lookup", {"query": "a"}), ("lookup", {"query": "b"})]
    assert sorted(r["input"]["query"] for r in guards.requested("lookup")) == ["a", "b"]
    assert guards.outcomes("lookup") == [("success", "")] * 2
    assert sorted(model.outputs(1).values()) == sorted([NOT_ALLOWED, "found a", "found b"])


def test_pending_call_waits_for_a_human_then_runs(guards: Guards) -> None:
    ran: list[str] = []
    deploy = deploy_tool(ran)
    human = guards.decide_when_pending(guards.approve)
    model = ScriptedModel([("deploy", {"service": "api"})], "Deployed.")
    result = guarded_run(guards, model, [deploy])
    human.join()

    assert result.final_output == "Deployed."
    assert ran == ["api"]
    assert len(guards.requested("deploy")) == 1
    assert guards.outcomes("deploy") == [("success", "")]
    assert model.only_output(1) == "deployed"


def test_waiting_for_a_human_never_blocks_the_event_loop(guards: Guards) -> None:
    ran: list[str] = []
    ticks: list[float] = []
    model = ScriptedModel([("deploy", {"service": "api"})], "Deployed.")
    sdk_agent = guard_tools(make_agent(model, [deploy_tool(ran)]), guards.agent, poll=0.5)

    async def main() -> None:
        running = asyncio.ensure_future(run(sdk_agent, hooks=GuardHooks(guards.agent)))
        while not running.done():
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)
        await running

    human = guards.decide_when_pending(guards.approve, after=1.0)
    guards.play(main())
    human.join()
    assert ran == ["api"]
    assert ticks[-1] - ticks[0] > 0.9
    # The loop kept ticking all the while the guardrail waited for the human.
    assert max(b - a for a, b in itertools.pairwise(ticks)) < 0.5


def test_costs_are_computed_in_code(guards: Guards, body: Body) -> None:
    model = ScriptedModel([("lookup", {"query": "invoices"})], "ok")
    sdk_agent = make_agent(model, sdk_tools(body))
    guard_tools(sdk_agent, guards.agent, costs={"lookup": lambda args: len(args["query"])})
    guards.play(run(sdk_agent, hooks=GuardHooks(guards.agent)))
    assert [r["cost"] for r in guards.requested("lookup")] == [8]


def test_rejected_call_never_runs(guards: Guards) -> None:
    ran: list[str] = []
    deploy = deploy_tool(ran)
    human = guards.decide_when_pending(guards.reject)
    model = ScriptedModel([("deploy", {"service": "api"})], "Not deployed.")
    guarded_run(guards, model, [deploy])
    human.join()

    assert ran == []
    assert model.only_output(1).startswith("Denied by the policy guard: rejected by alice")
    assert "Do not retry" in model.only_output(1)


@pytest.mark.parametrize("guards", ["sqlite"], indirect=True)  # the CLI approves in the file
def test_approval_from_another_process(guards: Guards) -> None:
    assert guards.db is not None
    ran: list[str] = []
    deploy = deploy_tool(ran)

    def approve_with_the_cli(action_id: str) -> None:
        command = [sys.executable, "-m", "guardkit", "approve", guards.agent_id, action_id]
        subprocess.run([*command, "--by", "bob", "--db", str(guards.db)], check=True, timeout=60)

    human = guards.decide_when_pending(approve_with_the_cli)
    model = ScriptedModel([("deploy", {"service": "api"})], "Deployed.")
    guarded_run(guards, model, [deploy])
    human.join()

    assert ran == ["api"]
    assert guards.outcomes("deploy") == [("success", "")]


def test_termination_stops_the_run_before_the_next_model_turn(guards: Guards) -> None:
    @function_tool
    def lookup(query: str) -> str:
        """Look something up."""
        guards.operator.terminate(guards.agent_id, "caught exfiltrating", "monitor")
        return "found"

    model = ScriptedModel([("lookup", {"query": "secrets"})], "never said")
    with pytest.raises(guardkit.TurnDenied) as stopped:
        guarded_run(guards, model, [lookup])

    assert stopped.value.code == "terminated"
    assert len(model.inputs) == 1  # no further model call
    assert not guards.status()["alive"]


def test_a_terminated_agent_gets_no_model_call(guards: Guards, body: Body) -> None:
    guards.operator.terminate(guards.agent_id, "done for", "ops")
    model = ScriptedModel("never said")
    with pytest.raises(guardkit.TurnDenied) as stopped:
        guarded_run(guards, model, sdk_tools(body))
    assert stopped.value.code == "terminated"
    assert model.inputs == []


def test_turn_cap_ends_a_runaway_agent(guards: Guards, body: Body) -> None:
    model = ScriptedModel(repeat=[("lookup", {"query": "again"})])
    with pytest.raises(guardkit.TurnDenied) as stopped:
        guarded_run(guards, model, sdk_tools(body), max_turns=50)

    assert stopped.value.code == "tool_call_limit"
    assert len(model.inputs) == 8  # llm_turn's max_calls
    assert len(body.ran) == 8
    assert len(guards.requested("llm_turn")) == 9  # the ninth was refused


def test_tool_exception_is_a_failure_with_a_minor_scar(guards: Guards) -> None:
    @function_tool
    def flaky(n: int) -> str:
        """Fail."""
        raise RuntimeError(f"disk {n} is full")

    model = ScriptedModel([("flaky", {"n": 3})], "It failed.")
    result = guarded_run(guards, model, [flaky])

    assert result.final_output == "It failed."
    assert guards.outcomes("flaky") == [("failure", "RuntimeError: disk 3 is full")]
    (scar,) = guards.status()["scars"]
    assert scar["severity"] == "minor"
    assert model.only_output(1) == GENERIC  # the SDK's wording of a real failure is kept


def test_a_monitors_verdict_stands_over_the_tools_failure(guards: Guards) -> None:
    @function_tool
    def flaky() -> str:
        """Fail after a monitor saw harm."""
        action_id = guardkit.current_action_id()
        assert action_id is not None
        guards.operator.report_harm(guards.agent_id, action_id, "leaked a secret")
        raise RuntimeError("crashed")

    model = ScriptedModel([("flaky", {})], "ok")
    result = guarded_run(guards, model, [flaky])
    assert result.final_output == "ok"
    assert guards.outcomes("flaky") == [("harmful", "leaked a secret")]


def test_the_tools_own_failure_formatter_still_words_failures(guards: Guards) -> None:
    def explain(ctx: Any, error: Exception) -> str:
        return f"flaky broke: {error}"

    @function_tool(failure_error_function=explain)
    def flaky() -> str:
        """Fail."""
        raise ValueError("bad")

    model = ScriptedModel([("flaky", {})], "ok")
    guarded_run(guards, model, [flaky])
    assert model.only_output(1) == "flaky broke: bad"
    assert guards.outcomes("flaky") == [("failure", "ValueError: bad")]


def test_failure_error_function_none_fails_the_run_and_reports(guards: Guards) -> None:
    @function_tool(failure_error_function=None)
    def flaky() -> str:
        """Fail."""
        raise ValueError("bad")

    model = ScriptedModel([("flaky", {})], "never said")
    with pytest.raises(Exception, match="bad"):
        guarded_run(guards, model, [flaky])
    assert guards.outcomes("flaky") == [("failure", "ValueError: bad")]


def test_async_tools(guards: Guards) -> None:
    @function_tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        await asyncio.sleep(0)
        assert guardkit.current_action_id() is not None  # a backend can consume it
        return "page " + url

    model = ScriptedModel([("fetch", {"url": "https://example.org"})], "ok")
    guarded_run(guards, model, [fetch])
    assert model.only_output(1) == "page https://example.org"
    assert guards.outcomes("fetch") == [("success", "")]


def test_sync_tools_see_their_action_id(guards: Guards) -> None:
    seen: list[str | None] = []

    @function_tool
    def note(text: str) -> str:
        """Take a note."""
        seen.append(guardkit.current_action_id())
        return "noted"

    guarded_run(guards, ScriptedModel([("note", {"text": "x"})], "ok"), [note])
    assert seen == [guards.requested("note")[0]["action_id"]]


def test_tools_nobody_decorated(guards: Guards) -> None:
    """A FunctionTool built by hand, not by @function_tool, is guarded the same way."""
    ran: list[str] = []

    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        ran.append(arguments)
        return "hand-made"

    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    }
    lookup = FunctionTool("lookup", "Look up.", schema, invoke)
    wipe = FunctionTool("wipe", "Wipe.", schema, invoke)
    model = ScriptedModel([("lookup", {"query": "q"}), ("wipe", {"query": "q"})], "ok")
    guarded_run(guards, model, [lookup, wipe])

    assert ran == ['{"query": "q"}']
    outputs = sorted(model.outputs(1).values())
    assert outputs == sorted(["hand-made", NOT_ALLOWED.replace("'wipe'", "'wipe'")])
    assert guards.outcomes("lookup") == [("success", "")]


def test_already_guarded_tools_give_one_action(guards: Guards) -> None:
    ran: list[str] = []

    @function_tool
    @guardkit.tool(guard=guards.agent)
    def lookup(query: str) -> str:
        """Look something up."""
        ran.append(query)
        return "found"

    @function_tool
    @guardkit.tool()
    def wipe(path: str) -> str:
        """Delete a path."""
        ran.append(path)
        return "wiped"

    model = ScriptedModel([("lookup", {"query": "q"})], [("wipe", {"path": "/"})], "ok")
    result = guarded_run(guards, model, [lookup, wipe])

    assert result.final_output == "ok"
    assert ran == ["q"]
    assert len(guards.requested("lookup")) == 1
    assert guards.outcomes("lookup") == [("success", "")]
    # The guarded tool asked with guard_tools' agent (it has none of its own), once, and its
    # refusal reached the model as the denial sentence, not as the SDK's generic error.
    assert len(guards.requested("wipe")) == 1
    assert model.only_output(2) == NOT_ALLOWED
    assert lookup.tool_input_guardrails is None


def test_guarding_twice_changes_nothing(guards: Guards, body: Body) -> None:
    tools = sdk_tools(body)
    guard_tools(tools, guards.agent)
    guard_tools(tools, guards.agent)
    assert [len(t.tool_input_guardrails or []) for t in tools] == [1, 1]
    model = ScriptedModel([("lookup", {"query": "x"})], "ok")
    guarded_run(guards, model, tools)
    assert len(guards.requested("lookup")) == 1


def test_handoff_agents_are_guarded_too(guards: Guards, body: Body) -> None:
    model = ScriptedModel([("transfer_to_cleaner", {})], [("wipe", {"path": "/"})], "done")
    cleaner = Agent(name="cleaner", model=model, tools=sdk_tools(body))
    triage = Agent(name="triage", model=model, handoffs=[cleaner])
    triage.handoffs.append(triage)  # a cycle is walked once
    guard_tools(triage, guards.agent)
    guards.play(run(triage, hooks=GuardHooks(guards.agent)))

    assert body.ran == []
    assert model.only_output(2) == NOT_ALLOWED


def test_malformed_arguments_are_never_requested(guards: Guards, body: Body) -> None:
    tool = guard_tools(sdk_tools(body)[0], guards.agent)
    ctx = ToolContext(context=None, tool_name="lookup", tool_call_id="c1", tool_arguments="[1]")
    answer = guards.play(tool.on_invoke_tool(ctx, "[1]"))
    assert answer.startswith("Error: the arguments for lookup are not a JSON object.")
    assert guards.requested("lookup") == []


def test_a_tool_invoked_outside_a_run_asks_itself(guards: Guards, body: Body) -> None:
    lookup, wipe = guard_tools(sdk_tools(body), guards.agent)

    def invoke(tool: FunctionTool, arguments: str) -> Any:
        ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="c", tool_arguments="")
        return guards.play(tool.on_invoke_tool(ctx, arguments))

    assert invoke(lookup, '{"query": "x"}') == "found x"
    assert invoke(wipe, '{"path": "/"}') == NOT_ALLOWED
    assert body.ran == [("lookup", {"query": "x"})]
    assert guards.outcomes("lookup") == [("success", "")]


def test_no_agent_configured_fails_closed(body: Body) -> None:
    model = ScriptedModel([("lookup", {"query": "x"})], "ok")
    agent = guard_tools(make_agent(model, sdk_tools(body)))
    with pytest.raises(guardkit.NoAgentConfigured):
        asyncio.run(run(agent, hooks=GuardHooks()))
    assert model.inputs == []


def test_use_agent_supplies_the_guard(guards: Guards, body: Body) -> None:
    model = ScriptedModel([("lookup", {"query": "x"})], "ok")
    agent = guard_tools(make_agent(model, sdk_tools(body)))
    with guardkit.use_agent(guards.agent):
        guards.play(run(agent, hooks=GuardHooks()))
    assert guards.outcomes("lookup") == [("success", "")]


def test_guard_tools_refuses_what_it_cannot_guard() -> None:
    with pytest.raises(TypeError, match=r"guard_tools takes an agents\.Agent"):
        guard_tools([print])


def test_importing_without_the_extra_names_it() -> None:
    code = (
        "import sys; sys.modules['agents'] = None\n"
        "try:\n"
        "    import guardkit.plugins.openai_agents\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "pip install 'guardkit[openai-agents]'" in out.stdout
