"""LangGraph's side of the LangChain integration: approvals by interrupt-and-resume with a
checkpointer, a guarded ``ToolNode``, tools already guarded by ``guardkit.tool`` (one action per
call, in both orders of composition), and installing without the extra."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("langchain.agents.middleware")

from guardkit.plugins.langchain import GuardMiddleware, guarded_tool_node
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt

import guardkit

RESUME = Command(resume=True)


@pytest.fixture(params=["invoke", "ainvoke"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def tool_messages(out: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in out["messages"] if isinstance(m, ToolMessage)]


def two_calls(*calls: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in calls])


# -- approvals by interrupt ----------------------------------------------------------------------


def interrupting(b: Any, model: Any, tools: list[Any]) -> Any:
    guard = GuardMiddleware(b.agent, approvals="interrupt")
    return create_agent(model, tools=tools, middleware=[guard], checkpointer=InMemorySaver())


def test_interrupt_pauses_until_a_human_decides(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    b = backend(lc_policy)
    model = chat([tool_call("pay", {"amount": 5}, "p1"), "Paid."])
    graph = interrupting(b, model, [lc_tools["pay"]])
    config = {"configurable": {"thread_id": "t1"}}

    out = b.run(graph, mode, config=config)
    (paused,) = out["__interrupt__"]
    assert paused.value["guardkit"] == "pending_approval"
    (waiting,) = paused.value["actions"]
    assert (waiting["tool"], waiting["args"], waiting["tool_call_id"]) == (
        "pay",
        {"amount": 5},
        "p1",
    )
    assert [p["action"]["action_id"] for p in b.ops.pending(b.agent_id)] == [waiting["action_id"]]
    assert ran == []

    # Resumed before anyone decided: it pauses again, and asks for nothing new.
    out = b.run(graph, mode, RESUME, config)
    assert out["__interrupt__"][0].value["actions"] == [waiting]
    assert ran == []

    b.ops.approve(b.agent_id, waiting["action_id"], "alice")
    out = b.run(graph, mode, RESUME, config)
    assert "__interrupt__" not in out
    assert ran == [("pay", 5, waiting["action_id"])]
    assert [r["action_id"] for r in b.requested("pay")] == [waiting["action_id"]]
    assert b.outcomes()[waiting["action_id"]] == "success"
    assert out["messages"][-1].content == "Paid."
    assert len(model.seen) == 2


def test_interrupt_resumes_after_an_approval_from_the_cli(
    lc_policy, tmp_path, chat, tool_call, lc_tools, ran
):
    db = tmp_path / "guard.db"
    with guardkit.Guard(str(db)) as guard:
        guard.create_agent("bot", lc_policy)
        model = chat([tool_call("pay", {"amount": 7}, "p1"), "Paid."])
        graph = create_agent(
            model,
            tools=[lc_tools["pay"]],
            middleware=[GuardMiddleware(guard.agent("bot"), approvals="interrupt")],
            checkpointer=InMemorySaver(),
        )
        config = {"configurable": {"thread_id": "cli"}}
        (paused,) = graph.invoke({"messages": [{"role": "user", "content": "pay"}]}, config)[
            "__interrupt__"
        ]
        action_id = paused.value["actions"][0]["action_id"]
        approve = [sys.executable, "-m", "guardkit", "approve", "bot", action_id]
        subprocess.run([*approve, "--by", "alice", "--db", str(db)], check=True, timeout=60)

        out = graph.invoke(RESUME, config)
        assert ran == [("pay", 7, action_id)]
        assert out["messages"][-1].content == "Paid."


def test_interrupt_rejection_reaches_the_model(
    lc_policy, backend, chat, tool_call, lc_tools, ran, mode
):
    b = backend(lc_policy)
    model = chat([tool_call("pay", {"amount": 900}, "p1"), "Understood."])
    graph = interrupting(b, model, [lc_tools["pay"]])
    config = {"configurable": {"thread_id": "t2"}}
    (paused,) = b.run(graph, mode, config=config)["__interrupt__"]
    b.ops.reject(b.agent_id, paused.value["actions"][0]["action_id"], "alice", "not this month")

    out = b.run(graph, mode, RESUME, config)
    assert ran == []
    (denial,) = tool_messages(out)
    assert denial.status == "error"
    assert denial.artifact["guardkit"]["code"] == "rejected"
    assert "not this month" in denial.content
    assert [m.content for m in model.seen[1] if isinstance(m, ToolMessage)] == [denial.content]


def test_interrupt_mode_asks_once_per_call(lc_policy, backend, chat, lc_tools, ran, mode):
    b = backend(lc_policy)
    turn = two_calls(("search", {"query": "a"}, "s1"), ("pay", {"amount": 1}, "p1"))
    model = chat([turn, "Done."])
    graph = interrupting(b, model, [lc_tools["search"], lc_tools["pay"]])
    config = {"configurable": {"thread_id": "t3"}}
    (paused,) = b.run(graph, mode, config=config)["__interrupt__"]
    assert [a["tool"] for a in paused.value["actions"]] == ["pay"]
    assert ran == []  # the turn's allowed calls wait with it

    b.ops.approve(b.agent_id, paused.value["actions"][0]["action_id"], "alice")
    out = b.run(graph, mode, RESUME, config)
    assert sorted(r[0] for r in ran) == ["pay", "search"]
    assert len(b.requested("search")) == len(b.requested("pay")) == 1
    assert set(b.outcomes().values()) == {"success"}
    assert out["messages"][-1].content == "Done."


def test_interrupt_mode_needs_no_pause_when_nothing_waits(
    lc_policy, backend, chat, tool_call, lc_tools, ran
):
    b = backend(lc_policy)
    model = chat([tool_call("search", {"query": "q"}, "s1"), "Done."])
    graph = interrupting(b, model, [lc_tools["search"]])
    out = b.run(graph, "invoke", config={"configurable": {"thread_id": "t4"}})
    assert "__interrupt__" not in out
    assert [r[:2] for r in ran] == [("search", "q")]
    assert len(b.requested("search")) == 1


def test_a_tool_that_interrupts_itself_is_one_action(lc_policy, backend, chat, tool_call, mode):
    """LangGraph runs an interrupted tool again from the start when resumed; in interrupt mode
    its decision is read from the graph state, not asked for again."""
    b = backend(lc_policy)

    @tool
    def search(query: str) -> str:
        """Search, once a human says which index."""
        index = interrupt("which index?")
        return f"{query} in {index}"

    model = chat([tool_call("search", {"query": "q"}, "s1"), "Done."])
    graph = interrupting(b, model, [search])
    config = {"configurable": {"thread_id": "t5"}}
    assert b.run(graph, mode, config=config)["__interrupt__"][0].value == "which index?"
    out = b.run(graph, mode, Command(resume="docs"), config)

    (request,) = b.requested("search")
    assert tool_messages(out)[0].content == "q in docs"
    assert b.outcomes()[request["action_id"]] == "success"


# -- a plain LangGraph ToolNode ------------------------------------------------------------------


def tool_graph(node: ToolNode) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", node)
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def test_guarded_tool_node(lc_policy, backend, lc_tools, ran, mode):
    b = backend(lc_policy)
    node = guarded_tool_node([lc_tools["search"], lc_tools["delete"]], b.agent)
    turn = two_calls(("search", {"query": "a"}, "s1"), ("delete", {"name": "prod"}, "d1"))
    out = b.run(tool_graph(node), mode, {"messages": [turn]})

    (search,) = b.requested("search")
    assert ran == [("search", "a", search["action_id"])]
    results = {m.tool_call_id: m for m in tool_messages(out)}
    assert (results["s1"].content, results["s1"].status) == ("results for a", "success")
    assert results["d1"].status == "error"
    assert results["d1"].artifact["guardkit"]["code"] == "tool_not_allowed"
    assert b.outcomes() == {search["action_id"]: "success"}


def test_guarded_tool_node_waits_for_approval(lc_policy, backend, lc_tools, ran, mode, approver):
    b = backend(lc_policy)
    node = guarded_tool_node([lc_tools["pay"]], b.agent, poll=0.05)
    human = approver(b)
    out = b.run(tool_graph(node), mode, {"messages": [two_calls(("pay", {"amount": 3}, "p1"))]})
    human.join()
    (pay,) = b.requested("pay")
    assert ran == [("pay", 3, pay["action_id"])]
    assert tool_messages(out)[0].content == "paid 3"


def test_errors_a_tool_node_handles_are_failures(lc_policy, backend, lc_tools, ran):
    b = backend(lc_policy)
    node = guarded_tool_node([lc_tools["explode"]], b.agent, handle_tool_errors=True)
    out = b.run(tool_graph(node), "invoke", {"messages": [two_calls(("explode", {"x": 1}, "e1"))]})
    (error,) = tool_messages(out)
    assert error.status == "error"
    (explode,) = b.requested("explode")
    assert b.outcomes()[explode["action_id"]] == "failure"
    assert [s["severity"] for s in b.scars()] == ["minor"]


def test_guarded_tool_node_keeps_its_own_wrappers_out():
    with pytest.raises(TypeError, match="wrap_tool_call"):
        guarded_tool_node([], wrap_tool_call=lambda request, execute: execute(request))


# -- tools already guarded by guardkit.tool ------------------------------------------------------


@pytest.fixture(params=["tool over guardkit.tool", "guarded function"])
def guarded_tools(request: pytest.FixtureRequest, ran: list[Any]) -> dict[str, Any]:
    """``search``/``fetch``/``delete``/``explode`` guarded by ``guardkit.tool`` (no agent of their
    own), under LangChain's ``@tool`` or handed to ``create_agent`` as plain functions."""

    @guardkit.tool()
    def search(query: str) -> str:
        """Search the web."""
        ran.append(("search", query, guardkit.current_action_id()))
        return f"results for {query}"

    @guardkit.tool()
    async def fetch(url: str) -> str:
        """Fetch a page."""
        ran.append(("fetch", url, guardkit.current_action_id()))
        return f"page {url}"

    @guardkit.tool()
    def delete(name: str) -> str:
        """Delete a repository."""
        ran.append(("delete", name, guardkit.current_action_id()))
        return "deleted"

    @guardkit.tool()
    def explode(x: int) -> str:
        """Always fails."""
        ran.append(("explode", x, guardkit.current_action_id()))
        raise ValueError("kaboom")

    funcs = {f.__name__: f for f in (search, fetch, delete, explode)}
    if request.param == "guarded function":
        return funcs
    return {name: tool(func) for name, func in funcs.items()}


