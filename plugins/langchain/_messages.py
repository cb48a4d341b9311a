"""How the guard's answers become LangChain messages, and what an approval interrupt carries."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langgraph.prebuilt.tool_node import TOOL_CALL_ERROR_TEMPLATE
from langgraph.types import Command

from guardkit.errors import GuardError
from guardkit.refusals import Refusal, refusal_or_stop

__all__ = [
    "ApprovalRequest",
    "PendingCall",
    "approval_request",
    "failure_of",
    "guard_error_message",
    "refusal_message",
    "tool_error_message",
    "turn_refused",
]


class PendingCall(TypedDict):
    """One tool call waiting for a human's approval."""

    action_id: str
    tool_call_id: str
    tool: str
    args: dict[str, Any]


class ApprovalRequest(TypedDict):
    """The value of the interrupt raised while tool calls wait for approval.

    ``result["__interrupt__"][0].value`` after ``agent.invoke(...)`` returns paused.
    """

    guardkit: Literal["pending_approval"]
    agent_id: str
    actions: list[PendingCall]
    #: What a human does, and how the graph goes on (for logs and UIs).
    message: str


def approval_request(agent_id: str, calls: list[PendingCall]) -> ApprovalRequest:
    ids = " ".join(call["action_id"] for call in calls)
    return {
        "guardkit": "pending_approval",
        "agent_id": agent_id,
        "actions": calls,
        "message": (
            f"{len(calls)} tool call(s) of agent {agent_id!r} wait for a human's approval "
            f"(action {ids}): approve or reject in the guardkit console or with "
            f"`guardkit approve {agent_id} ACTION_ID --by NAME`, then resume the graph with "
            "Command(resume=True) on the same thread."
        ),
    }


def turn_refused(found: Refusal) -> AIMessage:
    """The run's last message when the guard refuses a model turn: the model is not called.

    It has no tool calls, so ``create_agent`` ends the run as when a model answers;
    ``response_metadata["guardkit"]`` holds the structured refusal.
    """
    return AIMessage(content=found.text, response_metadata={"guardkit": dict(found.to_dict())})


def refusal_message(call: ToolCall, found: Refusal) -> ToolMessage:
    """A tool call the guard did not let run: the denial text, for the model to read."""
    return ToolMessage(
        content=found.text,
        tool_call_id=call["id"] or "",
        name=call["name"],
        status="error",
        artifact={"guardkit": dict(found.to_dict())},
    )


def guard_error_message(call: ToolCall, exc: GuardError) -> ToolMessage:
    """A call the guard could not decide (unreachable, or input it refuses): nothing ran."""
    found = refusal_or_stop(exc, f"tool call {call['name']!r}")
    if found is not None:
        return refusal_message(call, found)
    return ToolMessage(
        content=f"Error: {exc.message}. Nothing was done.",
        tool_call_id=call["id"] or "",
        name=call["name"],
        status="error",
    )


def tool_error_message(call: ToolCall, exc: Exception) -> ToolMessage:
    """A tool that raised, worded as ``ToolNode(handle_tool_errors=True)`` words it."""
    return ToolMessage(
        content=TOOL_CALL_ERROR_TEMPLATE.format(error=repr(exc)),
        tool_call_id=call["id"] or "",
        name=call["name"],
        status="error",
    )


def failure_of(result: ToolMessage | Command[Any]) -> str | None:
    """The failure detail of a tool result that reports an error (``status="error"``), or None."""
    if isinstance(result, ToolMessage) and result.status == "error":
        return f"ToolMessage: {result.text}"
    return None
