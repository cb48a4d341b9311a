"""Both examples end to end over the real SDKs: one loop, two adapters, the same outcomes."""

from __future__ import annotations

import json
import sys
from typing import Any

import anthropic
import openai
from guardkit.plugins.anthropic import AnthropicModel
from guardkit.plugins.openai_compat import OpenAIModel


def test_payments_over_the_openai_sdk_against_fake_deepseek(payments, fake_deepseek):
    script = sys.modules["ap_script"].SCRIPT
    steps: list[Any] = []
    for number, turn in enumerate(script):
        if isinstance(turn, str):
            steps.append({"reasoning": "Summarise.", "content": turn})
            continue
        calls = [(name, json.dumps(args)) for name, args in turn]
        steps.append({"reasoning": f"Step {number}.", "tool_calls": calls})
    # A malformed call before the first payment: broken JSON is never requested, never run.
    steps.insert(
        2,
        {
            "reasoning": "Pay.",
            "tool_calls": [("pay_invoice", '{"invoice_id": "INV-1001", "amount": 1,250.00}')],
        },
    )
    fake_deepseek.script = steps

    with openai.OpenAI(
        api_key="dummy", base_url=f"{fake_deepseek.url}/v1", max_retries=0
    ) as client:
        model = OpenAIModel(client, "deepseek-reasoner", system="Every tool call is guarded.")
        out = payments.run_clerk(
            model, payments.approve_clean, reviewer_model=payments.scripted_reviewer
        )

    assert out.result.outcome == "done"
    assert out.result.calls[3] == ("pay_invoice", None, "invalid")
    assert [(p.invoice_id, p.amount) for p in out.bank.payments] == [
        ("INV-1001", 1250.0),
        ("INV-1002", 830.4),
        ("INV-1003", 7800.0),
    ]
    assert (out.status["spent"], out.status["scar_score"]) == (988_040, 6)
    last = fake_deepseek.requests[-1]["messages"]
    assert sum(1 for m in last if m["role"] == "assistant" and m.get("reasoning_content")) == 11


def test_ops_over_the_anthropic_sdk_against_the_fake_claude_api(ops, fake_anthropic):
    script = sys.modules["ops_script"].SCRIPT
    systems = sys.modules["ops_systems"]
    steps: list[Any] = []
    for number, turn in enumerate(script):
        think = {"type": "thinking", "thinking": f"Step {number}: decide what to do next."}
        if isinstance(turn, str):
            steps.append({"content": [think, {"type": "text", "text": turn}]})
            continue
        uses = [{"type": "tool_use", "name": name, "input": args} for name, args in turn]
        steps.append({"content": [think, *uses], "stop_reason": "tool_use"})
    fake_anthropic.script = steps

    with anthropic.Anthropic(api_key="dummy", base_url=fake_anthropic.url, max_retries=0) as client:
        model = AnthropicModel(
            client, "claude-test", system="Guarded.", cache=True, fallbacks="default"
        )
        out = ops.run_ops(model)

    assert (out.result.outcome, out.result.text) == ("terminated", "scar limit reached (11 >= 10)")
    assert (out.status["spent"], out.infra.tickets, out.infra.restarts) == (
        23,
        [],
        ["checkout"] * 2,
    )
    sent = json.dumps(fake_anthropic.requests)
    for secret in (systems.AWS_KEY, systems.DB_PASSWORD, "PRIVATE KEY"):
        assert secret not in sent
    assert "[REDACTED:password_in_url]" in sent
    assert len(fake_anthropic.requests) == 6  # nothing was sent after the termination
