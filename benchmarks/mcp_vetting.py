"""What the MCP proxy's pins and sanitising cost, against a floor measured in the same run.

Run: ``.venv/bin/python benchmarks/mcp_vetting.py [--calls N]``.

Per call (the path every ``tools/call`` takes): the name checks and the look-up of the tool's
pinned state, and ``results.shown`` on a 10 KB result (ASCII, other text, and text with hidden
characters that must be escaped). Per listing: vetting 50 tools against their pins, in memory
and in a pin file (nothing changed: no write). The floor is ``json.dumps`` of the same result,
which writing it to the client costs anyway. Figures only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guardkit.plugins.mcp.pins import PinFile
from guardkit.plugins.mcp.results import Results, shown
from guardkit.plugins.mcp.schemas import ToolSchemas
from guardkit.plugins.mcp.vetting import OnChange, Vetting
from mcp.types import Tool


def _median_us(fn: Callable[[], Any], calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def _result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": (text * (10_000 // len(text) + 1))[:10_000]}]}


def _vetting(pins: PinFile, tools: list[Tool]) -> Vetting:
    schemas = ToolSchemas()
    schemas.learn(tools)
    names = frozenset(tool.name for tool in tools)
    return Vetting(
        pins,
        schemas,
        allowed=names,
        hide_unlisted=True,
        ledger_name=lambda name: name,
        policy_names=names,
        on_change=OnChange.APPROVAL,
    )


def _samples(fn: Callable[[], Any], calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def per_call(calls: int) -> dict[str, list[float]]:
    """Seconds per ``tools/call`` of what the proxy's pins and sanitising add on a 10 KB result:
    the name checks, the tool's pinned state and ``shown`` (``framework_overhead.py`` prints it;
    target: at most 100 us)."""
    tools = [
        Tool(name=f"tool_{i}", description=f"Tool number {i}.", input_schema={"type": "object"})
        for i in range(50)
    ]
    vetting = _vetting(PinFile(None, "bench", None), tools)
    vetting.see(tools)
    figures = {}
    for label, text in (
        ("10 KB ASCII", "hello world, an ordinary line of a tool's output\n"),
        ("10 KB other text", "h\u00e9llo w\u00f6rld, \u5929\u6c17 line\n"),
        ("10 KB with hidden characters", "saved.\x1b[8m hidden\x1b[0m\u200b line\n"),
    ):
        result = _result(text)

        def call(result: dict[str, Any] = result) -> None:
            vetting.refused("tool_7")
            vetting.seen("tool_7")
            shown(result, Results.ESCAPE)

        figures[f"mcp proxy pins + sanitising, {label}"] = _samples(call, calls)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    calls = parser.parse_args(argv).calls

    results = {
        "10 KB ASCII": _result("hello world, an ordinary line of a tool's output\n"),
        "10 KB other text": _result("h\u00e9llo w\u00f6rld, \u5929\u6c17 line\n"),
        "10 KB with hidden characters": _result("saved.\x1b[8m hidden\x1b[0m\u200b line\n"),
    }
    tools = [
        Tool(name=f"tool_{i}", description=f"Tool number {i}.", input_schema={"type": "object"})
        for i in range(50)
    ]
    print(f"{'per call':<44} {'median':>10} {'floor':>10} {'ratio':>7}")
    for label, result in results.items():
        floor = _median_us(lambda r=result: json.dumps(r), calls)
        cost = _median_us(lambda r=result: shown(r, Results.ESCAPE), calls)
        print(f"{'shown(), ' + label:<44} {cost:>8.1f}µs {floor:>8.1f}µs {cost / floor:>6.2f}x")

    memory = _vetting(PinFile(None, "bench", None), tools)
    memory.see(tools)
    small = {"content": [{"type": "text", "text": "done"}]}
    floor = _median_us(lambda: json.dumps(small), calls)
    checks = _median_us(lambda: (memory.refused("tool_7"), memory.seen("tool_7")), calls)
    label = "name checks + pinned state of one tool"
    print(f"{label:<44} {checks:>8.1f}µs {floor:>8.1f}µs {checks / floor:>6.2f}x")

    print(f"\n{'per listing of 50 tools':<44} {'median':>10}")
    listing = _median_us(lambda: memory.see(tools), max(calls // 20, 20))
    print(f"{'vetted, pins in memory':<44} {listing:>8.1f}µs")
    with tempfile.TemporaryDirectory() as folder:
        on_disk = _vetting(PinFile(Path(folder) / "pins.json", "bench", None), tools)
        on_disk.see(tools)
        listing = _median_us(lambda: on_disk.see(tools), max(calls // 20, 20))
        print(f"{'vetted, pin file (unchanged: no write)':<44} {listing:>8.1f}µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
