"""Delivering the outbox: each event's delivery to each sink, claimed under a lease, in SQL.

A sink's worker enrols the events it has not seen (one ``deliveries`` row per event and sink),
claims the due ones for ``lease`` seconds (PostgreSQL skips rows another worker holds), and
marks each delivered or failed (retried at ``next_at``). A worker that dies holding a claim
leaves it to expire: another worker, or the same one restarted, claims it again, so every event
is delivered at least once. Marking checks the lease is still the worker's own, so a worker that
outlived its lease never overwrites the delivery another made. An event of a type the sink does
not take (its event filter) is enrolled as already settled, never sent: a row with ``delivered``
set and no attempt (``skipped`` in ``sink_stats``). ``prune`` deletes the events every sink has
settled before a cutoff; an event that cannot be delivered is never deleted: it stays, retried,
and is counted in ``sink_stats``.

Only the SQL stores deliver (the in-memory store has no other process to deliver for it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from guardkit.errors import StoreError
from guardkit.store.base import Transaction
from guardkit.store.sql import SQLTransaction

__all__ = [
    "PG_WINDOW",
    "Claimed",
    "SinkStats",
    "claim",
    "delivered",
    "enrol",
    "failed",
    "prune",
    "release",
    "sink_stats",
]


#: How far below the newest enrolled event PostgreSQL enrolment looks again (see ``enrol``).
PG_WINDOW = 1000


@dataclass(frozen=True, slots=True)
class Claimed:
    """One event claimed for one sink."""

    seq: int
    id: str
    type: str
    body: str
    #: Attempts so far, this one included.
    attempts: int


class SinkStats(TypedDict):
    """What ``guardkit status --notifications`` shows for one sink."""

    sink: str
    #: Events not yet delivered to it (retrying, or not yet tried).
    pending: int
    delivered: int
    #: Events of types the sink does not take (its event filter): settled without sending.
    skipped: int
    attempts: int
    failures: int
    last_error: str | None
    last_error_at: float | None
    last_delivered_at: float | None


def _sql(tx: Transaction) -> SQLTransaction:
    if not isinstance(tx, SQLTransaction):
        raise StoreError(
            f"store {tx.store.location} cannot deliver notifications: open a SQLite file or a "
            "PostgreSQL database (the in-memory store has no outbox another process can read)"
        )
    return tx


def _q(tx: SQLTransaction, text: str) -> str:
    return tx.q.dialect.sql(text)


def enrol(
    tx: Transaction,
    sink: str,
    *,
    full: bool = False,
    types: Collection[str] | None = None,
    now: float = 0.0,
) -> int:
    """Add a delivery row for every event ``sink`` has none for; returns how many.

    Only events after the newest one enrolled are looked at, less a window on PostgreSQL
    (which may commit a lower seq after a higher one: a transaction still open while
    ``PG_WINDOW`` later events commit); ``full`` looks at every event. With ``types``, an event
    of any other type is enrolled settled at ``now`` with no attempt: it is never sent.
    """
    sql = _sql(tx)
    sql._run(_q(sql, "INSERT INTO sinks (sink) VALUES (?) ON CONFLICT (sink) DO NOTHING"), (sink,))
    after = -1
    if not full:
        row = sql._one(_q(sql, "SELECT max(event_seq) FROM deliveries WHERE sink = ?"), (sink,))
        # SQLite commits one writer at a time, so seqs commit in order there.
        window = PG_WINDOW if sql.q.dialect.name == "postgresql" else 0
        after = -1 if row is None or row[0] is None else int(row[0]) - window
    settled = "NULL"
    params: tuple[Any, ...] = (sink, after, sink)
    if types is not None:
        wanted = sorted(types)
        marks = ", ".join("?" for _ in wanted) or "NULL"
        settled = f"CASE WHEN o.type IN ({marks}) THEN NULL ELSE CAST(? AS DOUBLE PRECISION) END"
        params = (sink, *wanted, now, after, sink)
    return sql._run(
        _q(
            sql,
            "INSERT INTO deliveries (sink, event_seq, attempts, next_at, delivered) "
            f"SELECT ?, o.seq, 0, 0, {settled} FROM outbox o WHERE o.seq > ? AND NOT EXISTS "
            "(SELECT 1 FROM deliveries d WHERE d.sink = ? AND d.event_seq = o.seq) "
            "ON CONFLICT (sink, event_seq) DO NOTHING",
        ),
        params,
    )


def claim(
    tx: Transaction, sink: str, owner: str, now: float, lease: float, limit: int
) -> list[Claimed]:
    """Claim up to ``limit`` due deliveries for ``lease`` seconds, oldest first."""
    sql = _sql(tx)
    skip = " FOR UPDATE SKIP LOCKED" if sql.q.dialect.name == "postgresql" else ""
    until = now + lease
    sql._run(
        _q(
            sql,
            "UPDATE deliveries SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 "
            "WHERE sink = ? AND event_seq IN (SELECT event_seq FROM deliveries WHERE sink = ? "
            "AND delivered IS NULL AND next_at <= ? AND (lease_until IS NULL OR lease_until <= ?) "
            f"ORDER BY event_seq LIMIT ?{skip})",
        ),
        (owner, until, sink, sink, now, now, limit),
    )
    rows: list[Sequence[Any]] = sql._all(
        _q(
            sql,
            "SELECT o.seq, o.id, o.type, o.body, d.attempts FROM deliveries d "
            "JOIN outbox o ON o.seq = d.event_seq WHERE d.sink = ? AND d.lease_owner = ? "
            "AND d.lease_until = ? AND d.delivered IS NULL ORDER BY o.seq",
        ),
        (sink, owner, until),
    )
    return [Claimed(int(r[0]), str(r[1]), str(r[2]), str(r[3]), int(r[4])) for r in rows]


def delivered(tx: Transaction, sink: str, seq: int, owner: str, now: float) -> bool:
    """Mark a claimed delivery done; False if the claim was no longer this worker's."""
    sql = _sql(tx)
    mine = sql._run(
        _q(
            sql,
            "UPDATE deliveries SET delivered = ?, lease_owner = NULL, lease_until = NULL, "
            "last_error = NULL WHERE sink = ? AND event_seq = ? AND lease_owner = ? "
            "AND delivered IS NULL",
        ),
        (now, sink, seq, owner),
    )
    sql._run(
        _q(
            sql,
            "UPDATE sinks SET attempts = attempts + 1, last_delivered_at = ? WHERE sink = ?",
        ),
        (now, sink),
    )
    return mine == 1


