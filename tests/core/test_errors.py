"""The exception tree: Lineage's status and code, pickling, stdlib bases."""

from __future__ import annotations

import pickle

import pytest

import guardkit
from guardkit import errors


def _all_error_classes() -> list[type[errors.GuardError]]:
    return [getattr(errors, name) for name in errors.__all__]


def _make(cls: type[errors.GuardError]) -> errors.GuardError:
    if cls in (errors.GuardError, errors.GuardStop):
        return cls(500, "internal", "boom")
    if issubclass(cls, (errors.ActionDenied, errors.TurnDenied)):
        return cls("act-3", {"code": "tool_not_allowed", "tool": "rm"})
    if cls is errors.ApprovalTimeout:
        return cls("act-1", 5)
    if cls is errors.PolicyError:
        return cls([("budget", "is required")])
    return cls("something went wrong")


@pytest.mark.parametrize("cls", _all_error_classes(), ids=lambda c: c.__name__)
def test_every_error_pickles_and_keeps_its_fields(cls) -> None:
    error = _make(cls)
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls
    assert again.__dict__ == error.__dict__
    assert str(again) == str(error)
    # The sentence to read; status and code are attributes, never an HTTP prefix of the text.
    assert str(error) == error.message
    assert not str(error).startswith((f"{error.status} ", f"{error.code}:"))
    stops = isinstance(again, guardkit.GuardStop)
    assert isinstance(again, guardkit.GuardError) != stops


def test_stops_pass_through_except_exception_and_retry_wrappers() -> None:
    """A missing or failing guard, a refused model turn: the agent stops, nothing catches it."""
    for cls in (errors.NoAgentConfigured, errors.TurnDenied, errors.GuardFailed):
        assert not issubclass(cls, Exception)
        assert issubclass(cls, errors.GuardStop)
    attempts = []

    def retried():
        for _ in range(3):  # the shape of a hand-written retry loop
            try:
                attempts.append(1)
                raise errors.NoAgentConfigured.for_site("model turn")
            except Exception:
                continue
        return "gave up"

    with pytest.raises(errors.NoAgentConfigured, match=r"GUARDKIT_AGENT.*use_agent.*guard_agent"):
        retried()
    assert attempts == [1]


def test_stdlib_bases() -> None:
    assert issubclass(errors.PolicyError, ValueError)
    assert issubclass(errors.InvalidInput, ValueError)
    assert issubclass(errors.ApprovalTimeout, TimeoutError)


def test_tool_denied_message_is_the_seed_sentence() -> None:
    denied = errors.ToolDenied("act-9", {"code": "tool_call_limit", "tool": "t", "max_calls": 2})
    assert denied.message == (
        "Denied by the policy guard: tool 't' reached its limit of 2 calls. Nothing was done. "
        "Do not retry; choose another approach or ask a human."
    )
    assert denied.code == "tool_call_limit"
    assert denied.action_id == "act-9"


def test_public_surface() -> None:
    for name in guardkit.__all__:
        assert hasattr(guardkit, name)
    assert guardkit.Guard.__module__ == "guardkit"


def test_str_of_a_tool_denial_is_the_sentence_the_model_reads() -> None:
    denied = errors.ToolDenied("act-3", {"code": "tool_not_allowed", "tool": "rm"})
    assert str(denied) == denied.message
    assert str(denied).startswith("Denied by the policy guard: ")
    assert "Do not retry" in str(denied)
    assert (denied.status, denied.code) == (403, "tool_not_allowed")
