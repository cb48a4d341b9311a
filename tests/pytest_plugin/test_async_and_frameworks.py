"""Strict mode with the async guard API and the framework integrations: no false violations.

One inner session (shared by the checks below, since each inner run costs) holds tools reached
every way guardkit lets a tool run: an async guarded tool on an in-memory and on a SQLite guard
(whose requests hop to a worker thread), requests made with ``arequest``, through
``asyncio.to_thread``, and over HTTP with ``AgentClient.arequest``, and LangChain tools run by
``create_agent`` under ``GuardMiddleware`` with ``invoke`` and ``ainvoke``. Each way also has a
bypass that strict mode must catch, so a checker that passes everything fails here.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents.middleware")

APP = '''
import asyncio

import guardkit
from langchain_core.tools import tool


#: asked under a name known only at run time (no literal for discovery to read)
ARCHIVE_AS = "store_" + "document"


@tool
@guardkit.tool(ARCHIVE_AS)
async def archive(doc: str) -> str:
    """Archive a document."""
    await asyncio.sleep(0)
    return "archived " + doc


@tool("web_search")
def search(query: str) -> str:
    """Search the web."""
    return "results for " + query


@tool
async def fetch(url: str) -> str:
    """Fetch a page."""
    await asyncio.sleep(0)
    return "page " + url


@tool
def wipe(disk: str) -> str:
    """Wipe a disk."""
    return "wiped " + disk


TOOL_SCHEMAS = [{"name": "mail", "input_schema": {"type": "object"}}]


async def send_mail(to: str) -> str:
    await asyncio.sleep(0)
    return "sent to " + to


TOOLS = {"mail": send_mail}


async def dispatch(agent, name, args):
    if (await agent.arequest(name, args))["decision"] != "allowed":
        return "denied"
    return await TOOLS[name](**args)
'''

TESTS = """
import asyncio

import guardkit
import pytest
from guardkit.plugins.langchain import GuardMiddleware
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

import app

POLICY = {
    "budget": 100,
    "tools": {
        "llm_turn": {"cost": 0}, "web_search": {"cost": 1}, "fetch": {"cost": 1},
        "mail": {"cost": 1}, "store_document": {"cost": 1},
    },
}


class Chat(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


def calls(*names):
    return AIMessage(content="", tool_calls=[
        {"name": name, "args": args, "id": f"c{i}"} for i, (name, args) in enumerate(names)
    ])


def graph(agent, *tools, replies):
    model = Chat(messages=iter(replies))
    return create_agent(model, tools=list(tools), middleware=[GuardMiddleware(agent)])


@pytest.fixture(params=["memory", "sqlite"])
def agent(request, tmp_path):
    where = ":memory:" if request.param == "memory" else str(tmp_path / "guard.db")
    with guardkit.Guard(where) as guard:
        guard.create_agent("bot", POLICY)
        with guardkit.use_agent(guard.agent("bot")):
            yield guard.agent("bot")


def test_async_guarded_tool(agent):
    assert asyncio.run(app.archive.coroutine("a")) == "archived a"


def test_async_guarded_tool_in_a_worker_thread(agent):
    def in_thread():
        return asyncio.run(app.archive.coroutine("b"))

    assert asyncio.run(asyncio.to_thread(in_thread)) == "archived b"


def test_arequest_then_the_body(agent):
    assert asyncio.run(app.dispatch(agent, "mail", {"to": "x"})) == "sent to x"


def test_request_through_to_thread_then_the_body(agent):
    async def dispatch():
        decision = await asyncio.to_thread(agent.request, "mail", {"to": "y"})
        assert decision["decision"] == "allowed"
        return await app.send_mail("y")

    assert asyncio.run(dispatch()) == "sent to y"


def test_bypass_after_a_denied_arequest(agent):
    async def dispatch():
        assert await app.dispatch(agent, "wipe", {}) == "denied"
        return await app.TOOLS["mail"](to="z")

    asyncio.run(dispatch())


def test_over_http_with_arequest(guard_url):
    from guardkit.client import AdminClient, AgentClient

    with AdminClient(guard_url, "admin-" + "a" * 32) as admin:
        token = admin.create_agent("http-bot", POLICY)["token"]

    async def dispatch():
        async with AgentClient(guard_url, "http-bot", token) as client:
            assert (await client.arequest("mail", {"to": "h"}))["decision"] == "allowed"
            return await app.send_mail("h")

    assert asyncio.run(dispatch()) == "sent to h"


def test_langchain_under_guard_middleware_invoke(agent):
    asked = calls(("web_search", {"query": "q"}), ("wipe", {"disk": "d"}))
    flow = graph(agent, app.search, app.wipe, replies=[asked, "done"])
    texts = [m.content for m in flow.invoke({"messages": [("user", "go")]})["messages"]]
    assert "results for q" in texts
    assert not any(str(t).startswith("wiped") for t in texts)


def test_langchain_under_guard_middleware_ainvoke(agent):
    asked = calls(
        ("web_search", {"query": "q"}), ("fetch", {"url": "u"}), ("wipe", {"disk": "d"}),
        ("archive", {"doc": "d"}),
    )
    flow = graph(agent, app.search, app.fetch, app.wipe, app.archive, replies=[asked, "done"])
    out = asyncio.run(flow.ainvoke({"messages": [("user", "go")]}))
    texts = [m.content for m in out["messages"]]
    assert {"results for q", "page u", "archived d"} <= set(texts)
    assert not any(str(t).startswith("wiped") for t in texts)


def test_langchain_tool_called_around_the_middleware():
    assert app.search.invoke({"query": "direct"}) == "results for direct"
"""

CONFTEST = """
import pytest


@pytest.fixture(scope="session")
def guard_url(tmp_path_factory):
    from guardkit.server import ServerState, create_app
    from guardkit.server.runner import serve_in_thread
    from guardkit.store import open_store

    path = tmp_path_factory.mktemp("server") / "guard.db"
    state = ServerState.open(
        open_store(f"sqlite:///{path}"), admin_token="admin-" + "a" * 32,
        backend_token="backend-" + "b" * 32,
    )
    with serve_in_thread(create_app(state)) as url:
        yield url
"""


def test_no_false_violations_and_every_bypass_caught(pytester, run):
    pytester.makepyfile(app=APP, test_app=TESTS)
    pytester.makeconftest(CONFTEST)
    result = run(pytester, "--guard-strict", "--guard-coverage", "-rf")
    result.assert_outcomes(passed=13, failed=3)
    lines = result.stdout.lines
    failed = sorted(line.split()[1] for line in lines if line.startswith("FAILED "))
    assert failed == [
        "test_app.py::test_bypass_after_a_denied_arequest[memory]",
        "test_app.py::test_bypass_after_a_denied_arequest[sqlite]",
        "test_app.py::test_langchain_tool_called_around_the_middleware",
    ]
    mail = "tool 'send_mail' (app.py:41) ran without going through the guard"
    search = "tool 'search' (app.py:20) ran without going through the guard"
    # each violation once in its test's report (the short summary repeats whole messages when
    # pytest sees a CI environment, and only the first line elsewhere)
    reports = lines[: next(i for i, line in enumerate(lines) if "short test summary" in line)]
    assert (reports.count(mail), reports.count(search)) == (2, 1)
