"""``main()`` of each example: offline by default, the real-API path when a key is set.

The "real" path runs against the fake APIs: the SDKs read ``ANTHROPIC_BASE_URL``, and the payments
example reads ``DEEPSEEK_BASE_URL``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_payments_main_runs_offline(payments, capsys):
    assert payments.main(["--human", "auto"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Running offline with a scripted clerk")
    assert "Spent EUR 9,880.40 of 25,000.00; scar score 6/10; alive: True" in out
    assert "denied: tool 'send_email' is not allowed" in out


def test_ops_main_runs_offline(ops, capsys):
    assert ops.main([]) == 0
    out = capsys.readouterr().out
    assert "Run ended: terminated after 6 turns: scar limit reached (11 >= 10)" in out
    assert "monitor: open_ticket act-13: blocked ['bearer_token']" in out


def test_payments_main_uses_deepseek_when_a_key_is_set(
    payments, fake_deepseek, monkeypatch, capsys
):
    clerk_turns: list[Any] = []
    for turn in sys.modules["ap_script"].SCRIPT:
        if isinstance(turn, str):
            clerk_turns.append({"reasoning": "Done.", "content": turn})
        else:
            calls = [(name, json.dumps(args)) for name, args in turn]
            clerk_turns.append({"reasoning": "Next.", "tool_calls": calls})

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        if body["model"] == "deepseek-chat":  # the reviewer
            amount = json.loads(body["messages"][1]["content"])["amount"]
            decision = "escalate" if amount > 5000 else "approve"
            return {
                "content": json.dumps(
                    {"decision": decision, "risk": 10, "reasons": ["large amount"]}
                )
            }
        return clerk_turns.pop(0)

    fake_deepseek.next_step = answer
    monkeypatch.setenv("DEEPSEEK_API_KEY", "dummy")
    monkeypatch.setenv("DEEPSEEK_BASE_URL", f"{fake_deepseek.url}/v1")

    assert payments.main(["--human", "auto"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Running with DeepSeek.")
    assert "Spent EUR 9,880.40 of 25,000.00; scar score 6/10; alive: True" in out
    reviewed = [b for b in fake_deepseek.requests if b["model"] == "deepseek-chat"]
    assert len(reviewed) == 3  # the phishing payment never got past the hard rules
    assert fake_deepseek.headers[0]["authorization"] == "Bearer dummy"


def test_ops_main_uses_claude_when_a_key_is_set(ops, fake_anthropic, monkeypatch, capsys):
    steps = []
    for turn in sys.modules["ops_script"].SCRIPT:
        if isinstance(turn, str):
            steps.append({"content": [{"type": "text", "text": turn}]})
        else:
            uses = [{"type": "tool_use", "name": n, "input": a} for n, a in turn]
            steps.append({"content": uses, "stop_reason": "tool_use"})
    fake_anthropic.script = steps
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.url)

    assert ops.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Running with Claude.")
    assert "scar score 11/10; alive: False" in out
    first = fake_anthropic.requests[0]
    assert first["model"] == "claude-sonnet-5-5"
    assert first["fallbacks"] == "default"
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
