"""``python -m guardkit``: the demo and the operator commands, run as a user would."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import pytest

from guardkit import Guard


def guardkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # From outside the checkout, so the installed guardkit runs, not the checkout's folder.
    return subprocess.run(
        [sys.executable, "-m", "guardkit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tempfile.gettempdir(),
    )


def test_demo_runs_the_whole_story(tmp_path) -> None:
    db = tmp_path / "demo.db"
    done = guardkit("demo", "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["outcome"] == "terminated"
    rows = {row["tool"]: row for row in report["decisions"] if row["tool"] != "llm_turn"}
    assert rows["delete_all_files"]["decision"] == "denied"
    assert rows["pay_invoice"]["decision"] == "allowed"
    assert "approved by approver-thread" in rows["pay_invoice"]["detail"]
    assert "minor scar" in rows["fetch_report"]["detail"]
    assert "harmful" in rows["post_update"]["detail"]
    assert report["decisions"][-1]["detail"] == "terminated"
    status = report["status"]
    assert status["alive"] is False
    assert status["scar_score"] == 3 + 1 + 10
    assert status["spent"] == 128
    assert report["ledger"] == str(db)
    verified = guardkit("verify", "ops-bot", "--db", str(db))
    assert verified.returncode == 0
    assert verified.stdout.startswith("ok:")


def test_demo_prints_a_table() -> None:
    done = guardkit("demo")
    assert done.returncode == 0, done.stderr
    assert "Every decision the guard made" in done.stdout
    assert "delete_all_files" in done.stdout
    assert "ledger:" in done.stdout


@pytest.fixture
def ledger(tmp_path):
    db = tmp_path / "ops.db"
    with Guard(str(db)) as guard:
        guard.create_agent(
            "bot",
            {
                "budget": 10,
                "tools": {"pay": {"cost": 1, "requires_approval": True}, "read": {"cost": 0}},
            },
        )
        agent = guard.agent("bot")
        agent.request("pay", {"to": "ACME"})
        agent.request("pay", {"to": "EVIL"})
        agent.request("read", {})
    return str(db)


def test_operator_commands(ledger) -> None:
    pending = guardkit("pending", "bot", "--db", ledger, "--json")
    assert [p["action"]["action_id"] for p in json.loads(pending.stdout)] == ["act-1", "act-2"]
    approved = guardkit("approve", "bot", "act-1", "--by", "alice", "--db", ledger, "--json")
    assert json.loads(approved.stdout)["decision"] == "allowed"
    rejected = guardkit(
        "reject",
        "bot",
        "act-2",
        "--by",
        "alice",
        "--reason",
        "wrong IBAN",
        "--scar",
        "moderate",
        "--db",
        ledger,
        "--json",
    )
    assert json.loads(rejected.stdout)["reason"]["code"] == "rejected"
    again = guardkit("approve", "bot", "act-1", "--by", "alice", "--db", ledger)
    assert again.returncode == 3
    assert again.stderr.startswith("Error: Action act-1 is ")  # a sentence, no "(invalid_state)"
    scarred = guardkit(
        "scar", "bot", "--severity", "minor", "--reason", "odd", "--db", ledger, "--json"
    )
    assert json.loads(scarred.stdout)["scar_score"] == 4
    status = guardkit("status", "bot", "--db", ledger)
    assert status.returncode == 0
    assert "4 of 10" in status.stdout
    listing = guardkit("agents", "--db", ledger, "--json")
    assert json.loads(listing.stdout)[0]["agent_id"] == "bot"
    log = guardkit("log", "bot", "--db", ledger, "--json", "--limit", "2")
    assert [r["kind"] for r in json.loads(log.stdout)["records"]] == ["genesis", "policy"]
    stopped = guardkit(
        "terminate", "bot", "--reason", "done", "--by", "alice", "--db", ledger, "--json"
    )
    assert json.loads(stopped.stdout)["alive"] is False
    twice = guardkit("terminate", "bot", "--reason", "done", "--by", "alice", "--db", ledger)
    assert twice.returncode == 3
    assert twice.stderr == "Error: Agent 'bot' is already terminated.\n"


def test_export_and_verify(ledger, tmp_path) -> None:
    out = tmp_path / "bot.jsonl"
    exported = guardkit("export", "bot", "-o", str(out), "--db", ledger)
    assert exported.returncode == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seq"] for r in lines] == list(range(len(lines)))
    assert lines[0]["kind"] == "genesis"
    with contextlib.closing(sqlite3.connect(ledger)) as conn, conn:
        conn.execute(
            'UPDATE records SET payload = \'{"action_id":"act-1","cost":0,'
            '"input":{},"tool":"pay"}\' WHERE agent_id = \'bot\' AND seq = 2'
        )
    broken = guardkit("verify", "bot", "--db", ledger, "--json")
    assert broken.returncode == 1
    assert json.loads(broken.stdout)["failure"]["reason"] == "hash mismatch"
    refused = guardkit("status", "bot", "--db", ledger)
    assert refused.returncode == 4
    assert "failed verification" in refused.stderr


def test_errors_and_usage(tmp_path, ledger) -> None:
    missing = guardkit("status", "bot", "--db", str(tmp_path / "nope.db"))
    assert missing.returncode == 2
    assert "Error: No ledger at " in missing.stderr
    assert "Use --db or GUARDKIT_DB to name one." in missing.stderr
    unknown = guardkit("status", "ghost", "--db", ledger)
    assert unknown.returncode == 3
    assert unknown.stderr == "Error: Unknown agent 'ghost'.\n"
    bad_policy = tmp_path / "bad.json"
    bad_policy.write_text('{"budget": -5, "tools": {}}')
    created = guardkit("create", "x", "--policy", str(bad_policy), "--db", ledger)
    assert created.returncode == 3
    assert created.stderr == (
        "Error: Invalid policy: budget: must be a whole number >= 0, got -5.\n"
    )
    good_policy = tmp_path / "good.toml"
    good_policy.write_text("budget = 5\n[tools.read]\ncost = 0\n")
    token = guardkit("create", "x", "--policy", str(good_policy), "--db", ledger)
    assert token.returncode == 0
    assert token.stdout.startswith("agt_x.")


def test_env_var_names_the_ledger(ledger) -> None:
    import os

    env = {**os.environ, "GUARDKIT_DB": ledger}
    assert guardkit("status", "bot", "--json", env=env).returncode == 0


def test_pending_says_why_and_shows_hidden_characters_escaped(tmp_path) -> None:
    db = str(tmp_path / "spoof.db")
    spoof = "invoice\u202efdp.exe"
    why = {
        "code": "untrusted_provenance",
        "argument": "to",
        "sources": ["untrusted:read_inbox:act-1"],
        "message": "to='attacker@evil.example': it does not occur in any trusted source",
    }
    with Guard(db) as guard:
        guard.create_agent("bot", {"budget": 10, "tools": {"send": {"cost": 0}}})
        agent = guard.agent("bot")
        agent.request_approval("send", {"to": "attacker@evil.example", "file": spoof}, None, why)
        agent.request("rm\u200b", {})  # unlisted: denied, and scarred with its name in the reason
    pending = guardkit("pending", "bot", "--db", db)
    assert pending.returncode == 0, pending.stderr
    assert "asks a human because untrusted_provenance: to='attacker@evil.example'" in (
        pending.stdout
    )
    assert "labels: untrusted:read_inbox:act-1" in pending.stdout
    for done in (
        pending,
        guardkit("log", "bot", "--db", db),
        guardkit("status", "bot", "--db", db),
        guardkit("pending", "bot", "--db", db, "--json"),
        guardkit("log", "bot", "--db", db, "--json"),
    ):
        assert done.returncode == 0, done.stderr
        assert "\u202e" not in done.stdout
        assert "\u200b" not in done.stdout
    assert "invoice\\u202efdp.exe" in pending.stdout
    assert "rm\\u200b" in guardkit("status", "bot", "--db", db).stdout
    shown = json.loads(guardkit("pending", "bot", "--db", db, "--json").stdout)
    assert shown[0]["action"]["input"]["file"] == spoof  # the JSON still says exactly what it was


def test_checkpoint_and_verify_against_it_and_a_pinned_key(tmp_path) -> None:
    from guardkit.store import Signer, fingerprint

    key, other = Signer.generate_hex(), Signer.generate_hex()
    public = Signer(key).public_key
    db = str(tmp_path / "signed.db")
    with Guard(db, signing_key=key) as guard:
        guard.create_agent("bot", {"budget": 5, "scar_limit": 3, "tools": {"read": {"cost": 1}}})
        guard.agent("bot").request("read", {})
    printed = guardkit("checkpoint", "bot", "--db", db)
    assert printed.returncode == 0, printed.stderr
    published = printed.stdout.strip()
    seq, digest = published.split(":")
    assert (int(seq), len(digest)) == (3, 64)
    pub_file = tmp_path / "audit.pub"
    pub_file.write_text(public + "\n")
    pinned = guardkit("verify", "bot", "--db", db, "--public-key", str(pub_file))
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    assert "pass --public-key" not in pinned.stderr
    assert guardkit("verify", "bot", "--db", db, "--checkpoint", published).returncode == 0
    wrong = guardkit("verify", "bot", "--db", db, "--public-key", Signer(other).public_key)
    assert wrong.returncode == 1
    assert fingerprint(Signer(other).public_key) in wrong.stdout
    env_pinned = guardkit(
        "status", "bot", "--db", db, env={**os.environ, "GUARDKIT_PUBLIC_KEY": public}
    )
    assert env_pinned.returncode == 0
    # Cut the ledger short: still a whole chain, but not the one that was published.
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM records WHERE agent_id = 'bot' AND seq >= 2")
    behind = guardkit("verify", "bot", "--db", db, "--json")  # its witness saw seq 3
    assert behind.returncode == 1
    assert "its witness saw seq 3" in json.loads(behind.stdout)["failure"]["reason"]
    assert guardkit("verify", "bot", "--db", db, "--witness", "none").returncode == 0
    cut = guardkit(
        "verify", "bot", "--db", db, "--witness", "none", "--checkpoint", published, "--json"
    )
    assert cut.returncode == 1
    assert "cut off" in json.loads(cut.stdout)["failure"]["reason"]
    assert guardkit("verify", "--db", db).returncode == 2  # neither an agent nor --file


def test_log_and_pending_show_the_rule_that_matched(tmp_path) -> None:
    db = str(tmp_path / "guard.db")
    rules = [
        {"when": {"properties": {"to": {"pattern": "@evil"}}}, "effect": "deny",
         "reason": "no evil"},
        {"when": {"properties": {"amount": {"minimum": 100}}}, "effect": "requires_approval",
         "reason": "big payments need a human"},
        {"when": {}, "effect": "allow"},
    ]  # fmt: skip
    with Guard(db) as guard:
        guard.create_agent("bot", {"budget": 100, "tools": {"pay": {"cost": 0, "rules": rules}}})
        agent = guard.agent("bot")
        agent.request("pay", {"to": "a@evil", "amount": 1})
        agent.request("pay", {"to": "a@ours", "amount": 500})
        agent.request("pay", {"to": "a@ours", "amount": 5})
    log = guardkit("log", "bot", "--db", db)
    assert log.returncode == 0, log.stderr
    assert "tool 'pay' denied by rule 0: no evil" in log.stdout
    assert "rule 1 of tool 'pay' asks for approval: big payments need a human" in log.stdout
    assert "allowed by rule 2" in log.stdout
    pending = guardkit("pending", "bot", "--db", db)
    assert "asks a human because rule 1 of tool 'pay' asks for approval" in pending.stdout
    assert '"amount": 500' in pending.stdout


def test_policy_check_names_every_problem(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'budget = 5\n[tools.pay]\ncost = 1\n[[tools.pay.rules]]\neffect = "deny"\n'
        'reason = "r"\nwhen = { properties = { amount = { minimum = "x" } } }\n'
        '[[tools.pay.rules]]\neffect = "maybe"\nwhen = {}\n',
        encoding="utf-8",
    )
    done = guardkit("policy", "check", str(bad))
    assert done.returncode == 1
    assert "tools.pay.rules[0].when.properties.amount.minimum: 'x' is not of type" in done.stdout
    assert "tools.pay.rules[1].effect: must be" in done.stdout
    shown = json.loads(guardkit("policy", "check", str(bad), "--json").stdout)
    assert shown["ok"] is False
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {"budget": 5, "tools": {"pay": {"cost": 1, "rules": [{"when": {}, "effect": "allow"}]}}}
        ),
        encoding="utf-8",
    )
    done = guardkit("policy", "check", str(good))
    assert (done.returncode, done.stdout.strip()) == (0, "ok: 1 tools, 1 rules")
