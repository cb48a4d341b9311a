"""The graph state of approvals by interrupt: the tool-call decisions a model turn saved.

With ``approvals="interrupt"`` the model node requests the turn's tool calls and saves the
decisions under ``guardkit_calls`` (tool call id → decision) beside the model's message, so the
checkpoint keeps them while the graph waits; ``after_model`` reads what still waits, and the
tool node reads each call's decision instead of asking again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, NotRequired

from langchain.agents.middleware import AgentState, ExtendedModelResponse, ModelResponse
from langchain.agents.middleware.types import OmitFromSchema
from langchain_core.messages import AIMessage, ToolCall
from langgraph.types import Command

from guardkit.decisions import DecisionDict

from ._messages import PendingCall

__all__ = ["PLAN", "GuardState", "pending", "planned", "settled", "still", "with_plan"]

#: The state key holding this turn's tool-call decisions, by tool call id.
PLAN: Final = "guardkit_calls"


class GuardState(AgentState[Any]):
    """The agent state with the decisions of the tool calls requested in the model node."""

    guardkit_calls: NotRequired[
        Annotated[dict[str, DecisionDict], OmitFromSchema(input=True, output=True)]
    ]


def with_plan(
    response: ModelResponse[Any], plan: dict[str, DecisionDict]
) -> ExtendedModelResponse[Any]:
    """The model's response, and the state update saving its tool calls' decisions."""
    return ExtendedModelResponse(model_response=response, command=Command(update={PLAN: plan}))


def planned(state: Any, call: ToolCall) -> DecisionDict | None:
    """The decision the model node saved for ``call``, if any."""
    plan = state.get(PLAN) if isinstance(state, Mapping) else None
    return None if not plan or call["id"] is None else plan.get(call["id"])


def pending(state: GuardState) -> dict[str, PendingCall]:
    """The last model turn's tool calls that wait for a human, by action id."""
    plan = state.get(PLAN) or {}
    last = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)
    waiting: dict[str, PendingCall] = {}
    for call in last.tool_calls if last is not None else ():
        decision = plan.get(call["id"] or "")
        if decision is not None and decision["decision"] == "pending_approval":
            waiting[decision["action_id"]] = {
                "action_id": decision["action_id"],
                "tool_call_id": call["id"] or "",
                "tool": call["name"],
                "args": call["args"],
            }
    return waiting


def still(waiting: dict[str, PendingCall], found: dict[str, DecisionDict]) -> list[PendingCall]:
    """The waiting calls whose action ``found`` says is still pending."""
    return [call for key, call in waiting.items() if found[key]["decision"] == "pending_approval"]


def settled(
    state: GuardState, waiting: dict[str, PendingCall], found: dict[str, DecisionDict]
) -> dict[str, Any] | None:
    """The state update once every waiting call is decided; None while any still waits."""
    if still(waiting, found):
        return None
    decided = {call["tool_call_id"]: found[key] for key, call in waiting.items()}
    return {PLAN: {**(state.get(PLAN) or {}), **decided}}
