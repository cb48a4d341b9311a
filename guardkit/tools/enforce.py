"""One enforcement path: the checks a policy declares, applied to a call's named arguments.

Every way a call enters (the decorators, the MCP proxy, ``guard_server``, each framework
integration) runs the same steps here before it requests the call: the agent's policy section
for the tool (``paths``, ``egress``, ``provenance``; merged with a decorator's own rules) is
checked against the arguments, a failed check is recorded as a local denial (``ToolDenied``),
and what the checks resolved (the real path, the addresses) rides in the request's input under
``_guardkit``. That key is the guard's own: arguments that carry it are refused.

Entry points that run the tool somewhere the checks cannot follow ask ``unenforceable`` at start
and refuse to start with its answer, rather than let a declared check fail open.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from guardkit import tracing
from guardkit.checks.checkset import CheckSet
from guardkit.checks.labels import label_arguments
from guardkit.decisions import DecisionDict, Denial, Reason, SeverityName, describe_reason
from guardkit.errors import ToolDenied
from guardkit.policy import Policy
from guardkit.protocols import AgentGuard, AsksApproval, RecordsLocalDenials, implements
from guardkit.tools.flow import Flow, Op
from guardkit.tools.policy_checks import PolicyChecks

__all__ = [
    "LOCAL_DENIAL_TOOL",
    "RESERVED_KEY",
    "Checked",
    "checked",
    "checked_request",
    "deny",
    "policy_checks",
    "request",
    "unenforceable",
]

#: What an agent guard without ``deny_local`` (not ``LocalAgent`` or ``AgentClient``) is asked, so a
#: local denial still lands in its ledger: an unlisted tool, denied and scarred by the guard.
LOCAL_DENIAL_TOOL = "guardkit.local_denial"
#: The key of a request's input where the checks' findings are recorded; never an argument.
RESERVED_KEY = "_guardkit"
#: The reason code of a call whose arguments carry ``RESERVED_KEY``.
RESERVED_ARGUMENT = "reserved_argument"

_CHECKS = {
    "path_denied": "paths",
    "egress_denied": "egress",
    "untrusted_provenance": "provenance",
}
_cache: dict[str, PolicyChecks] = {}
_cache_lock = threading.Lock()


@dataclass(frozen=True, slots=True, kw_only=True)
class Checked:
    """A call whose arguments passed the local checks: what to request, and how."""

    #: The request's input: the arguments, plus ``_guardkit`` when the checks found something.
    input: dict[str, Any]
    checks: CheckSet
    #: Why a local check wants a human to decide this one call (``request_approval``), if it does.
    approval: Reason | None = None


def policy_checks(tool: str) -> PolicyChecks:
    """The policy's check section for ``tool`` (no decorator rules), shared by every adapter."""
    found = _cache.get(tool)
    if found is None:
        with _cache_lock:
            found = _cache.setdefault(tool, PolicyChecks(tool, CheckSet()))
    return found


def checked(
    agent: AgentGuard,
    tool: str,
    raw: Mapping[str, Any],
    arguments: Mapping[str, Any] | None = None,
    *,
    checks: PolicyChecks | None = None,
    context: Mapping[str, Any] | None = None,
) -> Flow[Checked]:
    """Run the declared checks on a call's named arguments; a failure is recorded and raised.

    ``raw`` are the arguments as the tool receives them, ``arguments`` as recorded (JSON; the
    same as ``raw`` for calls that arrive as JSON). ``context`` is recorded with the call under
    ``_guardkit`` (the MCP proxy's upstream identity). Raises ``ToolDenied``; nothing runs.
    """
    recorded = dict(raw if arguments is None else arguments)
    if RESERVED_KEY in raw or RESERVED_KEY in recorded:
        recorded.pop(RESERVED_KEY, None)
        reason: Reason = {
            "code": RESERVED_ARGUMENT,
            "message": f"the argument name {RESERVED_KEY!r} is reserved for the guard's records",
        }
        with_context = {**recorded, RESERVED_KEY: dict(context)} if context else recorded
        yield from deny(agent, tool, with_context, Denial(reason=reason))
    found = checks or policy_checks(tool)
    # The first call of an agent reads its policy (an HTTP round trip for an AgentClient):
    # a blocking call, off the event loop when async.
    merged: CheckSet = (
        found.for_agent(agent)
        if found.ready(agent)
        else (yield Op("call", (agent,), found.for_agent))
    )
    record: dict[str, Any] = dict(context or {})
    # Egress checks resolve host names: a blocking call, off the event loop when async.
    denial = (
        (yield Op("call", (raw, record), merged.run)) if merged.egress else merged.run(raw, record)
    ) or label_arguments(merged, recorded, record)
    tool_input = {**recorded, RESERVED_KEY: record} if record else recorded
    approval: Reason | None = None
    if denial is not None and denial.reason.get("needs") == "approval":
        if implements(agent, AsksApproval):
            approval, denial = denial.reason, None  # this one call goes to a human
        elif merged.requires_approval:
            denial = None  # pending anyway; the approver sees the labels in the input
    if denial is not None:
        yield from deny(agent, tool, tool_input, denial)
    return Checked(input=tool_input, checks=merged, approval=approval)


