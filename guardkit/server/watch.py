"""Long-poll support: wake waiting requests as soon as the engine decides something.

The engine calls ``Engine.listen`` callbacks after every approval, rejection, withdrawal or
termination; the watch turns each into a pulse of an asyncio event on the server's loop. Waiters
also look again at least every ``fallback`` seconds, which covers decisions made by another
server process sharing the database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["DecisionWatch"]

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
