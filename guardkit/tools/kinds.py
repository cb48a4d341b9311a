"""One wrapper per kind of tool function, chosen once at decoration time (wrapt's four arguments).

Each composes the same steps (``guardkit.tools.pipeline``), driven with the agent's blocking calls
for sync tools and its ``async`` calls for ``async`` ones; they differ only in how the body is
called: directly, awaited, or stepped item by item inside the runtime fence. A guard that fails
(its store can't be opened, read or written; its server can't be reached) raises ``GuardFailed``,
which stops the agent, instead of a ``StoreError`` an ``except Exception`` would hand to the model.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any, TypeVar

from guardkit.tools.flow import Flow, adrive, drive, stops_on_failure
from guardkit.tools.handoff import take_handoff
from guardkit.tools.pipeline import Call, Steps

__all__ = ["Wrapper", "kind_of", "wrapper_for"]

T = TypeVar("T")

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


def _drive(steps: Steps, flow: Flow[T], agent: Any) -> T:
    with stops_on_failure(f"call of the tool {steps.name!r}"):
        return drive(flow, agent)


async def _adrive(steps: Steps, flow: Flow[T], agent: Any) -> T:
    with stops_on_failure(f"call of the tool {steps.name!r}"):
        return await adrive(flow, agent)


def kind_of(func: Callable[..., Any]) -> str:
    if inspect.isasyncgenfunction(func):
        return "async generator"
    if inspect.iscoroutinefunction(func):
        return "async"
    if inspect.isgeneratorfunction(func):
        return "generator"
    return "sync"


def _sync(steps: Steps) -> Wrapper:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        handed = take_handoff()
        agent = steps.agent(handed)
        with steps.span(agent, handed):
            call = _drive(steps, steps.prepare(agent, handed, instance, args, kwargs), agent)
            replay = _drive(steps, steps.claim(call), agent)
            if replay is not None:
                return replay.value
            _drive(steps, steps.ask(call), agent)
            try:
                with steps.fenced(call):
                    result = wrapped(*args, **kwargs)
            except BaseException as exc:
                _drive(steps, steps.failed(call, exc), agent)
                raise
            _drive(steps, steps.succeeded(call, result), agent)
            return result

    return wrapper


def _async(steps: Steps) -> Wrapper:
    async def wrapper(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        handed = take_handoff()
        agent = steps.agent(handed)
        with steps.span(agent, handed):
            call = await _adrive(steps, steps.prepare(agent, handed, instance, args, kwargs), agent)
            replay = await _adrive(steps, steps.claim(call), agent)
            if replay is not None:
                return replay.value
            await _adrive(steps, steps.ask(call), agent)
            try:
                with steps.fenced(call):
                    result = await wrapped(*args, **kwargs)
            except BaseException as exc:
                await _adrive(steps, steps.failed(call, exc), agent)
                raise
            await _adrive(steps, steps.succeeded(call, result), agent)
            return result

    return wrapper


def _generator(steps: Steps) -> Wrapper:
    def wrapper(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Generator[Any, None, Any]:
        # For a stream the span covers the decision; the items are the consumer's business.
        handed = take_handoff()
        agent = steps.agent(handed)
        with steps.span(agent, handed):
            call = _drive(steps, steps.prepare(agent, handed, instance, args, kwargs), agent)
            _drive(steps, steps.ask(call), agent)
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
        _drive(steps, steps.succeeded(call, None, detail="closed by the consumer"), call.agent)
        raise
    except BaseException as exc:
        _drive(steps, steps.failed(call, exc), call.agent)
        raise
    _drive(steps, steps.succeeded(call, None), call.agent)
    return result


def _async_generator(steps: Steps) -> Wrapper:
    async def wrapper(
        wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AsyncIterator[Any]:
        handed = take_handoff()
        agent = steps.agent(handed)
        with steps.span(agent, handed):
            call = await _adrive(steps, steps.prepare(agent, handed, instance, args, kwargs), agent)
            await _adrive(steps, steps.ask(call), agent)
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
            await _adrive(
                steps, steps.succeeded(call, None, detail="closed by the consumer"), agent
            )
            raise
        except BaseException as exc:
            await _adrive(steps, steps.failed(call, exc), agent)
            raise
        await _adrive(steps, steps.succeeded(call, None), agent)

    return wrapper


_WRAPPERS: dict[str, Callable[[Steps], Wrapper]] = {
    "sync": _sync,
    "async": _async,
    "generator": _generator,
    "async generator": _async_generator,
}


def wrapper_for(kind: str, steps: Steps) -> Wrapper:
    """The wrapt wrapper for a ``kind_of`` result."""
    return _WRAPPERS[kind](steps)