def failed(
    tx: Transaction, sink: str, seq: int, owner: str, now: float, retry_at: float, error: str
) -> None:
    """Record a failed attempt; the delivery is due again at ``retry_at``."""
    sql = _sql(tx)
    error = error[:2000]
    sql._run(
        _q(
            sql,
            "UPDATE deliveries SET next_at = ?, last_error = ?, lease_owner = NULL, "
            "lease_until = NULL WHERE sink = ? AND event_seq = ? AND lease_owner = ? "
            "AND delivered IS NULL",
        ),
        (retry_at, error, sink, seq, owner),
    )
    sql._run(
        _q(
            sql,
            "UPDATE sinks SET attempts = attempts + 1, failures = failures + 1, "
            "last_error = ?, last_error_at = ? WHERE sink = ?",
        ),
        (error, now, sink),
    )


def sink_stats(tx: Transaction) -> list[SinkStats]:
    """Every sink that ever delivered from this store, with its counters."""
    sql = _sql(tx)
    row = sql._one("SELECT count(*) FROM outbox")
    total = int(row[0]) if row else 0
    done: dict[str, int] = {}
    skipped: dict[str, int] = {}
    for r in sql._all(
        "SELECT sink, attempts = 0, count(*) FROM deliveries WHERE delivered IS NOT NULL "
        "GROUP BY sink, attempts = 0"
    ):
        (skipped if r[1] else done)[str(r[0])] = int(r[2])
    out: list[SinkStats] = []
    for r in sql._all(
        "SELECT sink, attempts, failures, last_error, last_error_at, last_delivered_at "
        "FROM sinks ORDER BY sink"
    ):
        sink = str(r[0])
        out.append(
            {
                "sink": sink,
                "pending": total - done.get(sink, 0) - skipped.get(sink, 0),
                "delivered": done.get(sink, 0),
                "skipped": skipped.get(sink, 0),
                "attempts": int(r[1]),
                "failures": int(r[2]),
                "last_error": r[3],
                "last_error_at": r[4],
                "last_delivered_at": r[5],
            }
        )
    return out


def release(tx: Transaction, sink: str, owner: str) -> None:
    """Give back the claims ``owner`` still holds (a worker stopping between deliveries)."""
    sql = _sql(tx)
    sql._run(
        _q(
            sql,
            "UPDATE deliveries SET lease_owner = NULL, lease_until = NULL "
            "WHERE sink = ? AND lease_owner = ? AND delivered IS NULL",
        ),
        (sink, owner),
    )


def prune(tx: Transaction, before: float, limit: int = 1000) -> int:
    """Delete up to ``limit`` events that every sink delivered (or skipped) before ``before``,
    with their delivery rows; returns how many. An event some sink has not settled, or that no
    sink has a row for, is kept."""
    sql = _sql(tx)
    rows = sql._all(
        _q(
            sql,
            "SELECT o.seq FROM outbox o WHERE EXISTS "
            "(SELECT 1 FROM deliveries d WHERE d.event_seq = o.seq) AND NOT EXISTS "
            "(SELECT 1 FROM sinks s WHERE NOT EXISTS (SELECT 1 FROM deliveries d "
            "WHERE d.sink = s.sink AND d.event_seq = o.seq AND d.delivered IS NOT NULL "
            "AND d.delivered < ?)) ORDER BY o.seq LIMIT ?",
        ),
        (before, limit),
    )
    seqs = [int(r[0]) for r in rows]
    if not seqs:
        return 0
    marks = ", ".join("?" for _ in seqs)
    sql._run(_q(sql, f"DELETE FROM deliveries WHERE event_seq IN ({marks})"), tuple(seqs))
    return sql._run(_q(sql, f"DELETE FROM outbox WHERE seq IN ({marks})"), tuple(seqs))
