"""Binding a tool call: to its agent guard (``use_agent``/``current_agent``) and to its arguments.

The agent a guarded tool asks is, in order: the one passed to the decorator (``guard=`` or
``agent.tool(...)``), the innermost ``with use_agent(...)`` block of the current thread or asyncio
task, then the process-wide default set by a plain ``use_agent(...)`` call.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from guardkit.errors import NoAgentConfigured
from guardkit.protocols import AgentGuard

__all__ = ["CallShape", "bind_call", "current_agent", "jsonable", "use_agent"]

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


def current_agent() -> AgentGuard:
    """The agent guarded tools ask now; raises ``NoAgentConfigured`` when there is none."""
    agent = _scoped.get()
    if agent is None:
        agent = _process_default[0]
    if agent is None:
        raise NoAgentConfigured(
            "no agent guard is configured for this tool call: pass guard= to guardkit.tool, "
            "decorate with agent.tool(...), or call guardkit.use_agent(agent) first; "
            "nothing was run"
        )
    return agent


_SIMPLE = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plain:
    """A signature with only named parameters, bound without ``Signature.bind`` (2-3x faster)."""

    positional: tuple[str, ...]
    names: frozenset[str]
    defaults: dict[str, Any]

    @classmethod
    def of(cls, signature: inspect.Signature) -> _Plain | None:
        params = list(signature.parameters.values())
        if any(p.kind not in _SIMPLE for p in params):
            return None
        return cls(
            positional=tuple(
                p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            ),
            names=frozenset(p.name for p in params),
            defaults={p.name: p.default for p in params if p.default is not p.empty},
        )

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The bound arguments, or None when the call is malformed (``Signature.bind`` says why)."""
        if len(args) > len(self.positional):
            return None
        out = dict(zip(self.positional, args, strict=False))
        for key, value in kwargs.items():
            if key in out or key not in self.names:
                return None
            out[key] = value
        if len(out) < len(self.names):
            for name in self.names - out.keys():
                if name not in self.defaults:
                    return None
                out[name] = self.defaults[name]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CallShape:
    """A tool's signature, read once at decoration time."""

    #: The signature as declared (for functions and static methods).
    full: inspect.Signature
    #: Without the first parameter (``self``/``cls``), for calls bound to an instance or class.
    bound: inspect.Signature
    plain_full: _Plain | None = None
    plain_bound: _Plain | None = None

    @classmethod
    def of(cls, func: Callable[..., Any]) -> CallShape:
        full = inspect.signature(func)
        bound = full.replace(parameters=list(full.parameters.values())[1:])
        return cls(full=full, bound=bound, plain_full=_Plain.of(full), plain_bound=_Plain.of(bound))


def bind_call(
    shape: CallShape, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Bind a call to the signature, defaults applied; raises ``TypeError`` as the call would."""
    plain = shape.plain_full if instance is None else shape.plain_bound
    if plain is not None:
        found = plain.bind(args, kwargs)
        if found is not None:
            return found
    signature = shape.full if instance is None else shape.bound
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def jsonable(value: Any) -> Any:
    """The JSON form recorded in the ledger: paths as strings, other objects by ``repr``."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return repr(value)
