"""The seams between layers: ``AgentGuard`` (what tools and loops talk to), ``Model``, ``Clock``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["AgentGuard", "Clock", "Model", "ModelReply", "ToolCall"]


@runtime_checkable
class AgentGuard(Protocol):
    """One agent's guard, in-process (``LocalAgent``) or over HTTP (``AgentClient``)."""

    def request(self, tool: str, input: Any = None, cost: Any = None) -> dict[str, Any]: ...

    def report(self, action_id: str, status: str, detail: str = "") -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def action(self, action_id: str) -> dict[str, Any]: ...

    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str: ...


class Clock(Protocol):
    def __call__(self) -> float: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One tool call the model asked for."""

    #: The provider's id for the call (``toolu_...``, ``call_...``).
    id: str
    name: str
    #: Parsed arguments.
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelReply:
    """What a model turn produced, in provider-neutral form."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    #: Tokens (or any unit) the turn consumed, if the provider says.
    usage: int | None = None
    #: The provider's own message to append to the conversation unchanged.
    message: Any = None
    stop_reason: str | None = None


class Model(Protocol):
    """A model behind some provider: one turn over the conversation so far."""

    def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]]) -> ModelReply: ...

    def assistant_message(self, reply: ModelReply) -> Any:
        """The message to append for the model's own turn."""
        ...

    def tool_result_message(self, call: ToolCall, result: str, *, is_error: bool) -> Any:
        """The message that carries one tool result back to the model."""
        ...
