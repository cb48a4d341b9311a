"""An outcome that blames someone other than the agent is a failure's, and replay checks it."""

from __future__ import annotations

import json

import pytest

from guardkit import Guard
from guardkit.store import Signer, open_store
from tests.store.conftest import Raw

KEY = Signer.generate_hex()
POLICY = {"budget": 50, "scar_limit": 30, "tools": {"fetch": {"cost": 1}}}


def _guard(url: str) -> Guard:
    return Guard(open_store(url, signing_key=KEY))


def _setup(url: str) -> None:
    with _guard(url) as guard:
        for agent_id in ("bot", "other"):
            guard.create_agent(agent_id, POLICY)
        bot = guard.agent("bot")
        bot.request("fetch", {"url": "a"})
        bot.request("fetch", {"url": "b"})
        bot.report("act-1", "success")
        status = bot.report("act-2", "failure", "upstream timed out", fault="upstream")
        assert status["scars"] == []


def test_a_reopened_ledger_keeps_the_unscarred_failure(store_url: str) -> None:
    _setup(store_url)
    with _guard(store_url) as guard:
        assert guard.quarantined == {}
        assert guard.agent("bot").status()["scar_score"] == 0
        assert guard.verify("bot")["ok"] is True


@pytest.mark.parametrize(
    ("seq_kind", "fault"), [("success", "upstream"), ("failure", "agent"), ("failure", "nobody")]
)
def test_a_re_signed_fault_no_guard_could_write_is_refused(
    store_url: str, raw: Raw, seq_kind: str, fault: str
) -> None:
    """Even the key holder cannot blame the upstream for a success, nor name a made-up fault."""
    _setup(store_url)
    rows = raw("SELECT seq, payload FROM records WHERE agent_id = 'bot' AND kind = 'outcome'")
    seq, payload = next((s, p) for s, p in rows if json.loads(p)["status"] == seq_kind)
    record = json.loads(payload)
    record["fault"] = fault
    raw.set_payload("bot", seq, record)
    raw.resign("bot", KEY)
    with _guard(store_url) as guard:
        assert "bot" in guard.quarantined
        assert "blames" in guard.quarantined["bot"]
        assert guard.agent("other").request("fetch", {})["decision"] == "allowed"
