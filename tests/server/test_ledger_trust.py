"""The server refuses what was edited in its database behind its back, agent by agent."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from tests.server.conftest import POLICY, start_server


def test_an_edited_idempotency_key_record_is_503_quarantined(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    for server in start_server(f"sqlite:///{db}"):
        bot, bot_token = server.new_agent({**POLICY, "tools": {"read": {"cost": 1}}})
        other, other_token = server.new_agent()
        key = {"Idempotency-Key": "retry-me-1"}
        with server.http(bot_token) as http:
            first = http.post(f"/v1/agents/{bot}/actions", json={"tool": "rm"}, headers=key)
            assert first.json()["decision"] == "denied"
            # An attacker turns the stored denial into an allow, so a retry would run the tool.
            with contextlib.closing(sqlite3.connect(db)) as conn, conn:
                edited = conn.execute(
                    "UPDATE idempotency SET result = replace(result, '\"denied\"', '\"allowed\"')"
                    " WHERE key LIKE 'http:%'"
                ).rowcount
            assert edited == 1
            retry = http.post(f"/v1/agents/{bot}/actions", json={"tool": "rm"}, headers=key)
        assert (retry.status_code, retry.json()["code"]) == (503, "quarantined")
        assert "edited after it was sealed" in retry.json()["error"]
        with server.http(other_token) as http:
            fine = http.post(f"/v1/agents/{other}/actions", json={"tool": "read"}, headers=key)
        assert fine.json()["decision"] == "allowed"