def request(tool: str, call: Checked, cost: Any = None) -> Flow[DecisionDict]:
    """Request a checked call (``request_approval`` when a check wants a human)."""
    if call.approval is None:
        decision: DecisionDict = yield Op("request", (tool, call.input, cost))
    else:
        decision = yield Op("request_approval", (tool, call.input, cost, call.approval))
    return decision


def checked_request(
    agent: AgentGuard,
    tool: str,
    arguments: Mapping[str, Any],
    cost: Any = None,
    *,
    context: Mapping[str, Any] | None = None,
) -> Flow[DecisionDict]:
    """``checked`` then ``request``, for a call that arrives as JSON: the guard's decision, or
    the local denial as a ``denied`` decision (recorded in the ledger; nothing may run)."""
    try:
        call = yield from checked(agent, tool, arguments, context=context)
    except ToolDenied as exc:
        return {"decision": "denied", "action_id": exc.action_id or "", "reason": exc.reason}
    return (yield from request(tool, call, cost))


def deny(agent: AgentGuard, tool: str, tool_input: dict[str, Any], denial: Denial) -> Flow[None]:
    """Record a local denial in the agent's ledger and raise ``ToolDenied``."""
    check = _CHECKS.get(denial.reason["code"])
    if isinstance(agent, RecordsLocalDenials):
        decision: DecisionDict = yield Op(
            "deny_local", (tool, tool_input, denial.reason, _severity(denial))
        )
        tracing.current_tool().decision(decision, check=check, agent_id=agent.agent_id)
        raise ToolDenied(decision["action_id"], decision.get("reason") or denial.reason)
    decision = yield Op(
        "request",
        (LOCAL_DENIAL_TOOL, {"tool": tool, "input": tool_input, "reason": denial.reason}),
    )
    action_id = decision["action_id"]
    if decision["decision"] == "allowed":
        yield Op("report", (action_id, "failure", describe_reason(denial.reason)))
    tracing.current_tool().decision(
        {"decision": "denied", "action_id": action_id, "reason": denial.reason},
        check=check,
        agent_id=agent.agent_id,
    )
    raise ToolDenied(action_id, denial.reason)


def unenforceable(
    policy: Policy, *, paths: bool, egress: bool, provenance: bool, runtime: bool, where: str
) -> list[tuple[str, str]]:
    """The policy's check sections an entry point cannot apply: ``(section, what to do)``.

    Each flag says whether the entry point can apply that kind of check; ``where`` names the
    entry point in the message (``"guardkit mcp proxy in front of http://..."``).
    """
    able = {"paths": paths, "egress": egress, "provenance": provenance, "runtime": runtime}
    problems: list[tuple[str, str]] = []
    for name, rule in sorted(policy.tools.items()):
        for section in ("paths", "egress", "provenance", "runtime"):
            if rule.checks.get(section) and not able[section]:
                problems.append(
                    (
                        f"tools.{name}.{section}",
                        f"{where} cannot apply this check ({_WHY[section]}), so it refuses to "
                        f"start rather than run {name!r} unchecked; {_FIX[section]}",
                    )
                )
    return problems


_WHY = {
    "paths": "the tool runs on another host, where paths resolve differently",
    "egress": "the tool runs on another host, which resolves and connects on its own",
    "provenance": "the client drives the model, so where an argument came from is unknown here",
    "runtime": "the tool runs in another process, out of reach of the runtime fence",
}
_FIX = {
    "paths": "run the server over stdio on this host, or guard it where it runs (guard_server)",
    "egress": "run the server over stdio on this host, or guard it where it runs (guard_server)",
    "provenance": "guard the model's loop where it runs, or remove the section for this tool",
    "runtime": "guard the tool where it runs (guardkit.tool, runtime=...), or remove the section",
}


def _severity(denial: Denial) -> SeverityName | None:
    return None if denial.severity is None else denial.severity.value
