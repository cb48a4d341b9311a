"""Per-call overhead of the embedded guard: one request + report pair, against its floors.

Run: ``make bench`` or ``.venv/bin/python benchmarks/guard_overhead.py [--pairs N]``.

Each guard configuration is printed beside a floor measured in the same run with the same
pragmas: two raw SQLite transactions of one UPDATE and one INSERT each (the least a durable
request + report can write). Targets: ``full`` <= 1.3x its floor, ``normal`` <= 1.5x its floor,
``:memory:`` <= 30 us.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable

from guardkit import Guard
from guardkit.store.chain import Signer

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {"search": {"cost": 1}}}


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1e6, p99 * 1e6


def _time(fn: Callable[[int], None], pairs: int) -> tuple[float, float]:
    for i in range(min(200, pairs)):
        fn(i)
    samples = []
    for i in range(pairs):
        start = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - start)
    return _stats(samples)


def bare(pairs: int) -> tuple[float, float]:
    def tool(query: int) -> int:
        return query

    return _time(lambda i: tool(i), pairs)


def guarded(
    path: str, pairs: int, *, durability: str = "full", signing_key: str | None = None
) -> tuple[float, float]:
    with Guard(path, durability=durability, signing_key=signing_key) as guard:
        guard.create_agent("bench", POLICY)
        agent = guard.agent("bench")

        def pair(i: int) -> None:
            decision = agent.request("search", {"query": f"q{i}"})
            agent.report(decision["action_id"], "success")

        return _time(pair, pairs)


def floor(path: str, pairs: int, *, durability: str = "full") -> tuple[float, float]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        if path != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={durability.upper()}")
        conn.execute("CREATE TABLE s (id TEXT PRIMARY KEY, n INTEGER)")
        conn.execute("CREATE TABLE r (a TEXT, seq INTEGER, body TEXT, PRIMARY KEY (a, seq))")
        conn.execute("INSERT INTO s VALUES ('a', 0)")
        body = "x" * 300
        seq = iter(range(10**12))

        def pair(_: int) -> None:
            for _half in (0, 1):
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("UPDATE s SET n = n + 1 WHERE id = 'a'")
                conn.execute("INSERT INTO r VALUES ('a', ?, ?)", (next(seq), body))
                conn.execute("COMMIT")

        return _time(pair, pairs)
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    args = parser.parse_args()
    pairs = args.pairs
    key = Signer.generate_hex()
    work = tempfile.mkdtemp(prefix="guardkit-bench-", dir=os.getcwd())

    def db(name: str) -> str:
        return os.path.join(work, name)

    rows: list[tuple[str, tuple[float, float], tuple[float, float] | None]] = [
        ("bare function call", bare(pairs), None),
        (":memory:", guarded(":memory:", pairs), floor(":memory:", pairs)),
        (
            ":memory: + Ed25519",
            guarded(":memory:", pairs, signing_key=key),
            floor(":memory:", pairs),
        ),
        (
            "file, durability=normal",
            guarded(db("n.db"), pairs, durability="normal"),
            floor(db("nf.db"), pairs, durability="normal"),
        ),
        ("file, durability=full", guarded(db("f.db"), pairs), floor(db("ff.db"), pairs)),
        (
            "file, full + Ed25519",
            guarded(db("s.db"), pairs, signing_key=key),
            floor(db("sf.db"), pairs),
        ),
    ]
    print(f"request + report pairs: {pairs} per row; times in microseconds\n")
    print(
        f"{'configuration':<26}{'median':>9}{'p99':>9}{'floor med':>11}{'floor p99':>11}"
        f"{'ratio':>8}"
    )
    for name, (med, p99), base in rows:
        if base is None:
            print(f"{name:<26}{med:>9.2f}{p99:>9.2f}")
        else:
            print(
                f"{name:<26}{med:>9.1f}{p99:>9.1f}{base[0]:>11.1f}{base[1]:>11.1f}"
                f"{med / base[0]:>7.2f}x"
            )
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    os.rmdir(work)


if __name__ == "__main__":
    main()
