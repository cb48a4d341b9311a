"""One wrapper per kind of tool function, chosen once at decoration time (wrapt's four arguments).

Each composes the same steps (``guardkit.checks.steps``); they differ only in how the body is
called: directly, awaited, or stepped item by item inside the runtime fence.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any

from guardkit.checks.steps import Call, Steps

__all__ = ["Wrapper", "kind_of", "wrapper_for"]

Wrapper = Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], Any]


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
        with steps.span():
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
        with steps.span():
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
        # For a stream the span covers the decision; the items are the consumer's business.
        with steps.span():
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
        with steps.span():
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


def wrapper_for(kind: str, steps: Steps) -> Wrapper:
    """The wrapt wrapper for a ``kind_of`` result."""
    return _WRAPPERS[kind](steps)
