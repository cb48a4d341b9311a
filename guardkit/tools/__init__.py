"""The tool layer: ``guardkit.tool`` and ``agent.tool``, built on wrapt's ``FunctionWrapper``.

The target is classified once, at decoration time (sync, async, generator, async generator) and
gets the matching wrapper. Each call runs the same named steps: ``prepare`` (bind the arguments,
run the local checks, record a local denial), ``claim`` (idempotency), ``request`` and ``wait``
(ask the guard; a human may have to approve), run (fenced by the runtime hook when enabled),
then ``succeeded``/``failed`` (store the idempotent result, report the outcome).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast, overload

import wrapt

from guardkit.checks.checkset import CheckSet
from guardkit.idempotency import Idempotency
from guardkit.protocols import AgentGuard
from guardkit.tools.binding import CallShape
from guardkit.tools.handoff import mark_guarded
from guardkit.tools.kinds import kind_of, wrapper_for
from guardkit.tools.pipeline import Steps
from guardkit.tools.scope import current_agent

__all__ = ["tool"]

P = ParamSpec("P")
R = TypeVar("R")


@overload
def tool(name: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def tool(
    name: str | None = None,
    /,
    *,
    guard: AgentGuard | None = None,
    cost: Any = None,
    wait_for_approval: bool = True,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
    idempotency: Idempotency | None = None,
    paths: Any = None,
    egress: Any = None,
    provenance: Any = None,
    runtime: Any = None,
    output: str | None = None,
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(
    name: Any = None,
    /,
    *,
    guard: AgentGuard | None = None,
    cost: Any = None,
    wait_for_approval: bool = True,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
    idempotency: Idempotency | None = None,
    paths: Any = None,
    egress: Any = None,
    provenance: Any = None,
    runtime: Any = None,
    output: str | None = None,
) -> Any:
    """Guard a tool function: every call is requested first and runs only if allowed.

    ``cost`` is a number or a function of the bound arguments (a dict). ``guard`` defaults to
    ``guardkit.current_agent()`` at call time. A denial raises ``ToolDenied``; nothing runs.

    >>> @guardkit.tool(cost=lambda a: a["amount_cents"], paths={"path": PathRule(allow=["/srv"])})
    ... def pay(invoice: str, amount_cents: int, path: str) -> str: ...
    """
    if callable(name):
        return tool()(name)
    _check_options(name, guard, cost, idempotency)
    checks = CheckSet.from_arguments(
        paths=paths, egress=egress, provenance=provenance, runtime=runtime, output=output
    )

    def decorate(target: Callable[P, R]) -> Callable[P, R]:
        func = target.__func__ if isinstance(target, (classmethod, staticmethod)) else target
        if not callable(func):
            raise TypeError(f"guardkit.tool decorates functions, got {target!r}")
        kind = kind_of(func)
        if idempotency is not None and kind in ("generator", "async generator"):
            raise TypeError("an idempotent tool must return a value it can store, not a stream")
        shape = CallShape.of(func)
        unchecked = checks.unknown_arguments(shape.full.parameters)
        if unchecked:
            raise ValueError(
                f"check rules name arguments {func.__name__} doesn't take: {unchecked}"
            )
        if idempotency is not None:
            idempotency.check_target(func)
        if idempotency is not None and not callable(idempotency.key):
            unknown = set(idempotency.key) - set(shape.full.parameters)
            if unknown:
                raise ValueError(f"idempotency key names unknown arguments {sorted(unknown)}")
        steps = Steps(
            name=name or func.__name__,
            guard=guard,
            cost=cost,
            wait_for_approval=wait_for_approval,
            approval_timeout=approval_timeout,
            poll=poll,
            shape=shape,
            checks=checks,
            idempotency=idempotency,
            resolve_agent=current_agent,
        )
        wrapper = wrapper_for(kind, steps)
        mark_guarded(wrapper)
        return cast("Callable[P, R]", wrapt.FunctionWrapper(target, wrapper))

    return decorate


def _check_options(name: Any, guard: Any, cost: Any, idempotency: Any) -> None:
    """Misuse at decoration time is a plain ``TypeError``/``ValueError``, raised at once."""
    if name is not None and (not isinstance(name, str) or not 1 <= len(name) <= 128):
        raise ValueError("a tool name is a string of 1-128 characters")
    if (
        cost is not None
        and not callable(cost)
        and (isinstance(cost, bool) or not isinstance(cost, (int, float)))
    ):
        raise TypeError(f"cost must be a number or a function of the arguments, got {cost!r}")
    if guard is not None and not isinstance(guard, AgentGuard):
        raise TypeError(f"guard must be an agent guard (LocalAgent, AgentClient), got {guard!r}")
    if idempotency is not None and not isinstance(idempotency, Idempotency):
        raise TypeError("idempotency must be an Idempotency(...)")
