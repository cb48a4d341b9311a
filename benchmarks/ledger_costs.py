"""What trusting the ledger costs: opening a store, reading an action back, catching up.

Run: ``.venv/bin/python benchmarks/ledger_costs.py [--pairs 20000]``.

For an unsigned and a signed ledger of ``--pairs`` request+report pairs: how long opening takes
(every record checked and folded), reading an action no one read since the open (its request
found by binary search, its records checked), and folding in 1,000 pairs another connection
appended. docs/guard.md ("Trusting what the guard reads") quotes these figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from guardkit import Guard
from guardkit.store.chain import Signer

POLICY = {"budget": 10**12, "scar_limit": 10, "tools": {"w": {"cost": 1}}}


def _fill(path: str, key: str | None, pairs: int) -> int:
    with Guard(path, signing_key=key, durability="normal") as guard:
        guard.create_agent("bot", POLICY)
        agent = guard.agent("bot")
        for i in range(pairs):
            decision = agent.request("w", {"i": i})
            agent.report(decision["action_id"], "success")
        return guard.status("bot")["head"]["seq"] + 1


def measure(work: str, signed: bool, pairs: int) -> None:
    key = Signer.generate_hex() if signed else None
    path = os.path.join(work, f"ledger-{int(signed)}.db")
    records = _fill(path, key, pairs)
    began = time.perf_counter()
    reader = Guard(path, signing_key=key)
    opened = time.perf_counter() - began
    reads = []
    for number in range(1, pairs, max(1, pairs // 200)):
        reader.store.actions.clear()
        began = time.perf_counter()
        reader.action("bot", f"act-{number}")
        reads.append(time.perf_counter() - began)
    with Guard(path, signing_key=key, durability="normal") as writer:
        other = writer.agent("bot")
        for i in range(1000):
            decision = other.request("w", {"i": i})
            other.report(decision["action_id"], "success")
    began = time.perf_counter()
    reader.status("bot")
    caught = time.perf_counter() - began
    reader.close()
    print(
        f"{'signed' if signed else 'unsigned':<9}{records:>9}{opened * 1e3:>10.0f}"
        f"{opened / records * 1e6:>12.1f}{statistics.median(reads) * 1e6:>15.0f}"
        f"{caught / 3000 * 1e6:>15.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'ledger':<9}{'records':>9}{'open ms':>10}{'us/record':>12}{'action read us':>15}"
        f"{'catch-up us/r':>15}"
    )
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as work:
        for signed in (False, True):
            measure(work, signed, args.pairs)


if __name__ == "__main__":
    main()
