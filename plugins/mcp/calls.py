"""One guarded ``tools/call``: ask the guard (waiting for a human if need be), report the outcome.

The proxy and the server middleware share these steps. They are flows
(``guardkit.tools.flow``), driven with the agent's ``async`` calls so a wait for an approval
never blocks the event loop that serves other calls.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from mcp.types import CallToolResult, TextContent

from guardkit.decisions import (
    Action,
    ActionStatusName,
    DecisionDict,
    Denial,
    FaultName,
    Reason,
    describe_reason,
)
from guardkit.errors import ApprovalTimeout, GuardError, ToolDenied
from guardkit.protocols import AgentGuard, AsksApproval, implements
from guardkit.refusals import Refusal, refusal
from guardkit.tools.asking import end_wait
from guardkit.tools.enforce import RESERVED_KEY, checked, checked_request, deny, request
from guardkit.tools.flow import Flow, Op, adrive
from guardkit.tools.outcome import report as report_flow

__all__ = [
    "DEFAULT_CALLS",
    "TOOL_CHANGED",
    "CallPolicy",
    "ask",
    "deny_held",
    "deny_name",
    "error_result",
    "outcome",
    "refused",
    "report",
]

log = logging.getLogger("guardkit.mcp")
#: Longest failure detail kept in the ledger (the tool's own error text, cut).
_DETAIL_MAX = 500
#: The longest tool name the guard records (MCP and the engine alike).
_NAME_MAX = 128
#: The reason code of a call to a tool whose definition changed since it was pinned.
TOOL_CHANGED = "tool_changed"


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPolicy:
    """How a guarded call waits for a human."""

    #: Seconds a ``pending_approval`` call waits before it is refused (``approval_timeout``).
    approval_timeout: float = 300
    #: Seconds between looks for an approval made in another process (the CLI, the console).
    poll: float = 1.0


#: Five minutes for a human, looked for every second.
DEFAULT_CALLS = CallPolicy()


def _ask(
    agent: AgentGuard,
    tool: str,
    arguments: dict[str, Any],
    policy: CallPolicy,
    context: Mapping[str, Any] | None,
    approval: Reason | None,
) -> Flow[str | Refusal]:
    # The policy's declared checks first (paths, egress, provenance): guardkit.tools.enforce.
    if approval is None:
        decision: DecisionDict = yield from checked_request(agent, tool, arguments, context=context)
    else:
        decision = yield from _approval_request(agent, tool, arguments, context, approval)
    action_id = decision["action_id"]
    if decision["decision"] == "allowed":
        return action_id
    if decision["decision"] != "pending_approval":
        found = refusal(decision)
        assert found is not None
        return found
    try:
        final: ActionStatusName = yield Op(
            "wait_for_approval", (action_id, policy.approval_timeout, policy.poll)
        )
    except ApprovalTimeout:
        final, reason = yield from end_wait(agent, action_id, policy.approval_timeout)
        if final != "allowed":
            return _denied(action_id, reason)
    if final == "allowed":
        return action_id
    action: Action = yield Op("action", (action_id,))
    return _denied(action_id, action["reason"] or {"code": "rejected"})


def _approval_request(
    agent: AgentGuard,
    tool: str,
    arguments: dict[str, Any],
    context: Mapping[str, Any] | None,
    approval: Reason,
) -> Flow[DecisionDict]:
    # A call a human must see whatever the policy says (a changed tool): ``request_approval``.
    try:
        call = yield from checked(agent, tool, arguments, context=context)
        if not implements(agent, AsksApproval):
            # The guard can't send one call to a human: refused rather than run unreviewed.
            yield from deny(agent, tool, call.input, Denial(reason=approval, severity=None))
    except ToolDenied as exc:
        return {"decision": "denied", "action_id": exc.action_id or "", "reason": exc.reason}
    return (yield from request(tool, replace(call, approval=call.approval or approval)))


def _denied(action_id: str, reason: Any) -> Refusal:
    found = refusal({"decision": "denied", "action_id": action_id, "reason": reason})
    assert found is not None
    return found


async def ask(
    agent: AgentGuard,
    tool: str,
    arguments: dict[str, Any],
    policy: CallPolicy,
    context: Mapping[str, Any] | None = None,
    approval: Reason | None = None,
) -> str | CallToolResult:
    """The allowed action's id, or the result to give the client instead of running the call.

    ``context`` (the upstream's identity) is recorded with the call; ``approval`` sends it to a
    human whatever the policy says, with that reason shown to the approver."""
    try:
        answer = await adrive(_ask(agent, tool, arguments, policy, context, approval), agent)
    except GuardError as exc:
        found = refusal(exc)
        if found is not None:
            return refused(found)
        # The guard refused the request itself (bad input): nothing was recorded or run.
        return error_result(f"Error: {exc.message}. Nothing was done.")
    return answer if isinstance(answer, str) else refused(answer)


def refused(found: Refusal) -> CallToolResult:
    """A refusal as the client sees it: an error result with the sentence for the model."""
    return CallToolResult(
        content=[TextContent(type="text", text=found.text)],
        structured_content=dict(found.to_dict()),
        is_error=True,
    )


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def outcome(result: Any) -> tuple[str, str]:
    """``(status, detail)`` to report for what a tool call returned (a model or a wire dict)."""
    if isinstance(result, Mapping):
        failed = bool(result.get("isError"))
        content = result.get("content") or []
        texts = [str(block.get("text", "")) for block in content if isinstance(block, Mapping)]
    else:
        failed = bool(getattr(result, "is_error", False))
        texts = [str(getattr(block, "text", "")) for block in getattr(result, "content", [])]
    if not failed:
        return "success", ""
    return "failure", ("isError: " + " ".join(t for t in texts if t))[:_DETAIL_MAX]


async def report(
    agent: AgentGuard, action_id: str, status: str, detail: str, fault: FaultName = "agent"
) -> None:
    """Report the call's one outcome; a guard that can't take it is logged, never raised. A
    failure that is the upstream's or the client's (``fault``) does not scar the agent."""
    try:
        await adrive(report_flow(action_id, status, detail, fault), agent)
    except GuardError as exc:
        log.warning("could not report %s of %s: %s", status, action_id, exc.message)


def deny_name(agent: AgentGuard, name: str, why: str, arguments: Any) -> Flow[Refusal]:
    """Record a call to a name the proxy never forwards (reserved, over-long) as a denied,
    scarred call, like any unlisted tool's; the refusal to answer with."""
    shown = name if len(name) <= _NAME_MAX else name[: _NAME_MAX - 1] + "…"
    reason: Reason = {"code": "tool_not_allowed", "tool": shown, "message": why}
    tool_input = {"arguments": arguments, RESERVED_KEY: {"name": name[:_DETAIL_MAX]}}
    try:
        yield from deny(agent, shown, tool_input, Denial(reason=reason))
    except ToolDenied as exc:
        found = refusal(exc)
        assert found is not None
        # The model is told why, not only that the name is not allowed.
        said = describe_reason(reason)
        return replace(found, text=found.text.replace(said, f"{said}: {why}", 1))
    raise AssertionError("deny always raises")


def deny_held(
    agent: AgentGuard,
    tool: str,
    arguments: Mapping[str, Any],
    reason: Reason,
    context: Mapping[str, Any],
) -> Flow[Refusal]:
    """Record a call to a tool the proxy holds (changed since it was pinned) as denied, without
    a scar (the server changed, not the agent); the refusal to answer with."""
    tool_input = {**arguments, RESERVED_KEY: dict(context)}
    try:
        yield from deny(agent, tool, tool_input, Denial(reason=reason, severity=None))
    except ToolDenied as exc:
        found = refusal(exc)
        assert found is not None
        return found
    raise AssertionError("deny always raises")
