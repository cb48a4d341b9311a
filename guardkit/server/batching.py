"""Group commit: several guard operations in one store transaction, one fsync for all of them.

``SharedStore`` wraps any store so that, inside ``joined()``, every ``transaction()`` the engine
opens on the same thread joins the one already open. ``GroupCommitter`` runs queued operations on
one writer thread, as many as are waiting (up to ``max_batch``), inside one joined transaction;
each caller's future resolves only after the commit, so every decision is still durable before it
is returned. A caller on an event loop gets a future of that loop, and a batch's results reach the
loop in one call (one wake-up, instead of a thread's future chained to the loop's for each
operation). An operation refused before it wrote anything (an unknown action, a wrong state)
just gets its error; if one fails after writing, or the store fails, the whole batch is rolled
back and its operations run again one per transaction, so one caller's error never touches
another's result. A batch that committed and then failed (its witness refused the heads) is not
run again: each of its callers gets that error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, overload

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

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        current: _Joined | None = getattr(self._local, "joined", None)
        if current is not None:
            return current
        return self.inner.transaction(write=write)

    @contextmanager
    def joined(self) -> Iterator[Transaction]:
        """One write transaction that every nested ``transaction()`` on this thread joins."""
        current: _Joined | None = getattr(self._local, "joined", None)
        if current is not None:
            yield current.tx
            return
        with self.inner.transaction() as tx:
            self._local.joined = _Joined(tx)
            try:
                yield tx
            finally:
                self._local.joined = None

    def close(self) -> None:
        self.inner.close()


class _Joined:
    """The transaction open on this thread, entered again: leaving it commits nothing (a
    generator-based context manager costs every operation of a batch five more Python calls)."""

    __slots__ = ("tx",)

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx

    def __enter__(self) -> Transaction:
        return self.tx

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass(slots=True)
class _Job:
    fn: Callable[[], Any]
    #: Jobs run in order of this key (the agent id), so row locks are taken in a fixed order.
    key: str
    #: A thread's future, or (``loop`` set) a future of that event loop, resolved on it.
    future: Future[Any] | asyncio.Future[Any]
    loop: asyncio.AbstractEventLoop | None = None


class GroupCommitter:
    """One writer thread that commits queued operations in batches."""

    def __init__(self, store: SharedStore, *, max_batch: int = 64) -> None:
        self.store = store
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="guardkit-commit", daemon=True)
        self._started = False
        self._lock = threading.Lock()

    @overload
    def submit(self, fn: Callable[[], Any], key: str = "") -> Future[Any]: ...
    @overload
    def submit(
        self, fn: Callable[[], Any], key: str, loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[Any]: ...
    def submit(
        self, fn: Callable[[], Any], key: str = "", loop: asyncio.AbstractEventLoop | None = None
    ) -> Future[Any] | asyncio.Future[Any]:
        """Queue ``fn`` to run inside the next batch transaction; its future resolves on commit
        (a future of ``loop``, when given, resolved on that loop)."""
        if not self._started:
            with self._lock:
                if not self._started:
                    self._started = True
                    self._thread.start()
        job = _Job(fn, key, Future() if loop is None else loop.create_future(), loop)
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
        _settle(batch, self._outcomes(batch))

    def _outcomes(self, batch: list[_Job]) -> list[tuple[bool, Any]]:
        """Run the batch; ``(True, result)`` or ``(False, error)`` for each job, in order."""
        if len(batch) > 1:
            joined: Transaction | None = None
            try:
                with self.store.joined() as tx:
                    joined = tx
                    tx.prefetch(sorted({job.key for job in batch if job.key}))
                    return [_run_clean(job, tx) for job in batch]
            except BaseException as exc:  # noqa: BLE001 - rolled back; each job reruns alone below
                if joined is not None and joined.done:
                    # Committed, then not witnessed: nothing to run again, nothing to return.
                    return [(False, exc)] * len(batch)
                log.debug("batch of %d rolled back; running its operations one by one", len(batch))
        outcomes: list[tuple[bool, Any]] = []
        for job in batch:
            try:
                with self.store.joined():
                    outcomes.append((True, job.fn()))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                outcomes.append((False, exc))
        return outcomes


def _settle(batch: list[_Job], outcomes: list[tuple[bool, Any]]) -> None:
    """Resolve each job's future: a thread's here, a loop's in one call on that loop."""
    loops: dict[asyncio.AbstractEventLoop, list[tuple[Any, bool, Any]]] = {}
    for job, (ok, value) in zip(batch, outcomes, strict=True):
        if job.loop is not None:
            loops.setdefault(job.loop, []).append((job.future, ok, value))
        elif ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)
    for loop, results in loops.items():
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(_resolve, results)


def _resolve(results: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in results:
        if future.cancelled():
            continue  # its caller went away; the operation itself is committed
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _run_clean(job: _Job, tx: Transaction) -> tuple[bool, Any]:
    """Run a job inside the batch; a refusal that wrote nothing is its result, not the batch's."""
    before = tx.changes
    try:
        return True, job.fn()
    except GuardError as exc:
        if tx.changes != before or isinstance(exc, StoreError):
            raise
        return False, exc
