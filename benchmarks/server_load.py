"""Server throughput: request+report pairs per second and p50/p99 latency, side by side.

Runs, in one go, the HTTP server (a separate ``python -m guardkit.server`` process) over SQLite
(durability=full) and PostgreSQL, each with 1 and 8 concurrent clients. Each client is its own
process with one keep-alive connection and a lean HTTP/1.1 client (a socket and a few bytes of
parsing, no HTTP library), so the load generator costs little and never shares a GIL with the
server; its CPU time is reported beside the server's. Every configuration then checks that
nothing was lost: the ledger holds every allowed action and every chain verifies.

    python benchmarks/server_load.py [--pairs 400] [--clients 1,8] [--pg postgresql://...]

PostgreSQL is measured when ``--pg`` or ``GUARDKIT_TEST_PG`` is given (a fresh schema is made).
Targets (issue 13): 8 clients on SQLite full >= 1,000 pairs/s with p99 < 25 ms; PostgreSQL
within 1.5x of SQLite.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from guardkit.client import AdminClient

TOKEN = "bench-admin-" + "x" * 32
POLICY = {"budget": 10**9, "scar_limit": 10, "tools": {"work": {"cost": 1}}}


class LeanClient:
    """HTTP/1.1 over one keep-alive socket: just enough to POST JSON and read the answer."""

    def __init__(self, url: str, token: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = f"Host: {host}\r\nAuthorization: Bearer {token}\r\n"
        self.buffer = b""

    def post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        self.sock.sendall(
            f"POST {path} HTTP/1.1\r\n{self.head}Content-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status = int(head[9:12])
        match = re.search(rb"(?i)content-length: *(\d+)", head)
        length = int(match.group(1)) if match else 0
        while len(self.buffer) < length:
            self._more()
        payload, self.buffer = self.buffer[:length], self.buffer[length:]
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status} {payload!r}")
        return json.loads(payload)

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk


def _client(
    url: str, agent_id: str, token: str, pairs: int, warmup: int, start: float, out: Connection
) -> None:
    client = LeanClient(url, token)
    actions = f"/v1/agents/{agent_id}/actions"

    def pair(i: int) -> None:
        decision = client.post(actions, {"tool": "work", "input": {"i": i}})
        client.post(f"{actions}/{decision['action_id']}/outcome", {"status": "success"})

    for i in range(warmup):
        pair(i)
    while time.time() < start:
        time.sleep(0.001)
    cpu = time.process_time()
    latencies = []
    for i in range(warmup, warmup + pairs):
        began = time.perf_counter()
        pair(i)
        latencies.append(time.perf_counter() - began)
    out.send((latencies, time.process_time() - cpu))
    out.close()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_http(name: str, url: str, pid: int, clients: int, pairs: int) -> dict[str, float]:
    ids = [f"{uuid.uuid4().hex[:8]}-{i}" for i in range(clients)]
    with AdminClient(url, TOKEN) as admin:
        tokens = [admin.create_agent(a, POLICY)["token"] for a in ids]
    context = multiprocessing.get_context("fork")
    start = time.time() + 1.0 + 0.05 * clients
    pipes, procs = [], []
    for agent_id, token in zip(ids, tokens, strict=True):
        receive, send = context.Pipe(duplex=False)
        proc = context.Process(
            target=_client, args=(url, agent_id, token, pairs, 20, start, send), daemon=True
        )
        proc.start()
        pipes.append(receive)
        procs.append(proc)
    while time.time() < start:
        time.sleep(0.001)
    server_cpu = _cpu_seconds(pid)
    began = time.perf_counter()
    results = [pipe.recv() for pipe in pipes]
    elapsed = time.perf_counter() - began
    server_cpu = _cpu_seconds(pid) - server_cpu
    for proc in procs:
        proc.join()
    latencies = sorted(x for lat, _ in results for x in lat)
    client_cpu = sum(cpu for _, cpu in results)
    with AdminClient(url, TOKEN) as admin:
        lost = sum(
            (pairs + 20) * (not admin.verify(a)["ok"])
            + (pairs + 20 - admin.status(a)["actions_allowed"])
            for a in ids
        )
    rate = len(latencies) / elapsed
    row = {
        "pairs/s": rate,
        "p50 ms": statistics.median(latencies) * 1000,
        "p99 ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "server cpu ms/pair": server_cpu / len(latencies) * 1000,
        "client cpu ms/pair": client_cpu / len(latencies) * 1000,
        "lost": lost,
    }
    print(
        f"{name:<22} {clients:>7} {rate:>9.0f} {row['p50 ms']:>8.2f} {row['p99 ms']:>8.2f}"
        f" {row['server cpu ms/pair']:>11.3f} {row['client cpu ms/pair']:>11.3f} {lost:>5}",
        flush=True,
    )
    return row


@contextmanager
def _server(store: str, data_dir: Path) -> Iterator[tuple[str, int]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_ADMIN_TOKEN"] = TOKEN
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "guardkit.server", "--bind", "127.0.0.1:0", "--store", store),
            *("--data-dir", str(data_dir), "--log-level", "warning"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=data_dir,
    )
    assert proc.stdout is not None
    match = re.search(r"on (http://\S+)", proc.stdout.readline())
    try:
        assert match is not None, "server did not start"
        yield match.group(1), proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@contextmanager
def _pg_schema(base: str) -> Iterator[str]:
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
        try:
            sep = "&" if "?" in base else "?"
            yield f"{base}{sep}options=-csearch_path%3D{schema}"
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400, help="pairs per client")
    parser.add_argument("--clients", default="1,8", help="client counts, comma-separated")
    parser.add_argument("--pg", default=os.environ.get("GUARDKIT_TEST_PG"))
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    print(f"{os.cpu_count()} cores; {args.pairs} request+report pairs per client; ", end="")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'configuration':<22} {'clients':>7} {'pairs/s':>9} {'p50 ms':>8} {'p99 ms':>8}"
        f" {'server cpu':>11} {'client cpu':>11} {'lost':>5}"
    )
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with _server(f"sqlite:///{tmp / 'server.db'}", tmp / "sqlite") as (url, pid):
            for clients in counts:
                bench_http("HTTP, SQLite full", url, pid, clients, args.pairs)
        if args.pg:
            with _pg_schema(args.pg) as pg_url, _server(pg_url, tmp / "pg") as (url, pid):
                for clients in counts:
                    bench_http("HTTP, PostgreSQL", url, pid, clients, args.pairs)
        else:
            print("(PostgreSQL skipped: pass --pg or set GUARDKIT_TEST_PG)")
    print(f"(cpu: ms of CPU per pair; load average after {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
