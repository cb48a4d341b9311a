"""MCP ``tools/call`` latency straight to a stdio server, and through ``guardkit mcp proxy``.

Run: ``.venv/bin/python benchmarks/overhead_mcp.py [--calls N] [--rounds R]``.

Real SDK client sessions (handshake era, as the proxy speaks to its upstream) call a trivial
tool of the same upstream server script: directly over stdio; through a byte relay (a process
that copies lines both ways and understands nothing: what any extra process in the path costs
on this machine now, the floor for a proxy); through the proxy over stdio with an in-memory
ledger; and through the proxy with a SQLite ledger at ``durability="normal"``. Calls are
interleaved round by round so machine noise hits all paths alike; each round starts fresh
processes, and the figures printed are medians over rounds (with the load average, since a
shared machine's load moves them most). ``benchmarks/framework_overhead.py`` imports
``measure``. Figures only: nothing here asserts a time. Target: the proxy adds at most 1 ms
median over stdio on loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

UPSTREAM = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def noop(n: int) -> int:
    return n


server.run()
"""
RELAY = """
import asyncio, os, subprocess, sys


class Upstream(asyncio.SubprocessProtocol):
    def __init__(self, out, done):
        self.out, self.done = out, done

    def pipe_data_received(self, fd, data):
        self.out.write(data)

    def process_exited(self):
        self.done.set_result(None)


class Client(asyncio.Protocol):
    def __init__(self, upstream):
        self.upstream = upstream

    def data_received(self, data):
        self.upstream.write(data)

    def eof_received(self):
        self.upstream.close()


async def main():
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(1, "wb", buffering=0))
    child, _ = await loop.subprocess_exec(
        lambda: Upstream(out, done), *sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    stdin = os.fdopen(0, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: Client(child.get_pipe_transport(0)), stdin)
    await done


asyncio.run(main())
"""
POLICY = {"budget": 10**9, "scar_limit": 10**6, "tools": {"noop": {"cost": 0}}}
DIRECT = "mcp direct (stdio)"
RELAYED = "mcp via byte relay (stdio, floor)"
MEMORY = "mcp via proxy (stdio, :memory:)"
NORMAL = "mcp via proxy (stdio, sqlite normal)"
_SHORT = {RELAYED: "relay", MEMORY: "proxy :memory:", NORMAL: "proxy sqlite normal"}


def _targets(folder: Path) -> dict[str, StdioServerParameters]:
    upstream = folder / "upstream.py"
    upstream.write_text(UPSTREAM)
    relay = folder / "relay.py"
    relay.write_text(RELAY)
    policy = folder / "policy.json"
    policy.write_text(json.dumps(POLICY))

    def proxied(*db: str) -> StdioServerParameters:
        args = ["-m", "guardkit", "mcp", "proxy", "--agent", "bench", "--policy", str(policy),
                *db, "--", sys.executable, str(upstream)]  # fmt: skip
        return StdioServerParameters(command=sys.executable, args=args, cwd=folder)

    return {
        DIRECT: StdioServerParameters(command=sys.executable, args=[str(upstream)]),
        RELAYED: StdioServerParameters(
            command=sys.executable, args=[str(relay), sys.executable, str(upstream)]
        ),
        MEMORY: proxied("--db", ":memory:"),
        NORMAL: proxied("--db", str(folder / "guard.db"), "--durability", "normal"),
    }


async def _measure(calls: int, folder: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(Client(target, mode="legacy"))
            for name, target in _targets(folder).items()
        }
        for client in clients.values():  # warm up: imports, first listing, first ledger write
            for n in range(20):
                await client.call_tool("noop", {"n": n})
        for n in range(calls):
            for name, client in clients.items():
                start = time.perf_counter()
                result = await client.call_tool("noop", {"n": n})
                times.setdefault(name, []).append(time.perf_counter() - start)
                assert not result.is_error, result
    return times


def measure(calls: int) -> dict[str, list[float]]:
    """Per-call latencies in seconds, keyed by path (direct, relay, proxy over two ledgers)."""
    with tempfile.TemporaryDirectory() as folder:
        return anyio.run(_measure, calls, Path(folder))


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    rounds: list[dict[str, tuple[float, float]]] = []
    for number in range(1, args.rounds + 1):
        before = os.getloadavg()[0]
        figures = {name: _stats(samples) for name, samples in measure(args.calls).items()}
        rounds.append(figures)
        floor = figures[DIRECT][0]
        added = "; ".join(f"{_SHORT[n]} {(figures[n][0] - floor) * 1e6:+.0f}µs" for n in _SHORT)
        load = f"load {before:.2f}-{os.getloadavg()[0]:.2f}"
        print(f"round {number} ({load}): direct {floor * 1e6:.0f}µs; added: {added}")
    print(f"{'path':<40} {'median':>10} {'p99':>10} {'added':>10}   "
          f"({args.calls} calls x {args.rounds} rounds; medians over rounds)")  # fmt: skip
    for name in rounds[0]:
        median = statistics.median(r[name][0] for r in rounds)
        p99 = statistics.median(r[name][1] for r in rounds)
        added = statistics.median(r[name][0] - r[DIRECT][0] for r in rounds)
        print(f"{name:<40} {median * 1e6:>8.0f}µs {p99 * 1e6:>8.0f}µs {added * 1e6:>+8.0f}µs")


if __name__ == "__main__":
    main()
