"""The inbox: every agent's pending approvals in one list, newest first, filtered.

``guardkit pending --all``, ``GET /v1/pending`` and the console's inbox all read it. Each item
says what the policy said: why this call waits for a human (the rule or check that asked, else
the tool's ``requires_approval``), the same reason its ``approval.pending`` event carries.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, TypedDict

from guardkit.decisions import PendingAction, Reason

if TYPE_CHECKING:  # the engine imports the package, which the server imports this from
    from guardkit.engine import Engine

__all__ = ["InboxItem", "pending_across"]


class InboxItem(TypedDict):
    agent_id: str
    requested_at: str
    seq: int
    action: PendingAction
    #: Why it waits for a human, as the policy or a check said.
    waits_because: Reason


def pending_across(
    engine: Engine, agents: Collection[str] = (), tools: Collection[str] = ()
) -> list[InboxItem]:
    """Every agent's pending actions (or those of ``agents``, of ``tools``), newest first; a
    quarantined agent's are left out (``guardkit agents`` and the console show why)."""
    found: list[InboxItem] = []
    for entry in engine.agents():
        who = entry["agent_id"]
        status = entry.get("status")
        if status is None or not status["actions_pending"] or (agents and who not in agents):
            continue
        for item in engine.pending(who):
            action = item["action"]
            if tools and action["tool"] not in tools:
                continue
            why: Reason = action.get("approval_reason") or {
                "code": "requires_approval",
                "reason": f"the policy requires approval for {action['tool']}",
            }
            found.append(
                {
                    "agent_id": who,
                    "requested_at": item["requested_at"],
                    "seq": item["seq"],
                    "action": action,
                    "waits_because": why,
                }
            )
    # ISO timestamps of one clock sort as text; the ledger's seq breaks ties within an agent.
    found.sort(key=lambda i: (i["requested_at"], i["agent_id"], i["seq"]), reverse=True)
    return found
