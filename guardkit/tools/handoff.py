"""Handing a model's tool call to a guarded tool, so the guard is asked once per call.

A loop or a framework integration that holds a model's tool call either asks the guard itself
(``request`` → wait → run → ``report``) or, when the tool is already guarded (``guarded(func)``),
hands the call over: inside ``with handoff(agent=..., cost=..., call_id=...) as taken:`` the
guarded tool uses that agent and cost, records one action, and leaves its ``action_id`` and the
guard's answer on ``taken``. Nested guarded calls inside the tool body are their own actions.

    with handoff(agent=agent, cost=12, call_id="call_1") as taken:
        result = search(query="invoices")     # a @guardkit.tool function
    taken.action_id                           # "act-7"
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from guardkit.decisions import DecisionName
from guardkit.protocols import AgentGuard

__all__ = ["Handoff", "current_action_id", "guarded", "handoff", "mark_guarded", "take_handoff"]


@dataclass(slots=True, kw_only=True)
class Handoff:
    """One tool call a caller hands to a guarded tool."""

    #: The agent to ask when the tool has no guard of its own.
    agent: AgentGuard | None = None
    #: The charge the caller computed, used when the tool declares no cost of its own.
    cost: Any = None
    #: The provider's id for the call (``call_...``), for the tool's span.
    call_id: str | None = None
    #: Filled in by the guarded tool: the action it was recorded under, and the guard's answer.
    action_id: str | None = None
    decision: DecisionName | None = None
    #: Whether a guarded tool took this call (the first one does; nested ones don't).
    taken: bool = False


_handoff: ContextVar[Handoff | None] = ContextVar("guardkit_handoff", default=None)
_current_action: ContextVar[str | None] = ContextVar("guardkit_action", default=None)
#: The wrapt wrapper functions of guarded tools (what ``guarded`` looks for).
_WRAPPERS: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()


@contextmanager
def handoff(
    *, agent: AgentGuard | None = None, cost: Any = None, call_id: str | None = None
) -> Iterator[Handoff]:
    """Let the next guarded tool called in this block ask the guard for this call."""
    taken = Handoff(agent=agent, cost=cost, call_id=call_id)
    token = _handoff.set(taken)
    try:
        yield taken
    finally:
        _handoff.reset(token)


def take_handoff() -> Handoff | None:
    """The call handed over to the guarded tool starting now, if any (once per handoff)."""
    found = _handoff.get()
    if found is None or found.taken:
        return None
    found.taken = True
    return found


def mark_guarded(wrapper: Callable[..., Any]) -> None:
    """Register a guarded tool's wrapt wrapper (done by ``guardkit.tool``)."""
    _WRAPPERS.add(wrapper)


def guarded(func: object) -> bool:
    """Whether calling ``func`` asks the guard itself: a ``guardkit.tool``/``agent.tool``
    function or method, possibly under decorators that keep ``__wrapped__``."""
    seen = 0
    while func is not None and seen < 32:
        wrapper = getattr(func, "_self_wrapper", None)
        if wrapper is not None and wrapper in _WRAPPERS:
            return True
        func = getattr(func, "__wrapped__", None)
        seen += 1
    return False


def current_action_id() -> str | None:
    """The action id of the guarded tool call running now, for backends that ``consume`` it.

    >>> def pay_invoice(invoice_id: str, amount: float) -> str:
    ...     return bank.pay(current_action_id(), invoice_id, amount)
    """
    return _current_action.get()


@contextmanager
def running(action_id: str) -> Iterator[None]:
    """Mark ``action_id`` as the call running in this block (for ``current_action_id``)."""
    token = _current_action.set(action_id)
    try:
        yield
    finally:
        _current_action.reset(token)
