"""One process of the multi-process idempotency test: call a slow idempotent tool once.

argv: DB_PATH COUNTER_PATH START_AT. Prints ``result <json>`` or ``in_progress``.
"""

from __future__ import annotations

import json
import sys
import time

import guardkit
from guardkit import IdempotencyInProgress


def main() -> None:
    db, counter, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
    guard = guardkit.Guard(db)
    agent = guard.agent("worker")

    @guardkit.tool(guard=agent, idempotency=guardkit.Idempotency(key=["order"], lease=30))
    def ship(order: str) -> dict[str, str]:
        with open(counter, "a") as handle:
            handle.write("ran\n")
        time.sleep(0.3)
        return {"order": order, "tracking": "T-1"}

    time.sleep(max(0.0, start_at - time.time()))
    try:
        print("result", json.dumps(ship("o-1")))
    except IdempotencyInProgress:
        print("in_progress")
    guard.close()


if __name__ == "__main__":
    main()
