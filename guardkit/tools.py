"""The tool decorator: ``guardkit.tool`` and ``agent.tool``, built on wrapt's ``FunctionWrapper``.

The target is classified once, at decoration time (sync, async, generator, async generator) and
gets the matching wrapper. Each call runs the same named steps: ``prepare`` (bind the arguments,
run the local checks, record a local denial), ``claim`` (idempotency), ``request`` and ``wait``
(ask the guard; a human may have to approve), run (fenced by the runtime hook when enabled),
then ``succeeded``/``failed`` (store the idempotent result, report the outcome).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any, ParamSpec, TypeVar, cast, overload

import wrapt

from guardkit._binding import CallShape, current_agent
from guardkit.checks.local import CheckSet
from guardkit.checks.steps import Call, Steps
from guardkit.idempotency import Idempotency
from guardkit.protocols import AgentGuard

__all__ = ["tool", "tool_decorator"]

P = ParamSpec("P")
R = TypeVar("R")
Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


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
        return tool_decorator()(name)
    return tool_decorator(
        name,
        guard=guard,
        cost=cost,
        wait_for_approval=wait_for_approval,
        approval_timeout=approval_timeout,
        poll=poll,
        idempotency=idempotency,
        paths=paths,
        egress=egress,
        provenance=provenance,
        runtime=runtime,
        output=output,
    )


def tool_decorator(
    name: str | None = None,
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
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``tool`` without the bare-decorator form, for callers that pass options through."""
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
    checks = CheckSet.from_arguments(
        paths=paths, egress=egress, provenance=provenance, runtime=runtime, output=output
    )

    def decorate(target: Callable[P, R]) -> Callable[P, R]:
        func = target.__func__ if isinstance(target, (classmethod, staticmethod)) else target
        if not callable(func):
            raise TypeError(f"guardkit.tool decorates functions, got {target!r}")
        kind = _kind(func)
        if idempotency is not None and kind in ("generator", "async generator"):
            raise TypeError("an idempotent tool must return a value it can store, not a stream")
        shape = CallShape.of(func)
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
        return cast("Callable[P, R]", wrapt.FunctionWrapper(target, _WRAPPERS[kind](steps)))

    return decorate


def _kind(func: Callable[..., Any]) -> str:
    if inspect.isasyncgenfunction(func):
        return "async generator"
    if inspect.iscoroutinefunction(func):
        return "async"
    if inspect.isgeneratorfunction(func):
        return "generator"
    return "sync"


def _sync(steps: Steps) -> Wrapper:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = steps.prepare(instance, args, kwargs)
        replay = steps.claim(call)
        if replay is not None:
            return replay.value
        if steps.request(call):
            steps.wait(call)
        return steps.run(call, wrapped, args, kwargs)

    return wrapper


def _async(steps: Steps) -> Wrapper:
    async def wrapper(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        call = steps.prepare(instance, args, kwargs)
        # Waiting (for a duplicate or a human) happens off the event loop.
        replay = (
            await asyncio.to_thread(steps.claim, call)
            if steps.claim_may_wait
            else steps.claim(call)
        )
        if replay is not None:
            return replay.value
        if steps.request(call):
            await asyncio.to_thread(steps.wait, call)
        try:
            with steps.fenced(call):
                result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            steps.failed(call, exc)
            raise
        steps.succeeded(call, result)
        return result

    return wrapper


def _generator(steps: Steps) -> Wrapper:
    def wrapper(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Generator[Any, None, Any]:
        call = steps.prepare(instance, args, kwargs)
        if steps.request(call):
            steps.wait(call)
        return (yield from _stream(steps, call, wrapped(*args, **kwargs)))

    return wrapper


def _stream(steps: Steps, call: Call, inner: Iterator[Any]) -> Generator[Any, None, Any]:
    # Step the body inside the fence, but yield outside it: between items the consumer runs.
    try:
        while True:
            with steps.fenced(call):
                try:
                    item = next(inner)
                except StopIteration as stop:
                    result = stop.value
                    break
            yield item
    except GeneratorExit:
        with steps.fenced(call):
            inner.close()  # type: ignore[attr-defined]
        steps.succeeded(call, None, detail="closed by the consumer")
        raise
    except BaseException as exc:
        steps.failed(call, exc)
        raise
    steps.succeeded(call, None)
    return result


def _async_generator(steps: Steps) -> Wrapper:
    async def wrapper(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]:
        call = steps.prepare(instance, args, kwargs)
        if steps.request(call):
            await asyncio.to_thread(steps.wait, call)
        inner = wrapped(*args, **kwargs)
        try:
            while True:
                with steps.fenced(call):
                    try:
                        item = await inner.__anext__()
                    except StopAsyncIteration:
                        break
                yield item
        except GeneratorExit:
            with steps.fenced(call):
                await inner.aclose()
            steps.succeeded(call, None, detail="closed by the consumer")
            raise
        except BaseException as exc:
            steps.failed(call, exc)
            raise
        steps.succeeded(call, None)

    return wrapper


_WRAPPERS: dict[str, Callable[[Steps], Wrapper]] = {
    "sync": _sync,
    "async": _async,
    "generator": _generator,
    "async generator": _async_generator,
}
