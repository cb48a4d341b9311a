"""The OpenAI-compatible adapter against a fake DeepSeek API, with the real ``openai`` SDK."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from guardkit.plugins._schema import tool_schemas
from guardkit.plugins.openai_compat import AsyncOpenAIModel, OpenAIModel

from guardkit import Guard
from guardkit.loop import arun, run


def lookup_invoice(invoice_id: str) -> dict[str, Any]:
    """Look an invoice up in the ledger.

    Args:
        invoice_id: The invoice number, e.g. INV-1.
    """
    return {"invoice_id": invoice_id, "amount": 1200.0}


def pay_invoice(invoice_id: str, iban: str, amount: float) -> str:
    """Pay an invoice."""
    return f"paid {invoice_id}"


TOOLS = {"lookup_invoice": lookup_invoice, "pay_invoice": pay_invoice}
SCHEMAS = tool_schemas(lookup_invoice, pay_invoice)
POLICY = {
    "budget": 5000,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 0, "max_calls": 6},
        "lookup_invoice": {"cost": 0},
        "pay_invoice": {"cost": 1},
    },
}


@pytest.fixture
def guard() -> Iterator[Guard]:
    with Guard() as guard:
        guard.create_agent("ap", POLICY)
        yield guard


@pytest.fixture
def client(fake_deepseek: Any) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(api_key="dummy", base_url=f"{fake_deepseek.url}/v1", max_retries=0) as c:
        yield c


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def go(model: Any, guard: Guard, prompt: str = "pay INV-1", **kwargs: Any) -> Any:
    return run(model, guard.agent("ap"), TOOLS, user(prompt), tool_schemas=SCHEMAS, **kwargs)


def test_reasoning_content_is_kept_on_every_earlier_assistant_message(guard, client, fake_deepseek):
    fake_deepseek.script = [
        {
            "reasoning": "Look it up first.",
            "tool_calls": [("lookup_invoice", '{"invoice_id": "INV-1"}')],
        },
        {
            "reasoning": "Now pay.",
            "tool_calls": [("pay_invoice", '{"invoice_id":"INV-1","iban":"DE01","amount":1200}')],
        },
        {"reasoning": "Done.", "content": "Paid INV-1."},
    ]
    model = OpenAIModel(client, "deepseek-reasoner", system="Be careful.")
    result = go(model, guard, costs={"pay_invoice": lambda args: args["amount"]})

    assert (result.outcome, result.text) == ("done", "Paid INV-1.")
    assert result.calls == [
        ("lookup_invoice", "act-2", "allowed"),
        ("pay_invoice", "act-4", "allowed"),
    ]
    assert guard.status("ap")["spent"] == 1200
    last = fake_deepseek.requests[2]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert [last[2]["reasoning_content"], last[4]["reasoning_content"]] == [
        "Look it up first.",
        "Now pay.",
    ]
    assert (
        last[4]["tool_calls"][0]["function"]["arguments"]
        == '{"invoice_id":"INV-1","iban":"DE01","amount":1200}'
    )
    assert json.loads(last[3]["content"]) == {"invoice_id": "INV-1", "amount": 1200.0}
    assert fake_deepseek.requests[0]["tools"][1]["function"]["parameters"]["required"] == [
        "invoice_id",
        "iban",
        "amount",
    ]


def test_reasoning_can_be_left_out_for_endpoints_that_refuse_it(guard, client, fake_deepseek):
    fake_deepseek.script = [
        {"reasoning": "Think.", "tool_calls": [("lookup_invoice", '{"invoice_id": "INV-1"}')]},
        {"reasoning": "Done.", "content": "ok"},
    ]
    result = go(OpenAIModel(client, "deepseek-r1", keep_reasoning=False), guard)

    assert result.outcome == "done"
    assert "reasoning_content" not in fake_deepseek.requests[1]["messages"][1]


def test_fake_answers_400_when_reasoning_content_is_dropped(guard, client, fake_deepseek):
    fake_deepseek.script = [
        {"reasoning": "Think.", "tool_calls": [("lookup_invoice", '{"invoice_id": "INV-1"}')]}
    ]
    model = OpenAIModel(client, "deepseek-reasoner")
    messages = user("look up INV-1")
    run(model, guard.agent("ap"), TOOLS, messages, max_turns=1, tool_schemas=SCHEMAS)
    del messages[1]["reasoning_content"]

    with pytest.raises(openai.BadRequestError, match="Missing `reasoning_content` field"):
        model.turn(messages, SCHEMAS)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"invoice_id": "INV-1", "iban": "DE01", "amount": 12', "arguments are not valid JSON"),
        ('["INV-1"]', "arguments must be a JSON object, got list"),
        (
            '{"invoice_id": "INV-1", "iban": "DE01", "amount": "12"}',
            "amount: expected number, got string",
        ),
        ('{"invoice_id": "INV-1", "amount": 12}', "iban: required field is missing"),
        (
            '{"invoice_id": "INV-1", "iban": "DE01", "amount": 12, "memo": "x"}',
            "memo: unexpected field",
        ),
    ],
)
def test_invalid_arguments_are_tool_errors_never_requested(
    guard, client, fake_deepseek, arguments, problem
):
    fake_deepseek.script = [
        {"reasoning": "Pay.", "tool_calls": [("pay_invoice", arguments)]},
        {"reasoning": "Give up.", "content": "I could not pay."},
    ]
    result = go(OpenAIModel(client, "deepseek-reasoner"), guard)

    assert result.calls == [("pay_invoice", None, "invalid")]
    error = fake_deepseek.requests[1]["messages"][2]
    assert error["role"] == "tool"
    assert error["content"].startswith("Error: invalid arguments for pay_invoice: ")
    assert problem in error["content"]
    status = guard.status("ap")
    assert (status["actions_allowed"], status["actions_denied"], status["spent"]) == (2, 0, 0)


def test_denied_and_pending_calls_come_back_as_tool_errors(guard, client, fake_deepseek):
    fake_deepseek.script = [
        {"tool_calls": [("wire_money", '{"to": "attacker"}')]},
        {"content": "Understood."},
    ]
    result = go(OpenAIModel(client, "deepseek-chat"), guard)

    assert result.calls == [("wire_money", "act-2", "denied")]
    assert "reasoning_content" not in fake_deepseek.requests[1]["messages"][1]  # plain OpenAI shape
    assert fake_deepseek.requests[1]["messages"][2]["content"].startswith(
        "Denied by the policy guard: tool 'wire_money' is not allowed."
    )
    assert guard.status("ap")["scar_score"] == 3


@pytest.mark.parametrize(
    ("finish", "outcome"), [("length", "max_tokens"), ("content_filter", "refusal")]
)
def test_abnormal_finish_reasons_stop_without_running_calls(
    guard, client, fake_deepseek, finish, outcome
):
    fake_deepseek.script = [
        {
            "content": "partial",
            "tool_calls": [("lookup_invoice", '{"invoice_id": "IN')],
            "finish_reason": finish,
        }
    ]
    result = go(OpenAIModel(client, "deepseek-chat"), guard)

    assert (result.outcome, result.text, result.calls) == (outcome, "partial", [])
    assert guard.status("ap")["actions_allowed"] == 1


def test_a_refusal_field_ends_the_run_as_a_refusal(guard, client, fake_deepseek):
    fake_deepseek.script = [{"refusal": "I can't help with moving money to that account."}]
    result = go(OpenAIModel(client, "gpt-test"), guard)

    assert (result.outcome, result.text) == (
        "refusal",
        "I can't help with moving money to that account.",
    )


def test_termination_by_the_operator_stops_the_loop(guard, client, fake_deepseek):
    def lookup_and_get_caught(invoice_id: str) -> str:
        guard.terminate("ap", "caught exfiltrating", "monitor")
        return "ok"

    fake_deepseek.script = [{"tool_calls": [("lookup_invoice", '{"invoice_id": "INV-1"}')] * 2}]
    tools = {"lookup_invoice": lookup_and_get_caught}
    result = run(
        OpenAIModel(client, "deepseek-chat"),
        guard.agent("ap"),
        tools,
        user("go"),
        tool_schemas=SCHEMAS,
    )

    assert (result.outcome, result.text) == ("terminated", "caught exfiltrating")
    assert result.calls == [("lookup_invoice", "act-2", "allowed")]
    assert len(fake_deepseek.requests) == 1


def test_async_model_runs_through_arun_with_async_tools(guard, fake_deepseek):
    fake_deepseek.script = [
        {"reasoning": "Look.", "tool_calls": [("lookup_invoice", '{"invoice_id": "INV-9"}')]},
        {"reasoning": "Done.", "content": "INV-9 is 1200."},
    ]

    async def lookup(invoice_id: str) -> str:
        await asyncio.sleep(0)
        return f"{invoice_id}: 1200"

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            api_key="dummy", base_url=f"{fake_deepseek.url}/v1", max_retries=0
        ) as c:
            model = AsyncOpenAIModel(c, "deepseek-reasoner")
            return await arun(
                model,
                guard.agent("ap"),
                {"lookup_invoice": lookup},
                user("go"),
                tool_schemas=SCHEMAS,
            )

    result = asyncio.run(main())
    assert (result.outcome, result.text) == ("done", "INV-9 is 1200.")
    assert fake_deepseek.requests[1]["messages"][2]["content"] == "INV-9: 1200"


def test_a_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match=r"pip install 'guardkit\[openai\]'"):
        OpenAIModel.from_env("deepseek-chat")
