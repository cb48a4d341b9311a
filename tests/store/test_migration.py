"""Databases made before schema versions (schema 1) upgrade in place, on SQLite and PostgreSQL.

The fixtures in ``data/`` were made by guardkit's previous release (main at 40fec99) with
``data/make_v1_ledger.py``; ``v1-expected.json`` is what that release answered about every agent
and action. After the upgrade today's guard must answer exactly the same, verify every chain, and
carry on.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from guardkit import Guard
from guardkit.errors import AlreadyConsumed
from guardkit.store import open_store
from guardkit.store.schema import SCHEMA_VERSION
from tests.server.pg import pg_schema_url
from tests.store.conftest import Raw

DATA = Path(__file__).parent / "data"
KEY = "7e" * 32
EXPECTED: dict[str, Any] = json.loads((DATA / "v1-expected.json").read_text(encoding="utf-8"))
PAYMENT = {"to": "acme", "iban": "DE02120300000000202051", "amount": 2}
#: A minute after the fixtures were made (their clock; a pending approval there has a TTL).
NOW = 1_800_000_060.0


def _open(url: str) -> Guard:
    return Guard(open_store(url, signing_key=KEY), clock=lambda: NOW)


@pytest.fixture(params=["sqlite", "postgresql"])
def v1_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        db = tmp_path / "v1.db"
        shutil.copyfile(DATA / "v1.db", db)
        yield f"sqlite:///{db}"
        return
    with pg_schema_url() as url:
        Raw(url)((DATA / "v1-postgres.sql").read_text(encoding="utf-8"))
        yield url


def test_a_schema_1_database_upgrades_in_place_and_answers_the_same(v1_url: str) -> None:
    raw = Raw(v1_url)
    assert raw("SELECT count(*) FROM agents")[0][0] == len(EXPECTED)
    with _open(v1_url) as guard:
        assert guard.store.schema_found == 1  # type: ignore[attr-defined]
        assert guard.quarantined == {}
        for agent_id, then in EXPECTED.items():
            log = guard.log(agent_id, limit=5000)["records"]
            assert log[: len(then["log"])] == then["log"]
            status = guard.status(agent_id)
            assert {**status, "head": then["status"]["head"]} == then["status"]
            assert status["head"]["seq"] == log[-1]["seq"]
            for action in then["actions"]:
                assert guard.action(agent_id, action["action_id"]) == action
            assert guard.pending(agent_id) == then["pending"]
            assert guard.verify(agent_id)["ok"] is True
        # Schema 1's consumption (a row of its own table) is now a ledger record...
        (migrated,) = guard.log("bot", after=EXPECTED["bot"]["log"][-1]["seq"])["records"]
        assert (migrated["kind"], migrated["payload"]) == (
            "action_consumed",
            {"action_id": "act-7", "by": "migration"},
        )
        assert all(
            len(guard.log(a)["records"]) == len(EXPECTED[a]["log"]) for a in EXPECTED if a != "bot"
        )
        with pytest.raises(AlreadyConsumed):
            guard.consume("bot", "act-7", "pay", PAYMENT)
        with guard.store.transaction(write=False) as tx:
            stored = tx.idem_get("tool:" + "ab" * 32)
        assert stored is not None
        assert stored.result_json == '{"paid":true}'
        # ...and the guard carries on where the old one stopped.
        decision = guard.agent("bot").request("llm_turn", {})
        assert decision["action_id"] == f"act-{len(EXPECTED['bot']['actions']) + 1}"
        pending = EXPECTED["bot"]["pending"][0]["action"]["action_id"]
        assert guard.approve("bot", pending, "bob")["decision"] == "allowed"
    assert raw("SELECT value FROM meta WHERE key = 'schema_version'") == [(str(SCHEMA_VERSION),)]
    with _open(v1_url) as again:  # nothing left to upgrade
        assert again.store.schema_found == SCHEMA_VERSION  # type: ignore[attr-defined]
        assert again.quarantined == {}
        assert again.verify("bot")["ok"] is True


def test_the_upgrade_drops_the_materialised_state(v1_url: str) -> None:
    _open(v1_url).close()
    raw = Raw(v1_url)
    if v1_url.startswith("sqlite"):
        columns = {row[1] for row in raw("PRAGMA table_info(agents)")}
        tables = {row[0] for row in raw("SELECT name FROM sqlite_master WHERE type = 'table'")}
    else:
        columns = {
            row[0]
            for row in raw(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'agents' "
                "AND table_schema = current_schema()"
            )
        }
        tables = {
            row[0]
            for row in raw(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        }
    assert columns == {"agent_id", "parent_id", "policy", "public_key"}
    assert "actions" not in tables
    assert "consumptions" not in tables  # now records of the ledger (see the test above)
    counts = raw("SELECT requested FROM records WHERE agent_id = 'bot' ORDER BY seq")
    assert counts[-1] == (len(EXPECTED["bot"]["actions"]),)
    assert [c for (c,) in counts] == sorted(c for (c,) in counts)
