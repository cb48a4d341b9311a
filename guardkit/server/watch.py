"""Long-poll support: wake waiting requests when the engine's ``decided`` condition fires.

A daemon thread waits on ``Engine.decided`` and pulses an asyncio event on the server's loop.
Waiters also look again at least every ``fallback`` seconds, which covers decisions made by
another server process sharing the database and a notification that fell between two waits.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["DecisionWatch"]


class DecisionWatch:
    def __init__(self, condition: threading.Condition, *, fallback: float = 1.0) -> None:
        self.fallback = fallback
        self._condition = condition
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        #: Set when the server begins to shut down: long-polls answer at once.
        self.stopping = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._thread = threading.Thread(target=self._watch, name="guardkit-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        with self._condition:
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join()

    def release(self) -> None:
        """Shutdown began: wake every long-poll so it answers now (safe from a signal handler)."""
        self.stopping = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._pulse)

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

    def _pulse(self) -> None:
        old, self._event = self._event, asyncio.Event()
        if old is not None:
            old.set()

    def _watch(self) -> None:
        while not self._stopped.is_set():
            with self._condition:
                notified = self._condition.wait(self.fallback)
            if notified and not self._stopped.is_set() and self._loop is not None:
                self._loop.call_soon_threadsafe(self._pulse)