def test_a_guarded_tool_is_asked_once(
    lc_policy, backend, chat, tool_call, guarded_tools, ran, mode
):
    b = backend(lc_policy)
    name, args = ("search", {"query": "x"}) if mode == "invoke" else ("fetch", {"url": "u"})
    model = chat([tool_call(name, args, "c1"), "Done."])
    graph = create_agent(model, tools=[guarded_tools[name]], middleware=[GuardMiddleware(b.agent)])
    out = b.run(graph, mode)

    (request,) = b.requested(name)
    assert ran == [(name, next(iter(args.values())), request["action_id"])]
    assert b.outcomes()[request["action_id"]] == "success"
    assert tool_messages(out)[0].status == "success"


def test_a_guarded_tool_denial_reaches_the_model(
    lc_policy, backend, chat, tool_call, guarded_tools, ran
):
    b = backend(lc_policy)
    model = chat([tool_call("delete", {"name": "prod"}, "c1"), "Understood."])
    graph = create_agent(
        model, tools=[guarded_tools["delete"]], middleware=[GuardMiddleware(b.agent)]
    )
    out = b.run(graph, "invoke")

    assert ran == []
    (request,) = b.requested("delete")
    (denial,) = tool_messages(out)
    assert denial.content.startswith("Denied by the policy guard: tool 'delete' is not allowed.")
    assert denial.artifact["guardkit"]["action_id"] == request["action_id"]
    assert len(b.scars()) == 1


