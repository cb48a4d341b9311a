"""Server throughput: request+report pairs per second and p50/p99 latency, side by side.

Runs, in one go: the in-process guard (``LocalAgent``), and the HTTP server (a separate
``python -m guardkit.server`` process) over SQLite (durability=full) and PostgreSQL, each with 1
and 8 concurrent clients (threads, one agent each, one keep-alive connection each). Every
configuration then checks that nothing was lost: the ledger holds every allowed action and every
chain verifies.

    python benchmarks/server_load.py [--pairs 400] [--pg postgresql://...]

PostgreSQL is measured when ``--pg`` or ``GUARDKIT_TEST_PG`` is given (a fresh schema is made).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from guardkit import Guard
from guardkit.client import AdminClient, AgentClient
from guardkit.store.chain import Signer

TOKEN = "bench-admin-" + "x" * 32
POLICY = {"budget": 10**9, "scar_limit": 10, "tools": {"work": {"cost": 1}}}


def _pairs(agent: Any, n: int, latencies: list[float]) -> None:
    for i in range(n):
        started = time.perf_counter()
        decision = agent.request("work", {"i": i})
        agent.report(decision["action_id"], "success")
        latencies.append(time.perf_counter() - started)


def _run(agents: list[Any], n: int) -> tuple[float, list[float]]:
    per_agent: list[list[float]] = [[] for _ in agents]
    threads = [
        threading.Thread(target=_pairs, args=(a, n, lat))
        for a, lat in zip(agents, per_agent, strict=True)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return elapsed, [x for lat in per_agent for x in lat]


def _report(name: str, clients: int, elapsed: float, latencies: list[float], lost: int) -> None:
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(
        f"{name:<28} {clients:>7} {len(latencies) / elapsed:>10.0f} {p50:>9.2f} {p99:>9.2f}"
        f" {lost:>5}",
        flush=True,
    )


@contextmanager
def _server(store: str, data_dir: Path) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_ADMIN_TOKEN"] = TOKEN
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "guardkit.server",
            "--bind",
            "127.0.0.1:0",
            "--store",
            store,
            "--data-dir",
            str(data_dir),
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    match = re.search(r"on (http://\S+)", proc.stdout.readline())
    try:
        assert match is not None, "server did not start"
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _lost(
    verify: Callable[[str], dict[str, Any]],
    status: Callable[[str], dict[str, Any]],
    ids: list[str],
    n: int,
) -> int:
    lost = 0
    for agent_id in ids:
        if not verify(agent_id)["ok"]:
            lost += n
        lost += n - status(agent_id)["actions_allowed"]
    return lost


def bench_local(tmp: Path, clients: int, n: int) -> None:
    with Guard(str(tmp / f"local-{clients}.db"), signing_key=Signer.generate_hex()) as guard:
        ids = [f"local-{i}" for i in range(clients)]
        for agent_id in ids:
            guard.create_agent(agent_id, POLICY)
        elapsed, latencies = _run([guard.agent(a) for a in ids], n)
        lost = _lost(guard.verify, guard.status, ids, n)
    _report("in-process, SQLite full", clients, elapsed, latencies, lost)


def bench_http(name: str, url: str, clients: int, n: int) -> None:
    ids = [f"{uuid.uuid4().hex[:8]}-{i}" for i in range(clients)]
    with AdminClient(url, TOKEN) as admin:
        tokens = [admin.create_agent(a, POLICY)["token"] for a in ids]
        agents = [AgentClient(url, a, t, retries=0) for a, t in zip(ids, tokens, strict=True)]
        _run(agents, 20)  # warm up connections and prepared statements
        elapsed, latencies = _run(agents, n)
        for agent in agents:
            agent.close()
        lost = _lost(admin.verify, admin.status, ids, n + 20)
    _report(name, clients, elapsed, latencies, lost)


@contextmanager
def _pg_schema(base: str) -> Iterator[str]:
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            sep = "&" if "?" in base else "?"
            yield f"{base}{sep}options=-csearch_path%3D{schema}"
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400, help="pairs per client")
    parser.add_argument("--pg", default=os.environ.get("GUARDKIT_TEST_PG"))
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {args.pairs} request+report pairs per client")
    print(
        f"{'configuration':<28} {'clients':>7} {'pairs/s':>10} {'p50 ms':>9} {'p99 ms':>9}"
        f" {'lost':>5}"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for clients in (1, 8):
            bench_local(tmp, clients, args.pairs)
        with _server(f"sqlite:///{tmp / 'server.db'}", tmp / "sqlite") as url:
            for clients in (1, 8):
                bench_http("HTTP, SQLite full", url, clients, args.pairs)
        if args.pg:
            with _pg_schema(args.pg) as pg_url, _server(pg_url, tmp / "pg") as url:
                for clients in (1, 8):
                    bench_http("HTTP, PostgreSQL", url, clients, args.pairs)
        else:
            print("(PostgreSQL skipped: pass --pg or set GUARDKIT_TEST_PG)")


if __name__ == "__main__":
    main()
