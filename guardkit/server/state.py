"""Everything one server process holds: the guard over a shared store, tokens, limits, queues."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread
from starlette.concurrency import run_in_threadpool

from guardkit._canonical import canonical_json, sha256_hex
from guardkit._tokens import agent_token, token_key
from guardkit.decisions import DecisionDict
from guardkit.errors import IdempotencyConflict
from guardkit.local import Guard
from guardkit.notify.links import link_key
from guardkit.notify.worker import Worker
from guardkit.protocols import IdemRecord
from guardkit.server.auth import TokenBook
from guardkit.server.batching import GroupCommitter, SharedStore
from guardkit.server.watch import DecisionWatch, WaitSlots
from guardkit.store.base import Store

__all__ = ["ServerLimits", "ServerState"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ServerLimits:
    #: Largest request body accepted (413 above it).
    max_body: int = (1 << 20) + (64 << 10)
    #: Longest ``?wait=`` on the action read, in seconds.
    max_wait: float = 60.0
    #: Long-polls held at once by one token, and by all (429 with ``Retry-After`` beyond).
    max_waits_per_token: int = 16
    max_waits: int = 256
    #: Worker threads the held long-polls' re-reads may use at once, so a crowd of waiters
    #: can't take the threads ordinary requests need.
    wait_workers: int = 4
    #: Most operations committed in one group-commit transaction.
    max_batch: int = 64
    #: Group-commit writer threads. One is best on every store measured so far: the engine's
    #: work holds the GIL, so a second writer only overlaps waits, and one writer's batches are
    #: bigger (PostgreSQL locks a batch's agents and reads their heads in two statements).
    writers: int = 1


@dataclass(slots=True)
class ServerState:
    guard: Guard
    store: SharedStore
    tokens: TokenBook
    limits: ServerLimits = field(default_factory=ServerLimits)
    #: Delivers the outbox while the server runs (None: no sink configured).
    notifier: Worker | None = None
    committers: list[GroupCommitter] = field(init=False)
    watch: DecisionWatch = field(init=False)
    waits: WaitSlots = field(init=False)
    _wait_reads: CapacityLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.committers = [
            GroupCommitter(self.store, max_batch=self.limits.max_batch)
            for _ in range(max(1, self.limits.writers))
        ]
        self.watch = DecisionWatch(self.guard.engine.listen)
        self.waits = WaitSlots(
            total=self.limits.max_waits, per_caller=self.limits.max_waits_per_token
        )
        self._wait_reads = CapacityLimiter(self.limits.wait_workers)

    @classmethod
    def open(
        cls,
        store: Store,
        *,
        admin_token: str,
        backend_token: str,
        limits: ServerLimits | None = None,
    ) -> ServerState:
        """Wrap ``store`` (already carrying its signer), verify every ledger, load the keys."""
        shared = SharedStore(store)
        guard = Guard(shared)
        tokens = TokenBook(
            admin_token=admin_token,
            backend_token=backend_token,
            agent_key=token_key(shared),
            link_key=link_key(shared),
        )
        return cls(guard=guard, store=shared, tokens=tokens, limits=limits or ServerLimits())

    def agent_token(self, agent_id: str) -> str:
        return agent_token(self.tokens.agent_key, agent_id)

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking (fsyncing) guard operation on the thread pool."""
        return await run_in_threadpool(fn, *args)

    async def wait_read(self, fn: Callable[..., T], *args: Any) -> T:
        """A long-poll's read: on the thread pool, but only ``wait_workers`` of them at once."""
        return await to_thread.run_sync(fn, *args, limiter=self._wait_reads)

    async def committed(self, fn: Callable[[], T], key: str) -> T:
        """Run a write through group commit; returns once its batch is durable."""
        # One agent's operations always go to the same writer, so they stay in order.
        committer = self.committers[zlib.crc32(key.encode()) % len(self.committers)]
        result: T = await committer.submit(fn, key, asyncio.get_running_loop())
        return result

    def idempotent_request(self, agent_id: str, key: str, body: dict[str, Any]) -> DecisionDict:
        """``request`` under an ``Idempotency-Key``; runs inside one (joined) transaction."""
        scoped = f"http:{agent_id}:{key}"
        digest = sha256_hex(canonical_json(body))
        engine = self.guard.engine
        with self.store.joined() as tx:
            engine.status(agent_id)  # 404 / 503 first, and the agent row is locked from here on
            record = tx.idem_get(scoped)
            if record is not None and record.result_json is not None:
                if record.payload_hash != digest:
                    raise IdempotencyConflict(
                        f"idempotency key {key!r} was used with a different request"
                    )
                stored: DecisionDict = json.loads(record.result_json)
                return stored
            decision = engine.request(
                agent_id,
                body["tool"],
                body.get("input"),
                body.get("cost"),
                approval_reason=body.get("approval_reason"),
            ).to_dict()
            now = engine.clock()
            tx.idem_put(
                IdemRecord(
                    key=scoped,
                    status="COMPLETED",
                    payload_hash=digest,
                    owner="guardkit.server",
                    lease_expires=now,
                    result_json=json.dumps(decision),
                    agent_id=agent_id,
                    action_id=str(decision["action_id"]),
                )
            )
            return decision

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.stop()
        for committer in self.committers:
            committer.close()
        self.guard.close()
