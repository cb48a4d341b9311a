"""Per-call overhead of the embedded guard: one request + report pair, against its floors.

Run: ``make bench`` or ``.venv/bin/python benchmarks/guard_overhead.py [--pairs N] [--repeat R]``.

Each guard configuration is measured beside a floor with the same pragmas: two raw SQLite
transactions of one UPDATE and one INSERT each (the least a durable request + report can write).
The two are interleaved in blocks (guard, floor, guard, floor, ...) so that a busy machine slows
both alike, and the ratio is of their medians. ``--repeat`` runs the whole table again and prints
each ratio's spread. Targets (issues 13, 22): ``normal`` <= 1.5x its floor, ``full`` <= 1.2x,
``:memory:`` <= 20 us a pair, with every integrity check of the ledger on and the head witness
(``<db>.witness``, the default) inside the figure; the "no witness" rows show what it costs.
Ten rules and an input schema on the tool add <= 10 us a decision (issue 21; floor: the guard
without them).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager

from guardkit import Guard
from guardkit.store.chain import Signer

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {"search": {"cost": 1}}}
#: Ten rules on the tool, none of which matches the benchmark's input: every one is evaluated.
_TEN_RULES = [
    {"when": {"properties": {"query": {"const": "drop table"}}}, "effect": "deny", "reason": "r"},
    {"when": {"properties": {"query": {"pattern": "^rm "}}}, "effect": "deny", "reason": "r"},
    {"when": {"properties": {"query": {"maxLength": 1}}}, "effect": "deny", "reason": "r"},
    {"when": {"required": ["sql"]}, "effect": "requires_approval", "reason": "r"},
    {"when": {"properties": {"limit": {"minimum": 1000}}, "required": ["limit"]}, "effect": "deny",
     "reason": "r"},
    {"when": {"properties": {"query": {"enum": ["a", "b", "c"]}}}, "effect": "allow"},
    {"when": {"properties": {"site": {"not": {"pattern": "example\\.com$"}}}, "required": ["site"]},
     "effect": "deny", "reason": "r"},
    {"when": {"anyOf": [{"required": ["password"]}, {"required": ["token"]}]}, "effect": "deny",
     "reason": "r"},
    {"when": {"properties": {"query": {"type": "integer"}}}, "effect": "deny", "reason": "r"},
    {"when": {"type": "array"}, "effect": "deny", "reason": "r"},
]  # fmt: skip
RULES_POLICY = {
    **POLICY,
    "tools": {"search": {"cost": 1, "input_schema": {"type": "object"}, "rules": _TEN_RULES}},
}
Pair = Callable[[int], None]


@contextmanager
def guarded(
    path: str,
    *,
    durability: str = "full",
    key: str | None = None,
    witness: bool = True,
    policy: object = POLICY,
) -> Iterator[Pair]:
    chosen = "auto" if witness else None
    with Guard(path, durability=durability, signing_key=key, witness=chosen) as guard:
        guard.create_agent("bench", policy)
        agent = guard.agent("bench")

        def pair(i: int) -> None:
            decision = agent.request("search", {"query": f"q{i}"})
            agent.report(decision["action_id"], "success")

        yield pair


@contextmanager
def floor(path: str, *, durability: str = "full") -> Iterator[Pair]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
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

        yield pair


def bare() -> Iterator[Pair]:
    def tool(query: int) -> None:
        del query

    yield tool


def _block(fn: Pair, start: int, count: int, out: list[float]) -> None:
    clock = time.perf_counter
    for i in range(start, start + count):
        began = clock()
        fn(i)
        out.append(clock() - began)


def interleaved(a: Pair, b: Pair | None, pairs: int, block: int = 100) -> tuple[list[float], ...]:
    """Per-pair times of ``a`` and ``b``, measured in alternating blocks after a warm-up."""
    times_a: list[float] = []
    times_b: list[float] = []
    for fn in (a, b):
        if fn is not None:
            _block(fn, 0, min(200, pairs), [])
    done = 0
    while done < pairs:
        count = min(block, pairs - done)
        _block(a, 10**6 + done, count, times_a)
        if b is not None:
            _block(b, 10**6 + done, count, times_b)
        done += count
    return times_a, times_b


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered) * 1e6, p99 * 1e6


def table(pairs: int, work: str) -> dict[str, float]:
    key = Signer.generate_hex()
    runs: list[tuple[str, Callable[[], Iterator[Pair]], Callable[[], Iterator[Pair]] | None]] = [
        (":memory:", lambda: guarded(":memory:"), lambda: floor(":memory:")),
        (":memory: + Ed25519", lambda: guarded(":memory:", key=key), lambda: floor(":memory:")),
        (
            "file, durability=normal",
            lambda: guarded(f"{work}/n.db", durability="normal"),
            lambda: floor(f"{work}/nf.db", durability="normal"),
        ),
        (
            "normal, no witness",
            lambda: guarded(f"{work}/nw.db", durability="normal", witness=False),
            lambda: floor(f"{work}/nwf.db", durability="normal"),
        ),
        ("file, durability=full", lambda: guarded(f"{work}/f.db"), lambda: floor(f"{work}/ff.db")),
        (
            "full, no witness",
            lambda: guarded(f"{work}/fw.db", witness=False),
            lambda: floor(f"{work}/fwf.db"),
        ),
        (
            "file, full + Ed25519",
            lambda: guarded(f"{work}/s.db", key=key),
            lambda: floor(f"{work}/sf.db"),
        ),
    ]
    print(
        f"{'configuration':<26}{'median':>9}{'p99':>9}{'floor med':>11}{'floor p99':>11}"
        f"{'ratio':>8}"
    )
    (times, _) = interleaved(next(bare()), None, pairs)
    med, p99 = _stats(times)
    print(f"{'bare function call':<26}{med:>9.2f}{p99:>9.2f}")
    ratios: dict[str, float] = {}
    for name, guard_of, floor_of in runs:
        assert floor_of is not None
        with guard_of() as pair, floor_of() as base:
            times, base_times = interleaved(pair, base, pairs)
        (med, p99), (bmed, bp99) = _stats(times), _stats(base_times)
        ratios[name] = med / bmed
        ratios[name + " (us)"] = med
        print(f"{name:<26}{med:>9.1f}{p99:>9.1f}{bmed:>11.1f}{bp99:>11.1f}{med / bmed:>7.2f}x")
    # Issue 21: ten rules and an input schema on the tool, against the same guard without them.
    with guarded(":memory:", policy=RULES_POLICY) as pair, guarded(":memory:") as base:
        times, base_times = interleaved(pair, base, pairs)
    (med, p99), (bmed, bp99) = _stats(times), _stats(base_times)
    name = ":memory: + 10 rules"
    ratios[name + " added (us)"] = med - bmed
    print(
        f"{name:<26}{med:>9.1f}{p99:>9.1f}{bmed:>11.1f}{bp99:>11.1f}{med / bmed:>7.2f}x"
        f"   (floor: the same guard without rules; {med - bmed:+.1f} us a decision, target <= 10)"
    )
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1, help="run the table this many times")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="guardkit-bench-", dir=os.getcwd())
    print(f"request + report pairs: {args.pairs} per row; times in microseconds")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    results = []
    for run in range(args.repeat):
        if args.repeat > 1:
            print(f"-- run {run + 1} of {args.repeat}")
        results.append(table(args.pairs, work))
    os.rmdir(work)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.repeat > 1:
        print("\nspread over the runs (min / median / max):")
        for name in results[0]:
            values = sorted(r[name] for r in results)
            unit = "" if name.endswith("(us)") else "x"
            print(
                f"  {name:<31}{values[0]:>8.2f}{unit} {statistics.median(values):>8.2f}{unit} "
                f"{values[-1]:>8.2f}{unit}"
            )


if __name__ == "__main__":
    main()
