"""The Anthropic adapter, driven by guardkit.loop, with the real SDK against a local fake API."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from guardkit.plugins._schema import tool_schemas
from guardkit.plugins.anthropic import FALLBACK_BETA, AnthropicModel, AsyncAnthropicModel

from guardkit import Guard
from guardkit.loop import arun, run

THINK = {"type": "thinking", "thinking": "The user wants the api logs; read them first."}
SECRET_THOUGHTS = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}


def read_logs(service: str, lines: int = 20) -> str:
    """Read the last log lines of a service.

    Args:
        service: The service name.
        lines: How many lines.
    """
    return f"{service}: {lines} lines, 2 errors"


def restart_service(service: str) -> str:
    """Restart a service."""
    return f"restarted {service}"


TOOLS = {"read_logs": read_logs, "restart_service": restart_service}
SCHEMAS = tool_schemas(read_logs, restart_service)
POLICY = {
    "budget": 1000,
    "scar_limit": 10,
    "tools": {
        "llm_turn": {"cost": 1, "max_calls": 5},
        "llm_tokens": {"cost": 0},
        "read_logs": {"cost": 1},
    },
}


@pytest.fixture
def guard() -> Iterator[Guard]:
    with Guard() as guard:
        guard.create_agent("ops", POLICY)
        yield guard


@pytest.fixture
def client(fake_anthropic: Any) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(api_key="dummy", base_url=fake_anthropic.url, max_retries=0) as c:
        yield c


def use(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": args}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def user(value: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": value}]


def test_tool_use_round_trip_keeps_thinking_blocks_byte_identical(guard, client, fake_anthropic):
    fake_anthropic.script = [
        {
            "content": [THINK, SECRET_THOUGHTS, use("read_logs", service="api")],
            "stop_reason": "tool_use",
        },
        {"content": [text("api has 2 errors.")]},
    ]
    model = AnthropicModel(
        client, "claude-test", thinking={"type": "enabled", "budget_tokens": 1024}
    )
    result = run(model, guard.agent("ops"), TOOLS, user("check api"), tool_schemas=SCHEMAS)

    assert (result.outcome, result.text) == ("done", "api has 2 errors.")
    assert result.calls == [("read_logs", "act-2", "allowed")]
    assert guard.action("ops", "act-2")["input"] == {"service": "api"}
    first, second = fake_anthropic.requests
    sent_back = second["messages"][1]["content"]
    issued = [THINK | {"signature": sent_back[0]["signature"]}, SECRET_THOUGHTS]
    assert sent_back[:2] == issued
    assert sent_back[0]["signature"] == fake_anthropic.issue(THINK)["signature"]
    assert second["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": sent_back[2]["id"],
                "content": "api: 20 lines, 2 errors",
            }
        ],
    }
    assert first["tools"] == SCHEMAS
    assert first["thinking"]["type"] == "enabled"


@pytest.mark.parametrize(
    ("index", "field", "error"),
    [
        (0, "thinking", "Invalid `signature` in `thinking` block"),
        (1, "data", "Invalid `data` in `redacted_thinking` block"),
    ],
)
def test_fake_rejects_altered_thinking_blocks(guard, client, fake_anthropic, index, field, error):
    fake_anthropic.script = [
        {"content": [THINK, SECRET_THOUGHTS, text("hi")]},
        {"content": [text("ok")]},
    ]
    model = AnthropicModel(client, "claude-test")
    messages = user("hello")
    run(model, guard.agent("ops"), TOOLS, messages)
    messages.append({"role": "user", "content": "go on"})
    unchanged = list(messages)
    block = messages[1]["content"][index]
    edited = block.model_copy(update={field: getattr(block, field) + "x"})
    messages[1] = {"role": "assistant", "content": [*messages[1]["content"]]}
    messages[1]["content"][index] = edited

    with pytest.raises(anthropic.BadRequestError, match=error):
        model.turn(messages, [])
    assert model.turn(unchanged, []).text == "ok"


def test_parallel_results_share_one_user_turn_and_denials_are_errors(guard, client, fake_anthropic):
    fake_anthropic.script = [
        {
            "content": [use("read_logs", service="db"), use("restart_service", service="db")],
            "stop_reason": "tool_use",
        },
        {"content": [text("Read the logs; the restart was denied.")]},
    ]
    result = run(
        AnthropicModel(client, "claude-test"),
        guard.agent("ops"),
        TOOLS,
        user("fix db"),
        tool_schemas=SCHEMAS,
    )

    assert result.outcome == "done"
    assert result.calls == [
        ("read_logs", "act-2", "allowed"),
        ("restart_service", "act-3", "denied"),
    ]
    results = fake_anthropic.requests[1]["messages"][2]["content"]
    assert [block.get("is_error", False) for block in results] == [False, True]
    assert results[1]["content"].startswith(
        "Denied by the policy guard: tool 'restart_service' is not allowed."
    )
    assert guard.status("ops")["scar_score"] == 3


def test_refusal_ends_the_run_with_the_explanation(guard, client, fake_anthropic):
    details = {"type": "refusal", "category": "cyber", "explanation": "This could enable harm."}
    fake_anthropic.script = [{"content": [], "stop_reason": "refusal", "stop_details": details}]
    result = run(
        AnthropicModel(client, "claude-test"), guard.agent("ops"), TOOLS, user("write malware")
    )

    assert (result.outcome, result.text, result.calls) == ("refusal", "This could enable harm.", [])


def test_max_tokens_never_runs_a_truncated_tool_call(guard, client, fake_anthropic):
    fake_anthropic.script = [
        {"content": [text("Let me"), use("read_logs", service="a")], "stop_reason": "max_tokens"}
    ]
    result = run(
        AnthropicModel(client, "claude-test"),
        guard.agent("ops"),
        TOOLS,
        user("go"),
        tool_schemas=SCHEMAS,
    )

    assert (result.outcome, result.text, result.calls) == ("max_tokens", "Let me", [])
    assert guard.status("ops")["actions_allowed"] == 1  # the llm_turn only


@pytest.mark.parametrize(
    ("first", "stop"),
    [
        (text("Searching..."), "pause_turn"),
        ({"type": "compaction", "content": "Summary of the earlier turns."}, "compaction"),
    ],
)
def test_a_paused_turn_is_continued_by_another_gated_turn(
    guard, client, fake_anthropic, first, stop
):
    fake_anthropic.script = [
        {"content": [first], "stop_reason": stop},
        {"content": [text("Found it.")]},
    ]
    result = run(AnthropicModel(client, "claude-test"), guard.agent("ops"), TOOLS, user("search"))

    assert (result.outcome, result.text, result.turns) == ("done", "Found it.", 2)
    assert fake_anthropic.requests[1]["messages"][-1] == {"role": "assistant", "content": [first]}
    assert guard.status("ops")["spent"] == 2


def test_schema_violations_go_back_as_errors_and_are_never_requested(guard, client, fake_anthropic):
    fake_anthropic.script = [
        {"content": [use("read_logs", service=5, verbose=True)], "stop_reason": "tool_use"},
        {"content": [text("ok")]},
    ]
    result = run(
        AnthropicModel(client, "claude-test"),
        guard.agent("ops"),
        TOOLS,
        user("go"),
        tool_schemas=SCHEMAS,
    )

    assert result.calls == [("read_logs", None, "invalid")]
    error = fake_anthropic.requests[1]["messages"][2]["content"][0]
    assert error["is_error"] is True
    assert "service: expected string, got integer; verbose: unexpected field" in error["content"]
    status = guard.status("ops")
    assert (status["actions_allowed"], status["actions_denied"]) == (2, 0)


def test_caching_and_refusal_fallback_options_are_sent(guard, client, fake_anthropic):
    handover = {
        "type": "fallback",
        "from": {"model": "claude-test"},
        "to": {"model": "claude-fallback"},
        "trigger": {"type": "refusal", "category": "cyber"},
    }
    fake_anthropic.script = [
        {"content": [handover, use("read_logs", service="api")], "stop_reason": "tool_use"},
        {"content": [text("done")]},
    ]
    model = AnthropicModel(
        client, "claude-test", system="Be careful.", cache=True, fallbacks="default"
    )
    result = run(model, guard.agent("ops"), TOOLS, user("go"), tool_schemas=SCHEMAS)

    assert result.outcome == "done"
    first, second = fake_anthropic.requests
    assert first["system"] == [
        {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}
    ]
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in first["tools"][0]
    assert first["fallbacks"] == "default"
    assert FALLBACK_BETA in fake_anthropic.headers[0]["anthropic-beta"]
    assert second["messages"][1]["content"][0] == handover


def test_tokens_used_are_charged_after_each_turn(guard, client, fake_anthropic):
    usage = {"input_tokens": 300, "output_tokens": 40, "cache_read_input_tokens": 60}
    fake_anthropic.script = [
        {"content": [use("read_logs", service="api")], "stop_reason": "tool_use", "usage": usage},
        {"content": [text("done")], "usage": usage},
    ]
    result = run(
        AnthropicModel(client, "claude-test"),
        guard.agent("ops"),
        TOOLS,
        user("go"),
        tool_schemas=SCHEMAS,
        usage_tool="llm_tokens",
    )

    assert result.outcome == "done"
    assert guard.status("ops")["spent"] == 2 * 1 + 1 + 2 * 400
    assert guard.action("ops", "act-1")["outcome"] == "success"
    tokens = guard.action("ops", "act-2")
    assert (tokens["tool"], tokens["input"], tokens["cost"]) == (
        "llm_tokens",
        {"turn": "act-1", "tokens": 400},
        400,
    )


def test_a_runaway_model_is_stopped_by_llm_turn(guard, client, fake_anthropic):
    fake_anthropic.script = [
        {"content": [use("read_logs", service="x")], "stop_reason": "tool_use"}
    ] * 9
    result = run(
        AnthropicModel(client, "claude-test"),
        guard.agent("ops"),
        TOOLS,
        user("loop"),
        tool_schemas=SCHEMAS,
    )

    assert result.outcome == "denied_turn"
    assert "reached its limit of 5 calls" in result.text
    assert (result.turns, len(fake_anthropic.requests)) == (5, 5)


def test_async_model_runs_through_arun(guard, fake_anthropic):
    fake_anthropic.script = [
        {"content": [THINK, use("read_logs", service="api")], "stop_reason": "tool_use"},
        {"content": [text("async done")]},
    ]

    async def main() -> Any:
        async with anthropic.AsyncAnthropic(
            api_key="dummy", base_url=fake_anthropic.url, max_retries=0
        ) as c:
            model = AsyncAnthropicModel(c, "claude-test")
            return await arun(model, guard.agent("ops"), TOOLS, user("go"), tool_schemas=SCHEMAS)

    result = asyncio.run(main())
    assert (result.outcome, result.text) == ("done", "async done")
    assert result.calls == [("read_logs", "act-2", "allowed")]
    sent_back = fake_anthropic.requests[1]["messages"][1]["content"][0]
    assert sent_back == fake_anthropic.issue(THINK)
