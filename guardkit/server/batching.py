"""Group commit: several guard operations in one store transaction, one fsync for all of them.

``SharedStore`` wraps any store so that, inside ``joined()``, every ``transaction()`` the engine
opens on the same thread joins the one already open. ``GroupCommitter`` runs queued operations on
one writer thread, as many as are waiting (up to ``max_batch``), inside one joined transaction;
each caller's future resolves only after the commit, so every decision is still durable before it
is returned. An operation refused before it wrote anything (an unknown action, a wrong state)
just gets its error; if one fails after writing, or the store fails, the whole batch is rolled
back and its operations run again one per transaction, so one caller's error never touches
another's result. A batch that committed and then failed (its witness refused the heads) is not
run again: each of its callers gets that error.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from guardkit.errors import GuardError, StoreError
from guardkit.store.base import Store, Transaction

__all__ = ["GroupCommitter", "SharedStore"]

log = logging.getLogger("guardkit.server")


class SharedStore(Store):
    """A store whose transactions can be joined by everything a thread does in ``joined()``."""

    def __init__(self, inner: Store) -> None:
        super().__init__(inner.signer)
        self.inner = inner
        self.location = inner.location
        self.blocks = inner.blocks
        self.parallel_writers = inner.parallel_writers
        # What the store knows and refuses is the inner store's.
        self.trusted_key = inner.trusted_key
        self.quarantined = inner.quarantined
        self.states = inner.states
        self.actions = inner.actions
        self.seals = inner.seals
        self._local = threading.local()

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Transaction]:
        current: Transaction | None = getattr(self._local, "tx", None)
        if current is not None:
            yield current
            return
        with self.inner.transaction(write=write) as tx:
            yield tx

    @contextmanager
    def joined(self) -> Iterator[Transaction]:
        """One write transaction that every nested ``transaction()`` on this thread joins."""
        current: Transaction | None = getattr(self._local, "tx", None)
        if current is not None:
            yield current
            return
        with self.inner.transaction() as tx:
            self._local.tx = tx
            try:
                yield tx
            finally:
                self._local.tx = None

    def close(self) -> None:
        self.inner.close()


@dataclass(slots=True)
class _Job:
    fn: Callable[[], Any]
    #: Jobs run in order of this key (the agent id), so row locks are taken in a fixed order.
    key: str
    future: Future[Any] = field(default_factory=Future)


class GroupCommitter:
    """One writer thread that commits queued operations in batches."""

    def __init__(self, store: SharedStore, *, max_batch: int = 64) -> None:
        self.store = store
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="guardkit-commit", daemon=True)
        self._started = False
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any], key: str = "") -> Future[Any]:
        """Queue ``fn`` to run inside the next batch transaction; its future resolves on commit."""
        with self._lock:
            if not self._started:
                self._started = True
                self._thread.start()
        job = _Job(fn, key)
        self._queue.put(job)
        return job.future

    def close(self) -> None:
        """Finish every queued operation, then stop the writer thread."""
        with self._lock:
            if not self._started:
                return
            self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                batch.append(job)
            self._commit(sorted(batch, key=lambda job: job.key))
            if stop:
                return

    def _commit(self, batch: list[_Job]) -> None:
        if len(batch) > 1:
            joined: Transaction | None = None
            try:
                with self.store.joined() as tx:
                    joined = tx
                    tx.prefetch(sorted({job.key for job in batch if job.key}))
                    outcomes = [_run_clean(job, tx) for job in batch]
            except BaseException as exc:  # noqa: BLE001 - rolled back; each job reruns alone below
                if joined is not None and joined.done:
                    # Committed, then not witnessed: nothing to run again, nothing to return.
                    for job in batch:
                        job.future.set_exception(exc)
                    return
                log.debug("batch of %d rolled back; running its operations one by one", len(batch))
            else:
                for job, (ok, value) in zip(batch, outcomes, strict=True):
                    if ok:
                        job.future.set_result(value)
                    else:
                        job.future.set_exception(value)
                return
        for job in batch:
            try:
                with self.store.joined():
                    result = job.fn()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                job.future.set_exception(exc)
            else:
                job.future.set_result(result)


def _run_clean(job: _Job, tx: Transaction) -> tuple[bool, Any]:
    """Run a job inside the batch; a refusal that wrote nothing is its result, not the batch's."""
    before = tx.changes
    try:
        return True, job.fn()
    except GuardError as exc:
        if tx.changes != before or isinstance(exc, StoreError):
            raise
        return False, exc
