"""Pin events in the proxy agent's ledger: a first pin, a change seen, an accept.

The pin file says what is pinned now; the ledger says, tamper-evidently, when each version was
pinned, when a server first offered a change, and who accepted it. Each event is recorded
through the guard's public ``RecordsLocalDenials`` (``deny_local``): a scar-free
``action_requested`` + ``action_denied`` pair of the reserved tool ``guardkit.mcp_pin``, whose
input names the tool and its digests and whose reason code says what happened
(``pin_first_use``, ``pin_changed``, ``pin_accepted``; a held call's own denial is
``tool_changed``). Nothing runs for it, so it is recorded as refused; it counts in the agent's
``actions_denied``, never in its spending or its scars. An MCP server can never list this name
(``names.reserved``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from guardkit.decisions import DecisionDict, Reason
from guardkit.protocols import AgentGuard, RecordsLocalDenials, implements
from guardkit.tools.enforce import RESERVED_KEY
from guardkit.tools.flow import Flow, Op

__all__ = ["PIN_TOOL", "PinRecord", "can_record", "record_pin"]

log = logging.getLogger("guardkit.mcp")

#: The reserved tool name pin events are recorded under.
PIN_TOOL = "guardkit.mcp_pin"

PinCode = Literal["pin_first_use", "pin_changed", "pin_accepted"]
_SAYS: dict[PinCode, str] = {
    "pin_first_use": "pinned at first use",
    "pin_changed": "the server offers a version that differs from the pin; held until accepted",
    "pin_accepted": "the offered version was accepted and pinned",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PinRecord:
    """One pin event: what happened to which of the server's items (``kind`` ``tool`` or, for
    ``instructions``, ``prompt`` and ``resource``, their own kind)."""

    code: PinCode
    #: The item's name as the policy and the ledger know it (``SERVER.tool`` under a name).
    name: str
    digest: str
    kind: str = "tool"
    #: The pinned digest it differs from (``pin_changed``) or replaced (``pin_accepted``).
    previous: str | None = None
    #: Who accepted the change (``pin_accepted``).
    by: str | None = None


def can_record(agent: AgentGuard) -> bool:
    """Whether ``agent`` records pin events (its guard takes a local denial)."""
    return implements(agent, RecordsLocalDenials)


def record_pin(
    agent: AgentGuard, event: PinRecord, where: str, context: Mapping[str, Any] | None = None
) -> Flow[str]:
    """Record ``event`` (pins kept in ``where``) in the agent's ledger; its action's id."""
    tool_input: dict[str, Any] = {"kind": event.kind, "name": event.name, "digest": event.digest}
    if event.previous is not None:
        tool_input["previous"] = event.previous
    if event.by is not None:
        tool_input["by"] = event.by
    tool_input[RESERVED_KEY] = {**(context or {}), "pins": where}
    reason: Reason = {
        "code": event.code,
        "tool": event.name,
        "message": f"{event.kind} {event.name!r}: {_SAYS[event.code]}",
    }
    decision: DecisionDict = yield Op("deny_local", (PIN_TOOL, tool_input, reason, None))
    return decision["action_id"]
