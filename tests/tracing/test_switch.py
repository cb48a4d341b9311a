"""Off by default, with no OpenTelemetry import; on through ``enable`` or the environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from guardkit import _semconv, tracing
from guardkit.errors import (
    GuardFailed,
    GuardUnavailable,
    IdempotencyConflict,
    IdempotencyInProgress,
    StoreError,
    ToolDenied,
)

_OFF_PROBE = """
import sys
from guardkit import tracing
assert not tracing.is_enabled()
span = tracing.tool_span("search", agent_id="bot")
with span as s:
    s.decision({"decision": "denied", "action_id": "act-1", "reason": {"code": "x"}})
    with s.approval_wait("act-1") as w:
        w.status("allowed")
with tracing.agent_span("bot") as a, tracing.chat_span(model="m") as c:
    c.reply(None); a.finish("done", 1)
assert span is tracing.tool_span("other") is tracing.guard_call_span("request")
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(extra)
    return env


def test_off_by_default_without_importing_opentelemetry():
    out = subprocess.run(
        [sys.executable, "-c", _OFF_PROBE], env=_clean_env(), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_environment_turns_it_on_with_a_console_exporter():
    probe = (
        "from guardkit import tracing\n"
        "assert tracing.is_enabled()\n"
        "with tracing.tool_span('search') as s:\n"
        "    s.decision({'decision': 'allowed', 'action_id': 'act-1'})\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=_clean_env(OTEL_TRACES_EXPORTER="console", OTEL_LOGS_EXPORTER="none"),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert '"name": "execute_tool search"' in out.stdout
    assert '"guardkit.decision": "allowed"' in out.stdout


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
    ],
)
def test_environment_that_does_not_ask_leaves_it_off(environ):
    assert tracing.enable_from_environment(environ) is False
    assert not tracing.is_enabled()


def test_disable_returns_to_the_noop(otel):
    assert tracing.is_enabled()
    tracing.disable()
    with tracing.tool_span("search") as span:
        span.decision({"decision": "allowed", "action_id": "act-1"})
    assert otel.finished() == []


def test_enable_for_cli_rejects_unknown_exporters():
    with pytest.raises(ValueError, match="'jaeger'"):
        tracing.enable_for_cli("jaeger")
    assert not tracing.is_enabled()


@pytest.mark.parametrize("kind", ["console", "otlp"])
def test_enable_for_cli_returns_a_shutdown(kind):
    shutdown = tracing.enable_for_cli(kind)
    try:
        assert tracing.is_enabled()
    finally:
        shutdown()
    assert not tracing.is_enabled()


def _stopped_by(failure: StoreError) -> GuardFailed:
    try:
        raise GuardFailed.at("model turn", failure) from failure
    except GuardFailed as stop:
        return stop


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ToolDenied("act-1", {"code": "rate_limited"}), "guardkit.denied"),
        (IdempotencyInProgress("k"), "guardkit.idempotency_in_progress"),
        (IdempotencyConflict("k"), "guardkit.idempotency_conflict"),
        (_stopped_by(GuardUnavailable("down")), "guardkit.guard_unavailable"),
        (_stopped_by(StoreError("disk full")), "guardkit.guard_failed"),
        (ValueError("x"), "ValueError"),
        (subprocess.CalledProcessError(1, "x"), "subprocess.CalledProcessError"),
    ],
)
def test_error_types(exc, expected):
    assert tracing.error_type(exc) == expected
    if expected.startswith("guardkit."):
        assert expected in _semconv.ERROR_TYPES


def test_the_docs_list_every_error_type_the_code_sets():
    root = Path(__file__).resolve().parents[2]
    documented = set(re.findall(r"^\| `([^`]+)` \|", (root / "docs/tracing.md").read_text(), re.M))
    constants = {v for k, v in vars(_semconv).items() if k.startswith("ERR_")}
    literal = set()
    for folder in ("guardkit", "plugins"):
        for source in (root / folder).rglob("*.py"):
            literal |= set(re.findall(r'\.fail\(\s*"([^"]+)"', source.read_text()))
    assert constants | literal <= documented
