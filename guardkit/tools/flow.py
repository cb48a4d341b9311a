"""Guard conversations written once, driven synchronously or from ``async`` code.

A step of a guarded call (ask, wait for a human, report...) is a generator that yields what it
needs from the guard as an ``Op`` and receives the answer back; ``drive`` answers with the
agent's blocking calls, ``adrive`` with its ``async`` twins (``arequest``, ``areport``...). A
failing call is thrown back into the generator, so the step's own ``try``/``except`` runs as
if it had made the call itself. The same code thus serves sync tools, async tools and both loops
without blocking an event loop::

    def ask(tool):
        decision = yield Op("request", (tool, {}, None))
        return decision["decision"]

    drive(ask("search"), agent)             # agent.request(...)
    await adrive(ask("search"), agent)      # await agent.arequest(...)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from guardkit.protocols import AgentGuard, AsyncAgentGuard

__all__ = ["Flow", "Op", "adrive", "drive"]

T = TypeVar("T")

#: The agent methods a step may ask for; ``call`` runs a blocking function (a store transaction,
#: a DNS lookup) that ``adrive`` moves to a worker thread.
OpName = Literal[
    "request",
    "request_approval",
    "report",
    "status",
    "action",
    "wait_for_approval",
    "deny_local",
    "withdraw",
    "call",
]


@dataclass(frozen=True, slots=True)
class Op:
    """One thing a step needs done: an agent method and its arguments, or a blocking call."""

    name: OpName
    args: tuple[Any, ...] = ()
    func: Callable[..., Any] | None = None


Flow = Generator[Op, Any, T]

_ASYNC_NAMES = {
    "request": "arequest",
    "request_approval": "arequest_approval",
    "report": "areport",
    "status": "astatus",
    "action": "aaction",
    "wait_for_approval": "await_for_approval",
    "deny_local": "adeny_local",
    "withdraw": "awithdraw",
}


def drive(flow: Flow[T], agent: AgentGuard) -> T:
    """Run ``flow`` to its end with ``agent``'s blocking calls; returns what it returns."""
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            op = flow.send(send) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            send = op.func(*op.args) if op.func is not None else getattr(agent, op.name)(*op.args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the step that asked
            error = exc


async def adrive(flow: Flow[T], agent: AgentGuard) -> T:
    """Run ``flow`` to its end from ``async`` code; the event loop never waits on the guard.

    An agent with the async API (``AsyncAgentGuard``) is awaited; any other agent guard's calls
    (and an async agent's calls it has no ``async`` twin for), and every blocking ``call``, run
    in a worker thread.
    """
    native = isinstance(agent, AsyncAgentGuard)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            op = flow.send(send) if error is None else flow.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            if op.func is not None:
                send = await asyncio.to_thread(op.func, *op.args)
            elif native and hasattr(agent, _ASYNC_NAMES[op.name]):
                send = await getattr(agent, _ASYNC_NAMES[op.name])(*op.args)
            else:
                send = await asyncio.to_thread(getattr(agent, op.name), *op.args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the step that asked
            error = exc
