"""The engine's input checks and the words it uses on its hot path (``guardkit.engine``)."""

from __future__ import annotations

import re
from typing import Any

from guardkit import rules
from guardkit._canonical import text_problem
from guardkit.decisions import ActionStatus, Fault, Outcome, Severity
from guardkit.errors import Forbidden, InvalidInput, UnknownAction
from guardkit.policy import Policy
from guardkit.store.chain import json_str
from guardkit.store.state import SPAWN_TOOL

__all__ = ["DEFAULT_MAX_INPUT_BYTES"]

_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ACTION_ID = re.compile(r"act-([1-9][0-9]{0,17})")
DEFAULT_MAX_INPUT_BYTES = 1 << 20
# The words as plain strings: ``Enum.value`` is a property call, and these sit on the hot path.
_PENDING = ActionStatus.PENDING_APPROVAL.value
_ALLOWED = ActionStatus.ALLOWED.value
_DENIED = ActionStatus.DENIED.value
_COMPLETED = ActionStatus.COMPLETED.value
_OUTCOMES = frozenset(o.value for o in Outcome)
_FAILURE = Outcome.FAILURE.value
_SUCCESS = Outcome.SUCCESS.value
_HARMFUL = Outcome.HARMFUL.value
_FAULTS = frozenset(f.value for f in Fault)
_AGENT_FAULT = Fault.AGENT.value
_LOG_LIMIT_DEFAULT = 500
_LOG_LIMIT_MAX = 5000


def _check_agent_id(agent_id: Any) -> str:
    if not isinstance(agent_id, str) or not _AGENT_ID.fullmatch(agent_id):
        raise InvalidInput(f"agent ids are 1-64 characters of [A-Za-z0-9_-], got {agent_id!r}")
    return agent_id


def _action_number(action_id: Any) -> int:
    if type(action_id) is str and 4 < len(action_id) < 23 and action_id[4] != "0":
        digits = action_id[4:]
        if action_id.startswith("act-") and digits.isascii() and digits.isdigit():
            return int(digits)
    match = _ACTION_ID.fullmatch(action_id) if isinstance(action_id, str) else None
    if match is None:
        raise UnknownAction(f"unknown action {action_id!r}")
    return int(match.group(1))


def _has_ttl(policy: Policy) -> bool:
    return policy.approval_ttl is not None or any(r.approval_ttl for r in policy.tools.values())


def _severity(value: Any) -> Severity:
    try:
        return Severity(value)
    except ValueError:
        raise InvalidInput("severity must be minor, moderate, severe or fatal") from None


def _check_outcome(status: str, detail: str | None, fault: str, operator: bool) -> str:
    """The checked ``detail`` of an outcome, or why it cannot be recorded."""
    if status not in _OUTCOMES:
        raise InvalidInput("status must be success, failure or harmful")
    if fault not in _FAULTS:
        raise InvalidInput("fault must be agent, upstream or caller")
    if fault != _AGENT_FAULT and status != _FAILURE:
        raise InvalidInput(f"fault={fault!r} is for a failure, not {status!r}")
    if status == _HARMFUL and not operator:
        raise Forbidden("only an operator may report harm: an agent must not judge its own")
    if detail is None or (type(detail) is str and not detail):  # most outcomes: none
        return ""
    _check_text(detail, "detail", allow_empty=True)
    return detail


def _outcome_record(
    action_id: str, status: str, detail: str, fault: str
) -> tuple[dict[str, str], str]:
    """An outcome record's payload and its canonical JSON (keys sorted), built without a dump.
    An agent's failure keeps Lineage's record shape; another's names its ``fault``."""
    payload = {"action_id": action_id, "status": status, "detail": detail}
    blame = ""
    if fault != _AGENT_FAULT:
        payload["fault"] = fault
        blame = f'"fault":"{fault}",'
    # A detail is usually empty or repeated: short ones are encoded once each (``json_str``).
    text = json_str(detail) if len(detail) < 200 else json_str.__wrapped__(detail)
    body = f'"action_id":"{action_id}","detail":{text},{blame}"status":"{status}"'
    return payload, "{" + body + "}"


def _check_text(value: Any, name: str, *, allow_empty: bool = False) -> None:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise InvalidInput(f"{name} must be a non-empty string")
    if len(value) > 10_000:
        raise InvalidInput(f"{name} is longer than 10000 characters")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInput(f"{name} {problem}")


def _check_reason(reason: Any, what: str) -> None:
    if not isinstance(reason, dict) or not isinstance(reason.get("code"), str):
        raise InvalidInput(f"{what} is an object with a string code")
    if reason["code"] in rules.RESERVED_CODES:
        raise InvalidInput(f"{reason['code']!r} is decided by the policy's rules alone")


def _check_tool(tool: Any) -> None:
    if not isinstance(tool, str) or not 1 <= len(tool) <= 128:
        raise InvalidInput("tool names are strings of 1-128 characters")
    problem = text_problem(tool)
    if problem is not None:
        raise InvalidInput(f"tool name {problem}")
    if tool == SPAWN_TOOL:
        raise InvalidInput(f"{SPAWN_TOOL!r} is the guard's own record of a spawn: use spawn()")
