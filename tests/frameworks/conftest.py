"""Framework integrations over every agent guard: ``LocalAgent`` (``:memory:`` and a SQLite file)
and ``AgentClient`` against a real guard server on loopback.

``backend(policy)`` makes a fresh agent and returns a ``Backend``: the agent's guard, an operator
(``Guard`` in-process, ``AdminClient`` over HTTP) and ledger queries. ``approve_soon`` plays the
human in another thread: it approves (or rejects) the first action that waits.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import guardkit

ADMIN = "frameworks-admin-" + "a" * 32
BACKEND = "frameworks-backend-" + "b" * 32


@dataclass
class Backend:
    """One agent under test and the operator side of its guard."""

    kind: str
    agent: Any
    ops: Any
    agent_id: str
    #: The SQLite ledger another process can open (the ``sqlite`` backend only).
    db: Path | None = None

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        log = self.ops.log(self.agent_id)["records"]
        return [r["payload"] for r in log if kind is None or r["kind"] == kind]

    def requested(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The ``action_requested`` records (of ``tool``)."""
        found = self.records("action_requested")
        return [r for r in found if tool is None or r["tool"] == tool]

    def outcomes(self) -> dict[str, str]:
        """Each reported action's outcome status, by action id."""
        return {r["action_id"]: r["status"] for r in self.records("outcome")}

    def scars(self) -> list[dict[str, Any]]:
        return self.records("scar")

    def status(self) -> Any:
        return self.ops.status(self.agent_id)

    def action(self, action_id: str) -> Any:
        return self.ops.action(self.agent_id, action_id)

    def run(self, graph: Any, mode: str, payload: Any = None, config: Any = None) -> Any:
        """``graph.invoke`` (``mode="invoke"``), or ``graph.ainvoke`` in a fresh event loop.

        After an ``ainvoke`` an ``AgentClient``'s connections are closed before its loop is, as
        an async program closes its clients (its next call opens new ones).
        """
        payload = payload or {"messages": [{"role": "user", "content": "go"}]}
        if mode == "invoke":
            return graph.invoke(payload, config)

        async def ainvoke() -> Any:
            try:
                return await graph.ainvoke(payload, config)
            finally:
                if self.kind == "http":
                    await self.agent.aclose()

        return asyncio.run(ainvoke())


@pytest.fixture(scope="session")
def guard_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("starlette")
    from guardkit.server import ServerState, create_app
    from guardkit.server.runner import serve_in_thread
    from guardkit.store import open_store

    path = tmp_path_factory.mktemp("frameworks") / "guard.db"
    state = ServerState.open(
        open_store(f"sqlite:///{path}"), admin_token=ADMIN, backend_token=BACKEND
    )
    with serve_in_thread(create_app(state)) as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "http"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Backend]]:
    """``backend(policy)``: a fresh agent with ``policy`` on this case's guard."""
    kind: str = request.param
    with ExitStack() as stack:

        def make(policy: dict[str, Any]) -> Backend:
            agent_id = "lc-" + uuid.uuid4().hex[:10]
            if kind == "http":
                from guardkit.client import AdminClient, AgentClient

                url = request.getfixturevalue("guard_server")
                admin = stack.enter_context(AdminClient(url, ADMIN))
                token = admin.create_agent(agent_id, policy)["token"]
                client = stack.enter_context(AgentClient(url, agent_id, token))
                return Backend(kind, client, admin, agent_id)
            db = tmp_path / f"{agent_id}.db" if kind == "sqlite" else None
            guard = stack.enter_context(guardkit.Guard(str(db) if db else ":memory:"))
            guard.create_agent(agent_id, policy)
            return Backend(kind, guard.agent(agent_id), guard, agent_id, db)

        yield make


def approve_soon(
    backend: Backend, *, reject: str | None = None, timeout: float = 20
) -> threading.Thread:
    """In another thread: approve (or reject, with ``reject`` as the reason) the first pending
    action as soon as it waits. ``join()`` the thread to see it done."""

    def decide() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = backend.ops.pending(backend.agent_id)
            if pending:
                action_id = pending[0]["action"]["action_id"]
                if reject is None:
                    backend.ops.approve(backend.agent_id, action_id, "alice")
                else:
                    backend.ops.reject(backend.agent_id, action_id, "alice", reject)
                return
            time.sleep(0.02)

    thread = threading.Thread(target=decide, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def approver() -> Callable[..., threading.Thread]:
    return approve_soon


@pytest.fixture
def chat() -> Callable[[Iterable[Any]], Any]:
    """``chat(replies)``: LangChain's own ``GenericFakeChatModel`` scripted with ``replies``
    (``AIMessage``s or strings), accepting ``bind_tools`` as ``create_agent`` needs, and
    keeping in ``.seen`` the messages of every call it answered."""
    fake = pytest.importorskip("langchain_core.language_models.fake_chat_models")
    from pydantic import Field

    class ScriptedChat(fake.GenericFakeChatModel):
        seen: list[list[Any]] = Field(default_factory=list)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
            self.seen.append(list(messages))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)

    return lambda replies: ScriptedChat(messages=iter(replies))


@pytest.fixture
def tool_call() -> Callable[..., Any]:
    """``tool_call(name, args, call_id)``: a model message asking for one tool call."""
    messages = pytest.importorskip("langchain_core.messages")

    def make(name: str, args: dict[str, Any], call_id: str) -> Any:
        return messages.AIMessage(
            content="", tool_calls=[{"name": name, "args": args, "id": call_id}]
        )

    return make


@pytest.fixture
def lc_policy() -> dict[str, Any]:
    """A policy for the LangChain tests' tools: ``pay`` needs approval, ``delete`` is unlisted."""
    return {
        "budget": 100,
        "scar_limit": 10,
        "tools": {
            "llm_turn": {"cost": 1},
            "search": {"cost": 1},
            "fetch": {"cost": 1},
            "pay": {"cost": 1, "requires_approval": True},
            "explode": {"cost": 0},
            "shutdown": {"cost": 0},
        },
    }


@pytest.fixture
def ran() -> list[tuple[str, Any, str | None]]:
    """Every tool body that ran: ``(tool, argument, current_action_id())``."""
    return []


@pytest.fixture
def lc_tools(ran: list[tuple[str, Any, str | None]]) -> dict[str, Any]:
    """LangChain tools that note in ``ran`` when their body runs (``fetch`` is async)."""
    lc = pytest.importorskip("langchain_core.tools")

    @lc.tool
    def search(query: str) -> str:
        """Search the web."""
        ran.append(("search", query, guardkit.current_action_id()))
        return f"results for {query}"

    @lc.tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        await asyncio.sleep(0)
        ran.append(("fetch", url, guardkit.current_action_id()))
        return f"page {url}"

    @lc.tool
    def pay(amount: int) -> str:
        """Pay an invoice."""
        ran.append(("pay", amount, guardkit.current_action_id()))
        return f"paid {amount}"

    @lc.tool
    def delete(name: str) -> str:
        """Delete a repository."""
        ran.append(("delete", name, guardkit.current_action_id()))
        return "deleted"

    @lc.tool
    def explode(x: int) -> str:
        """Always fails."""
        ran.append(("explode", x, guardkit.current_action_id()))
        raise ValueError("kaboom")

    return {t.name: t for t in (search, fetch, pay, delete, explode)}
