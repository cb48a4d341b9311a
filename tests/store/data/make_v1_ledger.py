"""Build the schema-1 fixtures with guardkit as it was before schema versions (main at 40fec99).

Run it with that release's code first on the path, from outside a checkout::

    git archive 40fec99 | tar -x -C /tmp/guardkit-v1
    PYTHONPATH=/tmp/guardkit-v1 python tests/store/data/make_v1_ledger.py tests/store/data \
        [postgresql://...]

It writes ``v1.db`` (SQLite), ``v1-postgres.sql`` (the same agents made by that release's
PostgreSQL store, dumped as SQL; only with a PostgreSQL URL) and ``v1-expected.json`` (what that
release said about every agent and action). The clock and the signing key are fixed, so the
ledgers are the same on every run. The migration test opens the fixtures with today's code.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

from guardkit import Guard
from guardkit.protocols import IdemRecord
from guardkit.store import open_store

#: The fixtures' signing key (a test key: never use it for anything else).
KEY = "7e" * 32
POLICY = {
    "budget": 50,
    "scar_limit": 30,
    "rate_limit": {"max_actions": 100, "window_secs": 60},
    "approval_ttl": 3600,
    "tools": {
        "llm_turn": {"cost": 1},
        "pay": {"cost": 2, "requires_approval": True},
        "search": {"cost": 0, "max_calls": 2},
    },
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.25

    def __call__(self) -> float:
        self.now += 0.5
        return self.now


def build(guard: Guard) -> dict[str, Any]:
    """Every record kind of schema 1, a consumption, idempotency records, a sub-agent."""
    guard.create_agent("bot", POLICY)
    agent = guard.agent("bot")
    first = agent.request("llm_turn", {"prompt": "héllo ✓", "n": [1, 2.5, None, True]})
    agent.report(first["action_id"], "success", "ok")
    second = agent.request("llm_turn", {}, cost=3)
    agent.report(second["action_id"], "failure", "timeout")
    agent.request("rm_rf", {"path": "/"})
    for _ in range(3):
        agent.request("search", {"q": "x"})
    paid = agent.request("pay", {"to": "acme", "iban": "DE02120300000000202051", "amount": 2})
    guard.approve("bot", paid["action_id"], "alice", note="looks right")
    guard.consume(
        "bot",
        paid["action_id"],
        "pay",
        {"to": "acme", "iban": "DE02120300000000202051", "amount": 2},
    )
    rejected = agent.request("pay", {"to": "mallory"})
    guard.reject("bot", rejected["action_id"], "alice", "wrong vendor", scar="minor")
    agent.request("pay", {"to": "later", "amount": 1})  # stays pending
    guard.scar("bot", "moderate", "monitor flagged", first["action_id"])
    child = {"budget": 5, "scar_limit": 3, "rate_limit": {"max_actions": 10, "window_secs": 60}}
    guard.spawn("bot", "kid", {**child, "tools": {"llm_turn": {"cost": 1}}}, 5)
    guard.agent("kid").request("llm_turn", {})
    guard.create_agent("spent", {**POLICY, "budget": 2})
    for _ in range(2):
        guard.agent("spent").request("llm_turn", {})
    guard.create_agent("stopped", POLICY)
    guard.terminate("stopped", "operator pulled the plug", "alice")
    with guard.store.transaction() as tx:
        tx.idem_put(
            IdemRecord(
                key="tool:" + "ab" * 32,
                status="COMPLETED",
                payload_hash="cd" * 32,
                owner="0" * 32,
                lease_expires=1_800_000_100.0,
                expires_at=None,
                result_json='{"paid":true}',
                action_id=paid["action_id"],
                agent_id="bot",
            )
        )
    return {
        agent_id: {
            "status": guard.status(agent_id),
            "actions": [
                guard.action(agent_id, f"act-{n}")
                for n in range(
                    1,
                    guard.status(agent_id)["actions_allowed"]
                    + guard.status(agent_id)["actions_denied"]
                    + guard.status(agent_id)["actions_pending"]
                    + 1,
                )
            ],
            "pending": guard.pending(agent_id),
            "log": guard.log(agent_id, limit=5000)["records"],
        }
        for agent_id in ("bot", "kid", "spent", "stopped")
    }


def _dump_postgres(url: str, out: Path) -> None:
    import psycopg

    schema = "v1_" + uuid.uuid4().hex[:8]
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
        try:
            scoped = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
            with Guard(open_store(scoped, signing_key=KEY), clock=Clock()) as guard:
                build(guard)
            lines = [_ddl_of("guardkit.store.postgres")]
            with psycopg.connect(scoped) as conn:
                for table in (
                    "meta",
                    "agents",
                    "records",
                    "actions",
                    "consumptions",
                    "idempotency",
                ):
                    rows = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()  # type: ignore[arg-type]
                    for row in rows:
                        if table == "meta" and row[0] == "token_key":
                            continue
                        values = ", ".join(_literal(v) for v in row)
                        lines.append(f"INSERT INTO {table} VALUES ({values});")
            out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")  # type: ignore[arg-type]


def _ddl_of(module: str) -> str:
    import importlib

    return str(importlib.import_module(module)._SCHEMA).strip()


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def main(folder: str, pg_url: str | None = None) -> None:
    out = Path(folder)
    db = out / "v1.db"
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with Guard(str(db), signing_key=KEY, clock=Clock()) as guard:
        expected = build(guard)
        with guard.store.transaction() as tx:
            tx.set_meta("token_key", "00" * 32)
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
    for suffix in ("-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    (out / "v1-expected.json").write_text(
        json.dumps(expected, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
    if pg_url:
        _dump_postgres(pg_url, out / "v1-postgres.sql")


if __name__ == "__main__":
    main(*sys.argv[1:])
