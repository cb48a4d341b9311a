"""An attacker with write access to the database, on SQLite and PostgreSQL.

Each edit is made with plain SQL behind guardkit's back. Whatever it touches (an agent's row, an
action's records, the index that finds them, a whole ledger re-signed under another key, the
tail of a ledger) is caught: at the next open, and where it is used by a guard that is already
running. The agent it touched is quarantined; the other agent keeps working.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from guardkit import Guard, LedgerTampered, StoreError
from guardkit.errors import AlreadyConsumed, ConsumeMismatch
from guardkit.store import Signer, fingerprint, open_store
from guardkit.store.chain import record_hash
from tests.store.conftest import Raw

KEY = Signer.generate_hex()
PUBLIC = Signer(KEY).public_key
POLICY = {
    "budget": 50,
    "scar_limit": 30,
    "tools": {"llm_turn": {"cost": 1}, "pay": {"cost": 2, "requires_approval": True}},
}
IBAN = "DE02120300000000202051"
PAYMENT = {"to": "acme", "iban": IBAN, "amount": 2}


def _guard(url: str, **keys: Any) -> Guard:
    return Guard(open_store(url, **(keys or {"signing_key": KEY})))


def _setup(url: str) -> None:
    """bot: a used budget, a denial, a pending payment (act-3); other: one request."""
    with _guard(url) as guard:
        for agent_id in ("bot", "other"):
            guard.create_agent(agent_id, POLICY)
            guard.agent(agent_id).request("llm_turn", {})
        bot = guard.agent("bot")
        assert bot.request("rm_rf", {"path": "/"})["decision"] == "denied"  # act-2
        assert bot.request("pay", PAYMENT)["decision"] == "pending_approval"  # act-3


def _assert_only_bot_refused(guard: Guard, words: str) -> None:
    assert set(guard.quarantined) == {"bot"}, guard.quarantined
    assert words in guard.quarantined["bot"]
    with pytest.raises(LedgerTampered) as caught:
        guard.status("bot")
    assert (caught.value.status, caught.value.code) == (503, "quarantined")
    if guard.store.signer is None:  # verifying only: the other agent still reads
        assert guard.status("other")["alive"] is True
    else:
        assert guard.agent("other").request("llm_turn", {})["decision"] == "allowed"


def _record(raw: Raw, agent_id: str, kind: str) -> tuple[Any, ...]:
    rows = raw(
        "SELECT seq, timestamp, actor, kind, payload, prev_hash FROM records "
        "WHERE agent_id = ? AND kind = ? ORDER BY seq",
        (agent_id, kind),
    )
    return rows[-1]


def _forge(raw: Raw, agent_id: str, seq: int, payload: str, kind: str | None = None) -> None:
    """Replace one record's payload (and kind) with a freshly computed hash, signed by us."""
    (_, ts, actor, old_kind, _, prev) = raw(
        "SELECT seq, timestamp, actor, kind, payload, prev_hash FROM records "
        "WHERE agent_id = ? AND seq = ?",
        (agent_id, seq),
    )[0]
    kind = kind or old_kind
    digest = record_hash(seq, ts, actor, kind, payload, prev)
    signature = Signer(Signer.generate_hex()).sign(digest)  # the attacker's own key
    raw(
        "UPDATE records SET kind = ?, payload = ?, hash = ?, signature = ? "
        "WHERE agent_id = ? AND seq = ?",
        (kind, payload, digest, signature, agent_id, seq),
    )


# -- the agent's row -----------------------------------------------------------------------------


