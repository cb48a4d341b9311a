"""MCP ``tools/call`` latency straight to a stdio server, and through ``guardkit mcp proxy``.

Run: ``.venv/bin/python benchmarks/overhead_mcp.py [--calls N]``.

Three real SDK client sessions (handshake era, as the proxy speaks to its upstream) call a
trivial tool of the same upstream server script: directly over stdio; through the proxy over
stdio with an in-memory ledger; and through the proxy with a SQLite ledger at
``durability="normal"``. Calls are interleaved round by round so machine noise hits all three
alike. ``benchmarks/framework_overhead.py`` imports ``measure``. Figures only: nothing here
asserts a time. Target: the proxy adds at most 1 ms median over stdio on loopback.
"""

from __future__ import annotations

import argparse
import json
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
POLICY = {"budget": 10**9, "scar_limit": 10**6, "tools": {"noop": {"cost": 0}}}
DIRECT = "mcp direct (stdio)"
MEMORY = "mcp via proxy (stdio, :memory:)"
NORMAL = "mcp via proxy (stdio, sqlite normal)"


def _targets(folder: Path) -> dict[str, StdioServerParameters]:
    upstream = folder / "upstream.py"
    upstream.write_text(UPSTREAM)
    policy = folder / "policy.json"
    policy.write_text(json.dumps(POLICY))

    def proxied(*db: str) -> StdioServerParameters:
        args = ["-m", "guardkit", "mcp", "proxy", "--agent", "bench", "--policy", str(policy),
                *db, "--", sys.executable, str(upstream)]  # fmt: skip
        return StdioServerParameters(command=sys.executable, args=args, cwd=folder)

    return {
        DIRECT: StdioServerParameters(command=sys.executable, args=[str(upstream)]),
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
    """Per-call latencies in seconds, keyed by path (direct, proxy over two ledgers)."""
    with tempfile.TemporaryDirectory() as folder:
        return anyio.run(_measure, calls, Path(folder))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args(argv)
    times = measure(args.calls)
    floor = statistics.median(times[DIRECT])
    print(f"{'path':<40} {'median':>10} {'p99':>10} {'added':>10}   ({args.calls} calls)")
    for name, samples in times.items():
        median = statistics.median(samples)
        p99 = sorted(samples)[int(len(samples) * 0.99) - 1]
        print(
            f"{name:<40} {median * 1e6:>8.0f}µs {p99 * 1e6:>8.0f}µs "
            f"{(median - floor) * 1e6:>+8.0f}µs"
        )


if __name__ == "__main__":
    main()
