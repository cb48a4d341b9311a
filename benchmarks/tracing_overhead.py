"""What tracing adds to one guarded call: off, SDK provider without exporter, in-memory export.

Run: ``.venv/bin/python benchmarks/tracing_overhead.py [--calls N]``.

Two measurements per mode, medians of batches:

* ``span protocol``: exactly what the hooks in ``guardkit.tools`` / ``guardkit.loop`` do per call
  (open the ``execute_tool`` span, record a decision, close it), against an empty loop. This is
  the added cost; targets: off < 1 us, on < 30 us.
* ``guarded call``: a ``@guardkit.tool`` call on an in-memory guard (request + report), so the
  added cost can be seen next to the call it is added to.

``tracing_overhead()`` returns the figures for other scripts.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import guardkit
from guardkit import Guard, tracing

POLICY = {"budget": 10**15, "scar_limit": 10, "tools": {"search": {"cost": 1}}}
DECISION = {"decision": "allowed", "action_id": "act-1", "cost": 1, "remaining": 99}
BATCH = 1000


def _per_call(fn: Callable[[], None], calls: int) -> float:
    """Median microseconds per call over batches of ``BATCH`` calls."""
    for _ in range(BATCH):
        fn()
    samples = []
    for _ in range(max(1, calls // BATCH)):
        start = time.perf_counter()
        for _ in range(BATCH):
            fn()
        samples.append((time.perf_counter() - start) / BATCH)
    return statistics.median(samples) * 1e6


def _span_protocol() -> None:
    with tracing.tool_span("search", agent_id="bench", call_id="call_1") as span:
        span.decision(DECISION)


def _nothing() -> None:
    return None


@contextmanager
def _mode(name: str) -> Iterator[None]:
    if name == "off":
        tracing.disable()
        yield
        return
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk.trace import TracerProvider

    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    if name == "in-memory":
        from opentelemetry.sdk._logs.export import (
            InMemoryLogRecordExporter,
            SimpleLogRecordProcessor,
        )
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracing.enable(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        yield
    finally:
        tracing.disable()
        tracer_provider.shutdown()
        logger_provider.shutdown()


MODES = ("off", "sdk, no exporter", "in-memory")


def tracing_overhead(calls: int = 20_000) -> dict[str, dict[str, float]]:
    """``{mode: {"span_us", "added_us", "guarded_call_us"}}`` for each tracing mode."""
    floor = _per_call(_nothing, calls)
    out: dict[str, dict[str, float]] = {}
    with Guard(":memory:", durability="normal") as guard:
        guard.create_agent("bench", POLICY)

        @guardkit.tool(guard=guard.agent("bench"))
        def search(query: str) -> str:
            return query

        def guarded() -> None:
            search("q")

        for mode in MODES:
            with _mode(mode):
                span = _per_call(_span_protocol, calls)
                call = _per_call(guarded, max(BATCH, calls // 10))
            out[mode] = {"span_us": span, "added_us": span - floor, "guarded_call_us": call}
    return out


def _print(figures: dict[str, Any]) -> None:
    print(f"{'tracing':<18} {'added per call':>15} {'guarded call':>14}")
    for mode, row in figures.items():
        print(f"{mode:<18} {row['added_us']:>12.3f} us {row['guarded_call_us']:>11.2f} us")
    print("targets: off < 1 us added, on < 30 us added")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    _print(tracing_overhead(parser.parse_args().calls))


if __name__ == "__main__":
    main()