def test_raising_the_budget_in_the_policy_column(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    running = _guard(store_url)
    raised = json.dumps({**POLICY, "budget": 10**9}, sort_keys=True, separators=(",", ":"))
    raw("UPDATE agents SET policy = ? WHERE agent_id = 'bot'", (raised,))
    # A running guard decides on the policy its ledger records, never on the column...
    assert running.status("bot")["budget"] == 50
    assert running.agent("bot").request("llm_turn", {}, cost=50)["reason"]["code"] == (
        "insufficient_budget"
    )
    running.close()
    # ...and the next open refuses the agent whose row disagrees with its ledger.
    with _guard(store_url) as guard:
        _assert_only_bot_refused(guard, "stored policy of 'bot' is not the one its ledger records")


def test_freeing_a_sub_agent_from_its_parent(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    with _guard(store_url) as guard:
        guard.spawn("other", "kid", POLICY | {"budget": 5}, 5)
    raw("UPDATE agents SET parent_id = NULL WHERE agent_id = 'kid'")
    with _guard(store_url) as guard:
        assert set(guard.quarantined) == {"kid"}
        assert "does not name 'other'" in guard.quarantined["kid"]
        assert guard.agent("bot").request("llm_turn", {})["decision"] == "allowed"


# -- an action's records ---------------------------------------------------------------------------


@pytest.mark.parametrize("rehash", [False, True], ids=["edited", "edited-rehashed-resigned"])
def test_swapping_the_iban_of_a_pending_payment(store_url: str, raw: Raw, rehash: bool) -> None:
    _setup(store_url)
    server = _guard(store_url)  # the process that recorded the payment, still running
    server.pending("bot")
    operator = _guard(store_url)  # e.g. the CLI, opened before the edit
    seq, _, _, _, payload, _ = _record(raw, "bot", "action_requested")
    swapped = payload.replace(IBAN, "GB33BUKB20201555555555")
    if rehash:
        _forge(raw, "bot", seq, swapped)
    else:
        raw("UPDATE records SET payload = ? WHERE agent_id = 'bot' AND seq = ?", (swapped, seq))
    # What the approver reads is checked against the chain where it is read: refused.
    with pytest.raises(LedgerTampered, match="does not verify"):
        operator.pending("bot")
    with pytest.raises(LedgerTampered):
        operator.approve("bot", "act-3", "alice")
    assert set(operator.quarantined) == {"bot"}
    assert operator.agent("other").request("llm_turn", {})["decision"] == "allowed"
    operator.close()
    # The process that wrote it shows, approves and lets the bank consume what was asked.
    assert server.pending("bot")[0]["action"]["input"]["iban"] == IBAN
    server.approve("bot", "act-3", "alice")
    with pytest.raises(ConsumeMismatch):
        server.consume("bot", "act-3", "pay", {**PAYMENT, "iban": "GB33BUKB20201555555555"})
    server.close()
    with _guard(store_url) as guard:
        _assert_only_bot_refused(guard, "failed verification")


@pytest.mark.parametrize("how", ["rewrite-kind", "delete-denial", "misdirect-search"])
def test_a_denied_action_made_to_look_allowed(store_url: str, raw: Raw, how: str) -> None:
    _setup(store_url)
    bank = _guard(store_url)  # a backend's guard, running; it never read act-2
    seq = _record(raw, "bot", "action_denied")[0]
    if how == "rewrite-kind":
        _forge(raw, "bot", seq, '{"action_id":"act-2","approved_by":null}', "action_allowed")
        words = "the record after it does not follow it"  # then: bad signature
    elif how == "delete-denial":
        raw("DELETE FROM records WHERE agent_id = 'bot' AND seq = ?", (seq,))
        words = "is missing"
    else:  # the counts that lead to an action's request now lead elsewhere
        raw("UPDATE records SET requested = requested - 1 WHERE agent_id = 'bot' AND seq > 2")
        words = "it is not about act-2"
    with pytest.raises(LedgerTampered, match=words):
        bank.consume("bot", "act-2", "rm_rf", {"path": "/"})
    assert set(bank.quarantined) == {"bot"}
    bank.close()
    with _guard(store_url) as guard:
        _assert_only_bot_refused(guard, "ledger of 'bot'")


def test_a_consumption_cannot_be_undone(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    bank = _guard(store_url)
    bank.approve("bot", "act-3", "alice")
    bank.consume("bot", "act-3", "pay", PAYMENT)
    bank.agent("bot").request("llm_turn", {})  # the consumption is no longer the last record
    raw("DELETE FROM records WHERE agent_id = 'bot' AND kind = 'action_consumed'")
    with pytest.raises(AlreadyConsumed):  # the running guard folded the consumption: never twice
        bank.consume("bot", "act-3", "pay", PAYMENT)
    bank.close()
    with _guard(store_url) as guard:
        _assert_only_bot_refused(guard, "failed verification")


# -- keys and checkpoints ----------------------------------------------------------------------


def test_a_ledger_re_signed_under_another_key(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    mallory = Signer.generate_hex()
    raw.resign("bot", mallory)
    # Unpinned and without a witness, the rewrite verifies: that is why the key is pinned
    # outside the database (and the heads witnessed: tests/store/test_witness.py).
    with Guard(open_store(store_url, witness=None)) as unpinned:
        assert unpinned.verify("bot")["ok"] is True
        assert unpinned.verify("bot", public_key=PUBLIC)["ok"] is False
    for keys in ({"signing_key": KEY}, {"public_key": PUBLIC}):
        with _guard(store_url, **keys) as guard:
            _assert_only_bot_refused(guard, f"is not the trusted key {fingerprint(PUBLIC)}")
            assert guard.verify("bot")["ok"] is False


def test_a_store_whose_ledgers_another_key_signed_is_refused_at_open(
    store_url: str, raw: Raw
) -> None:
    _setup(store_url)
    mallory = Signer.generate_hex()
    for agent_id in ("bot", "other"):
        raw.resign(agent_id, mallory)
    with pytest.raises(StoreError) as caught:
        _guard(store_url)
    message = caught.value.message
    assert fingerprint(Signer(mallory).public_key) in message
    assert fingerprint(PUBLIC) in message
    assert "open the store with the key that signed them" in message


def test_truncation_behind_a_published_checkpoint(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    with _guard(store_url) as guard:
        published = guard.checkpoint("bot")
        guard.agent("bot").request("llm_turn", {})
    running = _guard(store_url)
    cut = int(published.split(":")[0])
    raw("DELETE FROM records WHERE agent_id = 'bot' AND seq >= ?", (cut,))
    # A consistent cut is a whole chain; only the running guard's memory and the published
    # checkpoint know better.
    with pytest.raises(LedgerTampered, match="cut off or rewritten"):
        running.status("bot")
    running.close()
    # Without its witness (tests/store/test_witness.py), only the checkpoint knows better.
    with _guard(store_url, signing_key=KEY, witness=None) as guard:
        assert guard.quarantined == {}
        assert guard.verify("bot")["ok"] is True
        result = guard.verify("bot", checkpoint=published)
    assert result["ok"] is False
    assert "records were cut off" in result["failure"]["reason"]


def test_a_rewrite_by_the_key_holder_behind_a_checkpoint(store_url: str, raw: Raw) -> None:
    _setup(store_url)
    with _guard(store_url) as guard:
        published = guard.checkpoint("bot")
    (stamp,) = raw("SELECT timestamp FROM records WHERE agent_id = 'bot' AND seq = 1")[0]
    raw(
        "UPDATE records SET timestamp = ? WHERE agent_id = 'bot' AND seq = 1",
        (stamp[:-4] + "999Z",),
    )
    raw.resign("bot", KEY)  # whoever holds the key can rewrite and re-sign everything...
    with _guard(store_url, signing_key=KEY, witness=None) as guard:  # (and the witness too)
        assert guard.verify("bot")["ok"] is True
        result = guard.verify("bot", checkpoint=published)
    assert result["ok"] is False  # ...except what was published
    assert "has another hash" in result["failure"]["reason"]


# -- idempotency records ------------------------------------------------------------------------


def test_an_edited_idempotency_record_is_refused_and_its_agent_quarantined(
    store_url: str, raw: Raw
) -> None:
    from guardkit.protocols import IdemRecord

    _setup(store_url)
    guard = _guard(store_url)
    stored = IdemRecord(
        key="tool:pay",
        status="COMPLETED",
        payload_hash="ab" * 32,
        owner="o",
        lease_expires=1.0,
        result_json='{"paid":1}',
        action_id="act-1",
        agent_id="bot",
    )
    with guard.store.transaction() as tx:
        tx.idem_put(stored)
    with guard.store.transaction(write=False) as tx:
        assert tx.idem_get("tool:pay") == stored
    raw("UPDATE idempotency SET result = '{\"paid\":0}' WHERE key = 'tool:pay'")
    with (
        pytest.raises(LedgerTampered, match="edited after it was sealed"),
        guard.store.transaction(write=False) as tx,
    ):
        tx.idem_get("tool:pay")
    assert set(guard.quarantined) == {"bot"}
    assert guard.agent("other").request("llm_turn", {})["decision"] == "allowed"
    guard.close()


def test_an_idempotency_record_sealed_under_another_key_is_refused(store_url: str) -> None:
    from guardkit.protocols import IdemRecord

    record = IdemRecord(key="k", status="IN_PROGRESS", payload_hash="h", owner="o", lease_expires=1)
    with _guard(store_url) as signed, signed.store.transaction() as tx:
        tx.idem_put(record)
    with (
        Guard(open_store(store_url)) as unsigned,  # no key: it can't have sealed that record
        pytest.raises(LedgerTampered, match="sealed under key"),
        unsigned.store.transaction(write=False) as tx,
    ):
        tx.idem_get("k")


def test_the_newest_signature_vouches_at_open_and_an_audit_checks_every_one(
    store_url: str, raw: Raw
) -> None:
    _setup(store_url)
    (last,) = raw("SELECT max(seq) FROM records WHERE agent_id = 'bot'")[0]
    forged = Signer(Signer.generate_hex()).sign("ab" * 32)
    raw("UPDATE records SET signature = ? WHERE agent_id = 'bot' AND seq = 3", (forged,))
    with _guard(store_url) as guard:
        # Every hash covers the one before it, so the newest record's good signature vouches
        # for the content of record 3: the open trusts the chain, the audit names the record.
        assert guard.quarantined == {}
        audit = guard.verify("bot")
        assert (audit["ok"], audit["failure"]["seq"]) == (False, 3)
        assert audit["failure"]["reason"] == "bad signature"
    raw("UPDATE records SET signature = ? WHERE agent_id = 'bot' AND seq = ?", (forged, last))
    with _guard(store_url) as guard:
        _assert_only_bot_refused(guard, "bad signature")
