"""``guardkit.refusal``: every way a call can be refused, worded once."""

from __future__ import annotations

import pytest

from guardkit import (
    ApprovalTimeout,
    GuardUnavailable,
    InvalidInput,
    ToolDenied,
    refusal,
)
from guardkit.loop import GUARD_UNREACHABLE

TAIL = "Nothing was done. Do not retry; choose another approach or ask a human."


@pytest.mark.parametrize(
    ("source", "code", "words", "action_id"),
    [
        (
            {
                "decision": "denied",
                "action_id": "act-3",
                "reason": {"code": "rejected", "by": "alice", "reason": "no"},
            },
            "rejected",
            "rejected by alice: no",
            "act-3",
        ),
        (
            ToolDenied("act-4", {"code": "tool_call_limit", "tool": "t", "max_calls": 2}),
            "tool_call_limit",
            "tool 't' reached its limit of 2 calls",
            "act-4",
        ),
        (ApprovalTimeout("act-5", 30), "approval_timeout", "no approval within 30s", "act-5"),
        (
            {"code": "path_denied", "message": "outside /srv"},
            "path_denied",
            "path_denied: outside /srv",
            None,
        ),
    ],
)
def test_denials_read_the_same_everywhere(source, code, words, action_id) -> None:
    found = refusal(source)
    assert found is not None
    assert found.code == code
    assert found.text == f"Denied by the policy guard: {words}. {TAIL}"
    assert found.action_id == action_id
    assert not found.terminated
    assert found.to_dict() == {
        "refused": True,
        "code": code,
        "message": found.text,
        "action_id": action_id,
        "terminated": False,
    }


def test_termination_says_stop() -> None:
    found = refusal(ToolDenied("act-9", {"code": "terminated", "reason": "scar limit"}))
    assert found is not None
    assert found.terminated
    assert "agent is terminated: scar limit" in found.text


def test_an_unreachable_guard_is_a_refusal_too() -> None:
    found = refusal(GuardUnavailable("connection refused"))
    assert found is not None
    assert found.text == GUARD_UNREACHABLE
    assert found.code == "guard_unreachable"


@pytest.mark.parametrize(
    "source",
    [
        {"decision": "allowed", "action_id": "act-1", "cost": 1, "remaining": 3},
        {"decision": "pending_approval", "action_id": "act-2"},
        RuntimeError("the tool broke"),
        InvalidInput("cost must be a number"),
        None,
    ],
)
def test_what_is_not_a_refusal(source) -> None:
    assert refusal(source) is None


def test_a_malformed_denied_decision_still_fails_closed() -> None:
    found = refusal({"decision": "denied", "action_id": "act-1", "reason": "??"})
    assert found is not None
    assert found.code == "denied"
