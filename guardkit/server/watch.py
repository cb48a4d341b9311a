"""Long-poll support: wake waiting requests as soon as the engine decides something.

The engine calls ``Engine.listen`` callbacks after every approval, rejection, withdrawal or
termination; the watch turns each into a pulse of an asyncio event on the server's loop. Waiters
also look again at least every ``fallback`` seconds, which covers decisions made by another
server process sharing the database.

``WaitSlots`` caps how many long-polls are held at once, per token and in all: a flood of
waiting requests (1,500 pushed ordinary latency tenfold) gets 429 with ``Retry-After`` instead.
A held wait occupies no worker thread while it waits; its re-reads share a few (``ServerLimits``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from guardkit.errors import TooManyWaits

__all__ = ["DecisionWatch", "WaitSlots"]

Listen = Callable[[Callable[[], None]], Callable[[], None]]


class DecisionWatch:
    def __init__(self, listen: Listen, *, fallback: float = 1.0) -> None:
        self.fallback = fallback
        self._listen = listen
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._unlisten: Callable[[], None] | None = None
        #: Set when the server begins to shut down: long-polls answer at once.
        self.stopping = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._unlisten = self._listen(self._decided)

    def stop(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None

    def release(self) -> None:
        """Shutdown began: wake every long-poll so it answers now (safe from a signal handler)."""
        self.stopping = True
        self._decided()

    def current(self) -> asyncio.Event:
        """The event the next decision sets; take it *before* looking at the state."""
        if self._event is None:
            self._event = asyncio.Event()
        return self._event

    async def wait(self, event: asyncio.Event, timeout: float) -> None:
        """Wait for ``event`` at most ``min(timeout, fallback)`` seconds."""
        try:
            await asyncio.wait_for(event.wait(), timeout=max(0.0, min(timeout, self.fallback)))
        except TimeoutError:
            return

    def _decided(self) -> None:
        # Called from whichever thread decided; the event belongs to the server's loop.
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._pulse)

    def _pulse(self) -> None:
        old, self._event = self._event, asyncio.Event()
        if old is not None:
            old.set()


class WaitSlots:
    """How many long-polls are held, per caller and in all (touched only on the event loop)."""

    def __init__(self, *, total: int, per_caller: int, retry_after: float = 2.0) -> None:
        self.total = total
        self.per_caller = per_caller
        self.retry_after = retry_after
        self._held: dict[str, int] = {}
        self._count = 0

    @contextmanager
    def take(self, caller: str) -> Iterator[None]:
        """Hold a slot for the block; ``TooManyWaits`` (429) when none is free."""
        mine = self._held.get(caller, 0)
        if mine >= self.per_caller or self._count >= self.total:
            whose = "this token's" if mine >= self.per_caller else "the server's"
            limit = self.per_caller if mine >= self.per_caller else self.total
            raise TooManyWaits(
                f"{whose} limit of {limit} waiting requests is reached: ask again in "
                f"{self.retry_after:g} s, or without ?wait=",
                self.retry_after,
            )
        self._held[caller] = mine + 1
        self._count += 1
        try:
            yield
        finally:
            self._count -= 1
            left = self._held[caller] - 1
            if left:
                self._held[caller] = left
            else:
                del self._held[caller]
