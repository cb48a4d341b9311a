"""What each framework integration adds to one tool call, against the guard decision itself.

For every integration module ``benchmarks/overhead_<framework>.py`` (each exposes
``measure(calls) -> {configuration: [seconds per call, ...]}``) this prints the median and p99
of the framework's bare tool call and of the same call through guardkit, and compares the
difference with the floor measured here in the same process: one ``request`` + ``report`` pair
on a ``LocalAgent`` over the same store (``:memory:`` and SQLite ``normal``). Target: an
integration adds at most that floor + 50 µs; the MCP proxy adds at most 1 ms over stdio.

Last, what the MCP proxy's pins and sanitising add to one ``tools/call`` with a 10 KB result
(the name checks, the tool's pinned state, hidden characters looked for and escaped:
``mcp_vetting.per_call``; target: at most 100 µs).

    python benchmarks/framework_overhead.py [--calls 2000] [--only smolagents,google_adk]
    .venv-crewai/bin/python benchmarks/framework_overhead.py --only crewai
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from guardkit import Guard

FRAMEWORKS = (
    "langchain",
    "pydantic_ai",
    "openai_agents",
    "llama_index",
    "smolagents",
    "google_adk",
    "crewai",  # in the crewai venv only: make crewai-venv (it conflicts with the dev extras)
    "mcp",
)
POLICY = {"budget": 10**12, "scar_limit": 10**9, "tools": {"t": {"cost": 0}}}


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    median = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return median * 1e6, p99 * 1e6


def floor(store: str, calls: int) -> list[float]:
    """One request+report pair per call, in-process: what the guard decision itself costs."""
    with Guard(store, durability="normal") as guard:
        guard.create_agent("bench", POLICY)
        agent = guard.agent("bench")
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            action_id = agent.request("t", {"q": "x"})["action_id"]
            agent.report(action_id, "success")
            samples.append(time.perf_counter() - start)
        return samples


def _store_of(configuration: str) -> str | None:
    if ":memory:" in configuration:
        return ":memory:"
    if "sqlite" in configuration:
        return "sqlite"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--only", default="", help="comma-separated frameworks")
    args = parser.parse_args(argv)
    wanted = [f for f in FRAMEWORKS if not args.only or f in args.only.split(",")]
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory() as tmp:
        floors = {
            ":memory:": _stats(floor(":memory:", args.calls)),
            "sqlite": _stats(floor(str(Path(tmp) / "floor.db"), args.calls)),
        }
    print(f"per tool call, {args.calls} calls; microseconds (median / p99)")
    print(
        f"guard decision floor (request+report, LocalAgent): :memory: "
        f"{floors[':memory:'][0]:.1f} / {floors[':memory:'][1]:.1f}, sqlite normal "
        f"{floors['sqlite'][0]:.1f} / {floors['sqlite'][1]:.1f}"
    )
    print(f"{'configuration':48} {'median':>9} {'p99':>9} {'added':>9} {'over floor':>11}")
    for name in wanted:
        try:
            module = importlib.import_module(f"overhead_{name}")
        except ImportError as exc:
            print(f"{name}: not run ({exc})")
            continue
        measure: Callable[[int], dict[str, list[float]]] = module.measure
        results = {key: _stats(samples) for key, samples in measure(args.calls).items()}
        bare = next((v for k, v in results.items() if "bare" in k or "direct" in k), None)
        for key, (median, p99) in results.items():
            added = "" if bare is None or (median, p99) == bare else f"{median - bare[0]:9.1f}"
            store = _store_of(key)
            over = (
                f"{median - bare[0] - floors[store][0]:11.1f}"
                if bare is not None and store is not None and added
                else ""
            )
            print(f"{key:48} {median:9.1f} {p99:9.1f} {added:>9} {over:>11}")
    if not args.only or "mcp" in args.only.split(","):
        _vetting_rows(args.calls)
    return 0


def _vetting_rows(calls: int) -> None:
    try:
        import mcp_vetting
    except ImportError as exc:
        print(f"mcp pins + sanitising: not run ({exc})")
        return
    print(f"\n{'per tools/call (target <= 100)':58} {'median':>9} {'p99':>9}")
    for key, samples in mcp_vetting.per_call(calls).items():
        median, p99 = _stats(samples)
        print(f"{key:58} {median:9.1f} {p99:9.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
