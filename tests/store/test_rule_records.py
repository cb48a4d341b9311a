"""Ledger verification covers the rule a decision names: an edited rule index is caught."""

from __future__ import annotations

import json

import pytest

from guardkit import Guard
from guardkit.store import Signer, open_store
from tests.store.conftest import Raw

KEY = Signer.generate_hex()
POLICY = {
    "budget": 50,
    "scar_limit": 30,
    "tools": {
        "llm_turn": {"cost": 1},
        "send": {
            "cost": 1,
            "rules": [
                {
                    "when": {"properties": {"to": {"pattern": "@evil"}}},
                    "effect": "deny",
                    "reason": "no",
                },
                {"when": {"properties": {"to": {"pattern": "@ours$"}}}, "effect": "allow"},
            ],
        },
    },
}


def _guard(url: str) -> Guard:
    return Guard(open_store(url, signing_key=KEY))


def _setup(url: str) -> None:
    with _guard(url) as guard:
        for agent_id in ("bot", "other"):
            guard.create_agent(agent_id, POLICY)
        bot = guard.agent("bot")
        assert bot.request("send", {"to": "a@ours"})["decision"] == "allowed"  # rule 1
        assert bot.request("send", {"to": "a@evil"})["reason"]["rule"] == 0


def _allow_record(raw: Raw) -> tuple[int, str]:
    rows = raw(
        "SELECT seq, payload FROM records WHERE agent_id = 'bot' AND kind = 'action_allowed'"
    )
    return rows[0][0], rows[0][1]


def test_an_edited_rule_index_fails_verification(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    seq, payload = _allow_record(raw)
    edited = payload.replace('"rule":1', '"rule":0')
    assert edited != payload
    raw("UPDATE records SET payload = ? WHERE agent_id = 'bot' AND seq = ?", (edited, seq))
    with _guard(store_url) as guard:
        assert "bot" in guard.quarantined
        assert guard.agent("other").request("llm_turn", {})["decision"] == "allowed"


@pytest.mark.parametrize("index", [0, 7, "1"])
def test_a_re_signed_rule_index_the_policy_cannot_explain_is_refused(
    store_url: str, raw: Raw, index: object
) -> None:
    """Even the key holder cannot name a rule that does not allow (or does not exist)."""
    _setup(store_url)
    seq, payload = _allow_record(raw)
    record = json.loads(payload)
    record["rule"] = index
    raw.set_payload("bot", seq, record)
    raw.resign("bot", KEY)
    with _guard(store_url) as guard:
        assert "bot" in guard.quarantined
        assert "names rule" in guard.quarantined["bot"]
