"""Which agent guard a guarded call asks when none is passed: ``use_agent`` and ``current_agent``.

The agent a guarded tool asks is, in order: the one passed to the decorator (``guard=`` or
``agent.tool(...)``), the innermost ``with use_agent(...)`` block of the current thread or asyncio
task, the process-wide default set by a plain ``use_agent(...)`` call, then one configured by the
environment (``GUARDKIT_AGENT``..., see ``guardkit.configure``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar, Token

from guardkit._fallback import factory
from guardkit.errors import NoAgentConfigured
from guardkit.protocols import AgentGuard

__all__ = ["current_agent", "set_fallback", "use_agent"]

_scoped: ContextVar[AgentGuard | None] = ContextVar("guardkit_agent", default=None)
_process_default: list[AgentGuard | None] = [None]


class _AgentScope:
    """What ``use_agent`` returns: already the process default; a scoped one inside ``with``."""

    def __init__(self, agent: AgentGuard, previous: AgentGuard | None) -> None:
        self._agent = agent
        self._previous = previous
        self._tokens: list[Token[AgentGuard | None]] = []

    def __enter__(self) -> AgentGuard:
        # Used as a context manager, the call must not leak a process-wide default: undo it and
        # scope the agent to this thread or task instead.
        if _process_default[0] is self._agent:
            _process_default[0] = self._previous
        self._tokens.append(_scoped.set(self._agent))
        return self._agent

    def __exit__(self, *exc: object) -> None:
        _scoped.reset(self._tokens.pop())


def use_agent(agent: AgentGuard) -> _AgentScope:
    """Set the agent that ``@guardkit.tool()`` without ``guard=`` asks.

    A plain call sets the process-wide default; ``with use_agent(agent):`` scopes it to the block
    (per thread and per asyncio task) and leaves the process default as it was::

        guardkit.use_agent(guard.agent("bot"))
        with guardkit.use_agent(guard.agent("reviewer")):
            review(draft)
    """
    if not isinstance(agent, AgentGuard):
        raise TypeError(f"use_agent needs an agent guard (LocalAgent, AgentClient), got {agent!r}")
    previous = _process_default[0]
    _process_default[0] = agent
    return _AgentScope(agent, previous)


#: Builds the process default on first need when nothing was set (``guardkit`` installs the
#: one that reads ``GUARDKIT_AGENT`` and friends from the environment).
_fallback = factory
_fallback_lock = threading.Lock()


def set_fallback(factory: Callable[[], AgentGuard | None] | None) -> None:
    """Install what ``current_agent`` asks when no agent was set (None: nothing)."""
    _fallback[0] = factory


def current_agent(site: str = "tool call") -> AgentGuard:
    """The agent guarded calls ask now; raises ``NoAgentConfigured`` when there is none.

    In order: the innermost ``with use_agent(...)``, the process default (``use_agent(...)``),
    then the environment (``GUARDKIT_AGENT``...), which becomes the process default.
    """
    agent = _scoped.get()
    if agent is None:
        agent = _process_default[0]
    if agent is None and _fallback[0] is not None:
        with _fallback_lock:
            agent = _process_default[0]
            if agent is None:
                agent = _process_default[0] = _fallback[0]()
    if agent is None:
        raise NoAgentConfigured.for_site(site)
    return agent
