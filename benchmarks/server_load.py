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

``--notify`` measures what notifications cost instead (issue 23, target <= 5 %): the same
workload on SQLite, one server without a sink and one delivering to a webhook receiver on
loopback (in its own process), in alternating rounds of the same run (medians compared). Every
``--approval-every``-th pair asks for an approval instead of an allowed call
(``approval.pending``) and withdraws it (``approval.expired``), so both servers write the same
outbox; the second also delivers all of it, and each round waits until the receiver has every
event.
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
POLICY = {
    "budget": 10**9,
    "scar_limit": 10,
    "tools": {"work": {"cost": 1}, "ask": {"cost": 0, "requires_approval": True}},
}
SECRET = "bench-secret-" + "s" * 16


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
    url: str,
    agent_id: str,
    token: str,
    pairs: int,
    warmup: int,
    start: float,
    out: Connection,
    approval_every: int = 0,
) -> None:
    client = LeanClient(url, token)
    actions = f"/v1/agents/{agent_id}/actions"

    def pair(i: int) -> None:
        if approval_every and i % approval_every == 0:
            decision = client.post(actions, {"tool": "ask", "input": {"i": i}})
            client.post(f"{actions}/{decision['action_id']}/withdraw", {"timeout": 0})
            return
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


def bench_http(
    name: str, url: str, pid: int, clients: int, pairs: int, approval_every: int = 0
) -> dict[str, float]:
    ids = [f"{uuid.uuid4().hex[:8]}-{i}" for i in range(clients)]
    floor = name.startswith("floor")
    if floor:
        tokens = ["floor"] * clients
    else:
        with AdminClient(url, TOKEN) as admin:
            tokens = [admin.create_agent(a, POLICY)["token"] for a in ids]
    context = multiprocessing.get_context("fork")
    start = time.time() + 1.0 + 0.05 * clients
    pipes, procs = [], []
    for agent_id, token in zip(ids, tokens, strict=True):
        receive, send = context.Pipe(duplex=False)
        proc = context.Process(
            target=_client,
            args=(url, agent_id, token, pairs, 20, start, send, approval_every),
            daemon=True,
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
    asked = sum(1 for i in range(pairs + 20) if approval_every and i % approval_every == 0)
    lost = 0
    if not floor:
        with AdminClient(url, TOKEN) as admin:
            lost = sum(
                (pairs + 20) * (not admin.verify(a)["ok"])
                + (pairs + 20 - asked - admin.status(a)["actions_allowed"])
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
def _server(
    store: str, data_dir: Path, notify: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARD_")}
    env["GUARD_ADMIN_TOKEN"] = TOKEN
    env.update(notify or {})
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


def _floor_serve(path: str, port: Any) -> None:
    """The floor (its own process): a minimal Starlette app on the guard server's ASGI server
    (``guardkit.server.runner``: uvicorn, same options) that commits what a pair writes, the
    naive way: a request inserts two ledger-sized rows and an outcome one, each request in its own
    SQLite WAL transaction with ``synchronous=FULL`` (one fsync), on the thread pool."""
    import sqlite3
    import threading

    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from guardkit.server.runner import bind, serve

    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(
        "CREATE TABLE records (agent_id TEXT, seq INTEGER, body TEXT, PRIMARY KEY (agent_id, seq))"
        " WITHOUT ROWID"
    )
    lock = threading.Lock()
    seqs: dict[str, int] = {}
    body = "x" * 300

    def commit(agent_id: str, rows: int) -> int:
        with lock:
            seq = seqs.get(agent_id, 0)
            seqs[agent_id] = seq + rows
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO records VALUES (?, ?, ?)",
                [(agent_id, seq + n, body) for n in range(rows)],
            )
            conn.execute("COMMIT")
            return seq

    async def request(req: Request) -> JSONResponse:
        await req.json()
        seq = await run_in_threadpool(commit, req.path_params["agent_id"], 2)
        return JSONResponse({"decision": "allowed", "action_id": f"act-{seq}"})

    async def outcome(req: Request) -> JSONResponse:
        await req.json()
        await run_in_threadpool(commit, req.path_params["agent_id"], 1)
        return JSONResponse({"status": "success", "action_id": req.path_params["action_id"]})

    app = Starlette(
        routes=[
            Route("/v1/agents/{agent_id}/actions", request, methods=["POST"]),
            Route("/v1/agents/{agent_id}/actions/{action_id}/outcome", outcome, methods=["POST"]),
        ]
    )
    sock = bind("127.0.0.1", 0)
    port.value = sock.getsockname()[1]
    serve(app, sock, log_level="warning")


@contextmanager
def _floor(path: Path) -> Iterator[tuple[str, int]]:
    context = multiprocessing.get_context("spawn")
    port = context.Value("i", 0)
    proc = context.Process(target=_floor_serve, args=(str(path), port), daemon=True)
    proc.start()
    try:
        while not port.value:
            if not proc.is_alive():
                raise RuntimeError("the floor server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{port.value}", proc.pid or 0
    finally:
        proc.terminate()
        proc.join(timeout=60)


def bench_floor(tmp: Path, counts: list[int], pairs: int, rounds: int) -> None:
    """The guard server (SQLite, full) and the Starlette floor in alternating rounds (the
    machine is shared: alternating spreads its noise over both), medians compared."""
    rates: dict[tuple[str, int], list[float]] = {}
    with (
        _server(f"sqlite:///{tmp / 'sqlite' / 'server.db'}", tmp / "sqlite") as guard,
        _floor(tmp / "floor.db") as floor,
    ):
        for _ in range(rounds):
            for clients in counts:
                for name, (url, pid) in (("floor, Starlette", floor), ("HTTP, SQLite full", guard)):
                    row = bench_http(name, url, pid, clients, pairs)
                    rates.setdefault((name, clients), []).append(row["pairs/s"])
    for clients in counts:
        floor_rate = statistics.median(rates[("floor, Starlette", clients)])
        guard_rate = statistics.median(rates[("HTTP, SQLite full", clients)])
        print(
            f"{clients} clients, median of {rounds}: guard {guard_rate:.0f} pairs/s, "
            f"floor {floor_rate:.0f}: ratio {guard_rate / floor_rate:.2f}x "
            "(targets: >= 1.0x the floor, >= 1,000 pairs/s with 8 clients)"
        )


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


def _receive(port: Any, count: Any) -> None:
    """A webhook receiver (its own process): answers 200 and counts the distinct event ids."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: set[str] = set()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver does

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.add(self.headers["Guardkit-Event-Id"])
            count.value = len(seen)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port.value = server.server_address[1]
    server.serve_forever()


def bench_notify(tmp: Path, counts: list[int], pairs: int, every: int, rounds: int) -> None:
    """The same workload without a sink and with a webhook sink, in alternating rounds (the
    machine is shared: alternating spreads its noise over both), medians compared."""
    context = multiprocessing.get_context("fork")
    port, count = context.Value("i", 0), context.Value("i", 0)
    receiver = context.Process(target=_receive, args=(port, count), daemon=True)
    receiver.start()
    while not port.value:
        time.sleep(0.01)
    hook = {
        "GUARD_NOTIFY_WEBHOOK": f"http://127.0.0.1:{port.value}/hook",
        "GUARD_NOTIFY_SECRET": SECRET,
    }
    rates: dict[tuple[str, int], list[float]] = {}
    events = 0
    try:
        with (
            _server(f"sqlite:///{tmp / 'plain' / 'server.db'}", tmp / "plain") as plain,
            _server(f"sqlite:///{tmp / 'sink' / 'server.db'}", tmp / "sink", hook) as sunk,
        ):
            for _ in range(rounds):
                for clients in counts:
                    for name, (url, pid) in (("no sink", plain), ("webhook sink", sunk)):
                        row = bench_http(f"SQLite, {name}", url, pid, clients, pairs, every)
                        rates.setdefault((name, clients), []).append(row["pairs/s"])
                        if url == sunk[0]:
                            events += 2 * len(range(0, pairs + 20, every)) * clients
                            deadline = time.time() + 60  # no backlog into the next round
                            while count.value < events and time.time() < deadline:
                                time.sleep(0.05)
    finally:
        receiver.kill()
    print(f"(the receiver got {count.value} of {events} events, each delivered and acknowledged)")
    for clients in counts:
        plain_rate = statistics.median(rates[("no sink", clients)])
        sink_rate = statistics.median(rates[("webhook sink", clients)])
        print(
            f"{clients} clients, median of {rounds}: with a sink {sink_rate:.0f} pairs/s, "
            f"without {plain_rate:.0f}: ratio {sink_rate / plain_rate:.3f} "
            f"(cost {100 * (1 - sink_rate / plain_rate):.1f} %; target <= 5 %)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400, help="pairs per client")
    parser.add_argument("--clients", default="1,8", help="client counts, comma-separated")
    parser.add_argument("--pg", default=os.environ.get("GUARDKIT_TEST_PG"))
    parser.add_argument("--notify", action="store_true", help="measure notifications' cost")
    parser.add_argument("--approval-every", type=int, default=10, help="with --notify")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
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
        if args.notify:
            bench_notify(tmp, counts, args.pairs, args.approval_every, args.rounds)
            return
        bench_floor(tmp, counts, args.pairs, args.rounds)
        if args.pg:
            with _pg_schema(args.pg) as pg_url, _server(pg_url, tmp / "pg") as (url, pid):
                for clients in counts:
                    bench_http("HTTP, PostgreSQL", url, pid, clients, args.pairs)
        else:
            print("(PostgreSQL skipped: pass --pg or set GUARDKIT_TEST_PG)")
    print(f"(cpu: ms of CPU per pair; load average after {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
