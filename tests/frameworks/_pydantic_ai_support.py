"""What the pydantic-ai integration tests share: guards over three backends, a scripted model.

``backend`` yields a ``Guarded`` for one fresh agent: in-process over ``:memory:`` and over a
SQLite file (``LocalAgent``), and over HTTP (``AgentClient`` against a real server in a thread).
``Script`` is a pydantic-ai ``FunctionModel`` that plays scripted replies and keeps every request
it received, so a test can read what the model was told.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from guardkit import Guard

T = TypeVar("T")
ADMIN = "pyd-admin-" + "a" * 32
BACKEND = "pyd-backend-" + "b" * 32
POLICY: dict[str, Any] = {
    "budget": 100,
    "scar_limit": 50,
    "tools": {
        "llm_turn": {"cost": 1},
        "add": {"cost": 1},
        "fail": {"cost": 0},
        "pay": {"cost": 2, "requires_approval": True},
        "greet": {"cost": 0},
        "lookup": {"cost": 0},
    },
}

#: One model step: a final text, or the tool calls to make as ``(tool, args)``.
Step = str | Sequence[tuple[str, dict[str, Any]]]


@dataclass
class Guarded:
    """One agent under test: its guard, an operator (``Guard`` or ``AdminClient``) and its id."""

    agent: Any
    operator: Any
    agent_id: str
    kind: str
    #: The SQLite ledger's path, for the CLI (``sqlite`` only).
    db: str | None = None

    #: One event loop for the test: ``AgentClient``'s async pool belongs to the loop it ran on.
    loop: asyncio.Runner = field(default_factory=asyncio.Runner)

    def run(self, agent: Any, prompt: str, **options: Any) -> Any:
        """``agent.run(prompt)`` on this test's event loop: the output, or what the run raised."""
        return self.loop.run(agent.run(prompt, **options)).output

    def close(self) -> None:
        aclose = getattr(self.agent, "aclose", None)
        if aclose is not None:
            self.loop.run(aclose())
        self.loop.close()

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = self.operator.log(self.agent_id)["records"]
        return [r["payload"] for r in found if kind is None or r["kind"] == kind]

    def requested(self, tool: str) -> list[dict[str, Any]]:
        return [r for r in self.records("action_requested") if r["tool"] == tool]

    def outcome(self, action_id: str) -> dict[str, Any] | None:
        found = [r for r in self.records("outcome") if r["action_id"] == action_id]
        assert len(found) <= 1
        return found[0] if found else None

    def decide_when_pending(self, approve: bool, tool: str | None = None) -> Decider:
        """From another thread: approve (or reject) the first pending action once it appears."""
        return Decider(self, approve, tool)


class Decider(threading.Thread):
    """A human at the console, in another thread; ``join()`` re-raises what went wrong there."""

    def __init__(self, guarded: Guarded, approve: bool, tool: str | None) -> None:
        super().__init__(daemon=True)
        self.guarded, self.approve, self.tool = guarded, approve, tool
        self.decided: str | None = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.decided = self._decide()
        except BaseException as exc:
            self.error = exc

    def _decide(self) -> str | None:
        operator, agent_id = self.guarded.operator, self.guarded.agent_id
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pending = [
                item["action"]
                for item in operator.pending(agent_id)
                if self.tool is None or item["action"]["tool"] == self.tool
            ]
            if pending:
                action_id = str(pending[0]["action_id"])
                if self.approve:
                    operator.approve(agent_id, action_id, "alice")
                else:
                    operator.reject(agent_id, action_id, "alice", "not today")
                return action_id
            time.sleep(0.02)
        return None

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error


async def run_closing(guard: Any, work: Awaitable[T]) -> T:
    """Await ``work``, then close the guard's async connections on this loop (``AgentClient``)."""
    try:
        return await work
    finally:
        aclose = getattr(guard, "aclose", None)
        if aclose is not None:
            await aclose()


def serve(path: Path) -> Iterator[str]:
    from guardkit.server import ServerState, create_app
    from guardkit.server.runner import serve_in_thread
    from guardkit.store import open_store

    state = ServerState.open(
        open_store(f"sqlite:///{path}"), admin_token=ADMIN, backend_token=BACKEND
    )
    with serve_in_thread(create_app(state)) as url:
        yield url


def open_backend(
    kind: str, tmp_path: Path, policy: dict[str, Any], url: str | None
) -> Iterator[Guarded]:
    agent_id = "pyd-" + uuid.uuid4().hex[:10]
    if kind in ("memory", "sqlite"):
        where = ":memory:" if kind == "memory" else str(tmp_path / f"{agent_id}.db")
        with Guard(where) as guard:
            guard.create_agent(agent_id, policy)
            db = None if kind == "memory" else where
            guarded = Guarded(guard.agent(agent_id), guard, agent_id, kind, db)
            yield guarded
            guarded.close()
        return
    from guardkit.client import AdminClient, AgentClient

    assert url is not None
    with AdminClient(url, ADMIN) as admin:
        token = admin.create_agent(agent_id, policy)["token"]
        with AgentClient(url, agent_id, token) as agent:
            guarded = Guarded(agent, admin, agent_id, kind)
            yield guarded
            guarded.close()


@dataclass
class Script:
    """A scripted pydantic-ai model; ``requests`` holds the messages of every request it got."""

    steps: list[Step]
    requests: list[list[ModelMessage]] = field(default_factory=list)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self._reply)

    def _reply(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        step = self.steps[min(len(self.requests), len(self.steps)) - 1]
        if isinstance(step, str):
            return ModelResponse(parts=[TextPart(step)])
        return ModelResponse(parts=[ToolCallPart(name, args) for name, args in step])

    def tool_results(self, request: int = -1) -> dict[str, Any]:
        """What the model was told each tool returned, in the ``request``-th request it got."""
        last = self.requests[request][-1]
        assert isinstance(last, ModelRequest)
        return {p.tool_name: p.content for p in last.parts if isinstance(p, ToolReturnPart)}

    def retry_prompts(self) -> list[RetryPromptPart]:
        return [
            part
            for messages in self.requests
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, RetryPromptPart)
        ]


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("starlette")
    yield from serve(tmp_path_factory.mktemp("pyd-http") / "guard.db")


@pytest.fixture(params=["memory", "sqlite", "http"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_backend(
    backend_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """``make_backend(policy=POLICY)``: a fresh agent on this test's backend."""
    stack: list[Iterator[Guarded]] = []
    url = request.getfixturevalue("http_url") if backend_kind == "http" else None

    def make(policy: dict[str, Any] = POLICY) -> Guarded:
        opened = open_backend(backend_kind, tmp_path, policy, url)
        stack.append(opened)
        return next(opened)

    yield make
    for opened in reversed(stack):
        for _ in opened:
            pass


@pytest.fixture
def backend(make_backend: Any) -> Guarded:
    return make_backend()  # type: ignore[no-any-return]