def test_a_guarded_tool_failure_is_reported_once(
    lc_policy, backend, chat, tool_call, guarded_tools
):
    b = backend(lc_policy)
    model = chat([tool_call("explode", {"x": 1}, "c1"), "It failed."])
    graph = create_agent(
        model, tools=[guarded_tools["explode"]], middleware=[GuardMiddleware(b.agent)]
    )
    out = b.run(graph, "invoke")

    (request,) = b.requested("explode")
    assert b.outcomes()[request["action_id"]] == "failure"
    assert [s["severity"] for s in b.scars()] == ["minor"]
    assert "ValueError('kaboom')" in tool_messages(out)[0].content


def test_a_tool_node_that_handles_errors_keeps_a_guarded_denial(
    lc_policy, backend, guarded_tools, ran
):
    b = backend(lc_policy)
    node = guarded_tool_node([guarded_tools["delete"]], b.agent, handle_tool_errors=True)
    out = b.run(
        tool_graph(node), "invoke", {"messages": [two_calls(("delete", {"name": "x"}, "d"))]}
    )
    (denial,) = tool_messages(out)
    assert denial.artifact["guardkit"]["code"] == "tool_not_allowed"
    assert denial.content.startswith("Denied by the policy guard: tool 'delete' is not allowed.")
    assert ran == []


# -- install -------------------------------------------------------------------------------------


def test_importing_without_the_extra_names_it():
    code = (
        "import sys\n"
        "sys.modules['langchain.agents.middleware'] = None\n"
        "import guardkit.plugins.langchain\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "pip install 'guardkit[langchain]'" in done.stderr


def test_approvals_do_not_block_the_event_loop(lc_policy, backend, chat, tool_call, lc_tools, ran):
    """The human is a coroutine on the agent's own loop: it can only approve if ``ainvoke``'s
    wait leaves the loop free (else the wait times out and the call is denied)."""
    b = backend(lc_policy)
    model = chat([tool_call("pay", {"amount": 5}, "p1"), "Paid."])
    guard = GuardMiddleware(b.agent, approval_timeout=30, poll=0.05)
    graph = create_agent(model, tools=[lc_tools["pay"]], middleware=[guard])

    async def human() -> None:
        while not (pending := b.ops.pending(b.agent_id)):
            await asyncio.sleep(0.01)
        b.ops.approve(b.agent_id, pending[0]["action"]["action_id"], "alice")

    async def main() -> Any:
        deciding = asyncio.create_task(human())
        try:
            return await graph.ainvoke({"messages": [{"role": "user", "content": "pay"}]})
        finally:
            await deciding
            if b.kind == "http":
                await b.agent.aclose()

    out = asyncio.run(main())
    assert [r[:2] for r in ran] == [("pay", 5)]
    assert out["messages"][-1].content == "Paid."
