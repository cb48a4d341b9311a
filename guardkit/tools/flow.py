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
import functools
import inspect
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from guardkit.errors import GuardFailed, StoreError
from guardkit.protocols import AgentGuard, AsyncAgentGuard, implements

__all__ = ["Flow", "Op", "adrive", "drive", "stops_on_failure"]

T = TypeVar("T")

#: The agent methods a step may ask for; ``call`` runs a blocking function of ours (a store
#: transaction, a DNS lookup) that ``adrive`` moves to a worker thread; ``run`` runs the user's
#: code (a model turn, a tool body), which ``adrive`` awaits when it is a coroutine function and
#: otherwise runs in a worker thread (it may block).
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
    "run",
]


@dataclass(frozen=True, slots=True)
class Op:
    """One thing a step needs done: an agent method and its arguments, or a blocking call."""

    name: OpName
    args: tuple[Any, ...] = ()
    func: Callable[..., Any] | None = None
    #: Keyword arguments of the agent method (``fault=`` of a report).
    options: Mapping[str, Any] | None = None


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


@dataclass(frozen=True, slots=True)
class _Done:
    value: Any


def _resume(flow: Flow[Any], send: Any, error: BaseException | None) -> Op | _Done:
    """The flow's next op, or its result once it returns."""
    try:
        return flow.send(send) if error is None else flow.throw(error)
    except StopIteration as stop:
        return _Done(stop.value)


def drive(flow: Flow[T], agent: AgentGuard) -> T:
    """Run ``flow`` to its end with ``agent``'s blocking calls; returns what it returns."""
    step = _resume(flow, None, None)
    while isinstance(step, Op):
        try:
            if step.func is not None:
                answer = step.func(*step.args)
            else:
                answer = getattr(agent, step.name)(*step.args, **(step.options or {}))
        except BaseException as exc:  # noqa: BLE001 - handed back to the step that asked
            step = _resume(flow, None, exc)
        else:
            step = _resume(flow, answer, None)
    return step.value  # type: ignore[no-any-return]


async def adrive(flow: Flow[T], agent: AgentGuard) -> T:
    """Run ``flow`` to its end from ``async`` code; the event loop never waits on the guard.

    An agent with the async API (``AsyncAgentGuard``) is awaited; any other agent guard's calls
    (and an async agent's calls it has no ``async`` twin for), and every blocking ``call``, run
    in a worker thread.
    """
    native = implements(agent, AsyncAgentGuard)
    step = _resume(flow, None, None)
    while isinstance(step, Op):
        try:
            answer = await _answer(step, agent, native)
        except BaseException as exc:  # noqa: BLE001 - handed back to the step that asked
            step = _resume(flow, None, exc)
        else:
            step = _resume(flow, answer, None)
    return step.value  # type: ignore[no-any-return]


async def _answer(op: Op, agent: AgentGuard, native: bool) -> Any:
    if op.func is not None:
        if op.name == "run" and _is_async(op.func):
            return await op.func(*op.args)
        answer = await asyncio.to_thread(op.func, *op.args)
        if op.name == "run" and inspect.isawaitable(answer):  # a sync wrapper of an async def
            return await answer
        return answer
    if native and hasattr(agent, _ASYNC_NAMES[op.name]):
        return await getattr(agent, _ASYNC_NAMES[op.name])(*op.args, **(op.options or {}))
    method = getattr(agent, op.name)
    return await asyncio.to_thread(functools.partial(method, **(op.options or {})), *op.args)


def _is_async(func: Callable[..., Any]) -> bool:
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func)


@contextmanager
def stops_on_failure(site: str) -> Iterator[None]:
    """A ``StoreError`` of the guard (store or server failed) as ``GuardFailed``: the agent stops.

    Wraps a call site's guard conversations (never the user's code), so an ``except Exception``
    around the call site does not hand "internal error" to the model and go on unrecorded.
    """
    try:
        yield
    except StoreError as exc:
        raise GuardFailed.at(site, exc) from exc
