"""What the Agents SDK tests share: a scripted ``agents.Model``, guards to run on, ledger reads.

The fixtures (``guards``, parametrized over the three guard kinds) reach a test module by import.
``ScriptedModel`` implements the SDK's own ``Model`` interface: each scripted reply is a final text
or a list of tool calls ``(name, arguments)``; every model input is kept, so a test reads what the
model was told (a tool's output, a denial sentence) in the next turn's input. No network: the
run config disables the SDK's trace export.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import guardkit

Call = tuple[str, dict[str, Any]]
Reply = str | list[Call]

ADMIN = "oa-admin-" + "a" * 32
BACKEND = "oa-backend-" + "b" * 32
POLICY: dict[str, Any] = {
    "budget": 200,
    "scar_limit": 50,
    "tools": {
        "llm_turn": {"cost": 1, "max_calls": 8},
        "lookup": {"cost": 1},
        "fetch": {"cost": 1},
        "flaky": {"cost": 1},
        "deploy": {"cost": 5, "requires_approval": True},
        "pay": {"cost": 2, "requires_approval": True},
        "note": {"cost": 1},
    },
}
RUN_CONFIG = RunConfig(tracing_disabled=True)


class ScriptedModel(Model):
    """Replays scripted replies through the SDK's ``Model`` interface and records every input."""

    def __init__(self, *replies: Reply, repeat: Reply | None = None) -> None:
        self.replies = list(replies)
        #: Played forever once the script runs out (a runaway agent), if given.
        self.repeat = repeat
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append(json.loads(json.dumps(items, default=str)))
        if self.replies:
            reply = self.replies.pop(0)
        elif self.repeat is not None:
            reply = self.repeat
        else:
            raise AssertionError("the model was called more often than scripted")
        return ModelResponse(output=_output(reply), usage=Usage(total_tokens=7), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model does not stream")

    def outputs(self, turn: int) -> dict[str, str]:
        """The tool outputs new in the input of model call ``turn`` (0-based), by call id."""
        earlier = self._outputs(turn - 1) if turn > 0 else {}
        return {k: v for k, v in self._outputs(turn).items() if k not in earlier}

    def _outputs(self, turn: int) -> dict[str, str]:
        return {
            item["call_id"]: str(item["output"])
            for item in self.inputs[turn]
            if item.get("type") == "function_call_output"
        }

    def only_output(self, turn: int) -> str:
        (found,) = self.outputs(turn).values()
        return found


def _output(reply: Reply) -> list[Any]:
    if isinstance(reply, str):
        text = ResponseOutputText(type="output_text", text=reply, annotations=[])
        return [
            ResponseOutputMessage(
                id="msg_" + uuid.uuid4().hex[:8],
                type="message",
                role="assistant",
                status="completed",
                content=[text],
            )
        ]
    return [
        ResponseFunctionToolCall(
            type="function_call",
            id="fc_" + uuid.uuid4().hex[:8],
            call_id="call_" + uuid.uuid4().hex[:8],
            name=name,
            arguments=json.dumps(args),
        )
        for name, args in reply
    ]


def make_agent(model: ScriptedModel, tools: list[Any], **options: Any) -> Agent[Any]:
    return Agent(name="worker", instructions="Use the tools.", model=model, tools=tools, **options)


async def run(agent: Agent[Any], task: Any = "Do the task.", **options: Any) -> Any:
    options.setdefault("run_config", RUN_CONFIG)
    return await Runner.run(agent, task, **options)


# -- guards: in-process over :memory: and a SQLite file, and AgentClient against a real server ---


class Guards:
    """One agent guard under test and an operator (``Guard`` or ``AdminClient``) beside it."""

    def __init__(self, kind: str, agent: Any, operator: Any, db: Path | None) -> None:
        self.kind = kind
        self.agent = agent
        self.operator = operator
        #: The SQLite file the CLI can approve in from another process, if any.
        self.db = db

    @property
    def agent_id(self) -> str:
        return str(self.agent.agent_id)

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        log = self.operator.log(self.agent_id)["records"]
        return [r["payload"] for r in log if kind is None or r["kind"] == kind]

    def requested(self, tool: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.records("action_requested") if tool is None or r["tool"] == tool]

    def outcomes(self, tool: str) -> list[tuple[str, str]]:
        """``(outcome, detail)`` of each reported action of ``tool``, in order."""
        ids = {r["action_id"] for r in self.requested(tool)}
        return [
            (r["status"], r["detail"]) for r in self.records("outcome") if r["action_id"] in ids
        ]

    def status(self) -> Any:
        return self.operator.status(self.agent_id)

    def play(self, main: Coroutine[Any, Any, Any]) -> Any:
        """``asyncio.run(main)``; an ``AgentClient``'s connections of that event loop are closed
        before the loop ends (``aclose``, as an application's ``main`` would)."""

        async def scoped() -> Any:
            try:
                return await main
            finally:
                if self.kind == "http":
                    await self.agent.aclose()

        return asyncio.run(scoped())

    def decide_when_pending(
        self, decide: Callable[[str], None], timeout: float = 20, after: float = 0.0
    ) -> threading.Thread:
        """In another thread, as a human at the console: ``decide(action_id)`` once one pends
        (and ``after`` seconds more)."""

        def watch() -> None:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                pending = self.operator.pending(self.agent_id)
                if pending:
                    time.sleep(after)
                    decide(pending[0]["action"]["action_id"])
                    return
                time.sleep(0.02)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    def approve(self, action_id: str) -> None:
        self.operator.approve(self.agent_id, action_id, "alice")

    def reject(self, action_id: str) -> None:
        self.operator.reject(self.agent_id, action_id, "alice", "not today")


@pytest.fixture(scope="module", name="oa_guard_server")
def guard_server_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("starlette")
    from guardkit.server import ServerState, create_app
    from guardkit.server.runner import serve_in_thread
    from guardkit.store import open_store

    path = tmp_path_factory.mktemp("oa-server") / "guard.db"
    state = ServerState.open(
        open_store(f"sqlite:///{path}"), admin_token=ADMIN, backend_token=BACKEND
    )
    with serve_in_thread(create_app(state)) as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "http"], name="guards")
def guards_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Guards]:
    """The same test in-process (``:memory:``, a SQLite file) and over HTTP (``AgentClient``)."""
    agent_id = "oa-" + uuid.uuid4().hex[:10]
    if request.param in ("memory", "sqlite"):
        db = tmp_path / "guard.db" if request.param == "sqlite" else None
        with guardkit.Guard(":memory:" if db is None else str(db)) as guard:
            guard.create_agent(agent_id, POLICY)
            yield Guards(request.param, guard.agent(agent_id), guard, db)
        return
    from guardkit.client import AdminClient, AgentClient

    url = request.getfixturevalue("oa_guard_server")
    with AdminClient(url, ADMIN) as admin:
        token = admin.create_agent(agent_id, POLICY)["token"]
        with AgentClient(url, agent_id, token) as agent:
            yield Guards("http", agent, admin, None)
