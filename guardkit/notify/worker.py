"""The delivery worker: one thread per sink, delivering the outbox at least once.

Each pass enrols new events for the sink, claims the due ones under a lease, checks each against
the ledger (``guardkit.notify.check``), sends it and marks it delivered, or failed and due again
after an exponential back-off (``backoff * 2**(attempt-1)``, capped at ``max_backoff``, with
jitter so many stores don't retry in step). A worker killed mid-delivery (``kill -9``) leaves
its claims to expire after ``lease`` seconds; whoever claims them next sends them again, with
the same event id, so a receiver that drops repeats sees each event exactly once. Events are
never dropped: one that keeps failing keeps its row and is retried at the longest back-off.

A sink may take only some event types (``events``): the others are enrolled settled, never
sent. Every ``prune_every`` seconds the first sink's thread deletes the events every sink
settled more than ``retention`` seconds ago (``deliveries.prune``); undelivered ones stay.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from guardkit.errors import DeliveryFailed, GuardError
from guardkit.notify.check import mismatch
from guardkit.notify.event import Delivery
from guardkit.notify.links import claims_for, mint
from guardkit.notify.sinks import Sink
from guardkit.store import deliveries
from guardkit.store.base import Store

__all__ = ["DeliverySettings", "Worker"]

log = logging.getLogger("guardkit.notify")

#: Every this many passes, enrolment looks at the whole outbox.
_FULL_EVERY = 600


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliverySettings:
    """How the worker retries and polls (seconds)."""

    #: The wait before the first retry; each further retry waits twice as long.
    backoff: float = 2.0
    #: The longest wait between two attempts.
    max_backoff: float = 600.0
    #: How long a claim lasts: a worker that dies holding one leaves it this long.
    lease: float = 60.0
    #: How often a sink with nothing due looks for new events.
    poll: float = 1.0
    #: Events claimed (and marked) at once.
    batch: int = 100
    #: Delivered events older than this are deleted from the outbox (0: kept forever).
    retention: float = 30 * 86400.0
    #: How often the worker looks for events to delete.
    prune_every: float = 300.0

    def __post_init__(self) -> None:
        if not 0 < self.backoff <= self.max_backoff:
            raise ValueError("backoff must be > 0 and at most max_backoff")
        if self.retention < 0 or self.prune_every <= 0:
            raise ValueError("retention must be >= 0 seconds, prune_every > 0")
        if self.lease <= 0 or self.poll <= 0 or self.batch < 1:
            raise ValueError("lease and poll must be > 0, batch >= 1")

    def retry_in(self, attempt: int) -> float:
        """Seconds before the attempt after ``attempt`` (1-based): between half and all of
        ``backoff * 2**(attempt-1)``, capped."""
        delay: float = min(self.max_backoff, self.backoff * 2.0 ** min(attempt - 1, 40))
        return delay * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not a secret


class Worker:
    """Deliver ``store``'s outbox to ``sinks``.

    ``worker.start()`` runs it in the background (``guardkit serve`` does), ``worker.stop()``
    lets each sink finish the event it is sending; ``worker.deliver_due(sink)`` is one pass.

    >>> from guardkit.store import open_store
    >>> worker = Worker(open_store(":memory:"), [])
    """

    def __init__(
        self,
        store: Store,
        sinks: Sequence[Sink],
        *,
        settings: DeliverySettings | None = None,
        console_url: str | None = None,
        link_key: bytes | None = None,
        link_ttl: float = 3600.0,
        events: Mapping[str, Collection[str]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        names = [sink.name for sink in sinks]
        if len(set(names)) != len(names):
            raise ValueError(f"two sinks share a name: {names}")
        self.store = store
        self.sinks = list(sinks)
        self.settings = settings or DeliverySettings()
        self.console_url = console_url
        #: With a key (and a console URL), each pending approval's message carries a signed
        #: link to decide it, valid ``link_ttl`` seconds at most (``guardkit.notify.links``).
        self.link_key = link_key
        self.link_ttl = link_ttl
        #: Sink name -> the event types it takes (a sink not named takes every type).
        self.events = {name: frozenset(types) for name, types in (events or {}).items()}
        self._pruned_at = float("-inf")
        self.clock = clock
        #: Who holds a claim: unique per worker, readable in the database.
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._wake = threading.Condition()
        self._woken = False
        self._threads: list[threading.Thread] = []

    # -- one pass --------------------------------------------------------------------------------

    def deliver_due(self, sink: Sink, *, full: bool = False) -> int:
        """Enrol, claim, check and send what is due for ``sink``; returns the events handled.

        A pass costs three transactions whatever its size (claim, check, mark): a crash
        between a send and the mark sends that event again, which the event id makes safe.
        ``full`` enrols every event the sink lacks, not only those after its newest.
        """
        settings = self.settings
        with self.store.transaction() as tx:
            types = self.events.get(sink.name)
            deliveries.enrol(tx, sink.name, full=full, types=types, now=self.clock())
            claimed = deliveries.claim(
                tx, sink.name, self.owner, self.clock(), settings.lease, settings.batch
            )
        if not claimed:
            return 0
        ready: list[tuple[deliveries.Claimed, Delivery | None, str | None]] = []
        with self.store.transaction(write=False) as tx:
            for item in claimed:
                try:
                    delivery = Delivery(item.body, item.attempts, self.console_url)
                    wrong = mismatch(tx, delivery.event)
                    if wrong is None and self.link_key is not None and self.console_url:
                        claims = claims_for(tx, delivery.event, sink.name, self.link_ttl)
                        if claims is not None:
                            token = mint(self.link_key, claims)
                            delivery = Delivery(item.body, item.attempts, self.console_url, token)
                except (ValueError, KeyError, TypeError) as exc:
                    ready.append((item, None, f"bad event {item.id}: {exc}"))
                    continue
                problem = None if wrong is None else f"does not match the ledger: {wrong}"
                ready.append((item, delivery, problem and f"event {item.id} {problem}"))
        results: list[tuple[deliveries.Claimed, str | None]] = []
        for item, prepared, refused in ready:
            if self._stop.is_set():
                break
            error = refused
            if prepared is not None and error is None:
                try:
                    sink.send(prepared)
                except DeliveryFailed as exc:
                    error = exc.message
            if error is not None:
                log.warning("notification %s to %s failed: %s", item.id, sink.name, error)
            results.append((item, error))
        self._mark(sink, results, stopped=len(results) < len(claimed))
        return len(results)

    def prune(self) -> int:
        """Delete the events every sink settled over ``retention`` seconds ago; how many."""
        if self.settings.retention <= 0:
            return 0
        before = self.clock() - self.settings.retention
        pruned = 0
        while True:
            with self.store.transaction() as tx:
                done = deliveries.prune(tx, before)
            pruned += done
            if done == 0 or self._stop.is_set():
                return pruned

    def _mark(
        self, sink: Sink, results: list[tuple[deliveries.Claimed, str | None]], *, stopped: bool
    ) -> None:
        now = self.clock()
        with self.store.transaction() as tx:
            for item, error in results:
                if error is None:
                    deliveries.delivered(tx, sink.name, item.seq, self.owner, now)
                else:
                    retry_at = now + self.settings.retry_in(item.attempts)
                    deliveries.failed(tx, sink.name, item.seq, self.owner, now, retry_at, error)
            if stopped:
                deliveries.release(tx, sink.name, self.owner)

    # -- in the background -----------------------------------------------------------------------

    def start(self) -> None:
        for sink in self.sinks:
            thread = threading.Thread(
                target=self._run, args=(sink,), name=f"guardkit-notify-{sink.name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        """Look for new events now, not at the next poll."""
        with self._wake:
            self._woken = True
            self._wake.notify_all()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop after the events being sent; unsent claims are given back."""
        self._stop.set()
        self.wake()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []
        for sink in self.sinks:
            sink.close()

    def _run(self, sink: Sink) -> None:
        passes = 0
        while not self._stop.is_set():
            try:
                # Now and then every event is looked at (see ``deliveries.enrol``).
                handled = self.deliver_due(sink, full=passes % _FULL_EVERY == 0)
                passes += 1
                due = self._pruned_at + self.settings.prune_every
                if sink is self.sinks[0] and self.clock() >= due:
                    self._pruned_at = self.clock()
                    if pruned := self.prune():
                        log.info("pruned %d delivered notification events", pruned)
            except GuardError as exc:  # the store failed: say so, try again at the next poll
                log.warning("notifications to %s: %s", sink.name, exc.message)
                handled = 0
            if handled:
                continue
            with self._wake:
                if not self._woken:
                    self._wake.wait(self.settings.poll)
                self._woken = False
