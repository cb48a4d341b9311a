"""Test doubles for guarded agents: ``ScriptedModel`` replays a model's turns offline.

Example::

    model = ScriptedModel([
        [("search", {"query": "refund policy"})],      # turn 1: one tool call
        "The refund window is 30 days.",               # turn 2: the final answer
    ])
    result = run(model, agent, {"search": search}, [{"role": "user", "content": "..."}])
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from guardkit.protocols import ModelReply, ToolCall

__all__ = ["AssistantMessage", "ScriptedCall", "ScriptedModel", "ToolMessage", "Turn"]


class ScriptedCall(TypedDict):
    """A tool call in a scripted assistant message."""

    id: str
    name: str
    args: dict[str, Any]


class AssistantMessage(TypedDict):
    """The scripted model's own turn, as it goes back into the conversation."""

    role: Literal["assistant"]
    content: str
    tool_calls: list[ScriptedCall]


class ToolMessage(TypedDict):
    """A tool's result (or its refusal) for the scripted model."""

    role: Literal["tool"]
    tool_call_id: str
    name: str
    content: str
    is_error: bool


#: One scripted turn: final text, a list of ``(tool, args)`` calls, a ``ModelReply``, or a
#: function of the conversation so far that returns one of those.
Turn = str | Sequence[tuple[str, dict[str, Any]]] | ModelReply | Callable[[list[Any]], Any]


class ScriptedModel:
    """A fake model that replays scripted turns; it implements the ``Model`` protocol.

    Messages are provider-neutral dicts (``{"role": "assistant", "content", "tool_calls"}`` and
    ``{"role": "tool", "tool_call_id", "content", "is_error"}``). Calling the model directly,
    ``model(messages)``, returns a reply shaped like the pseudo-SDK of Lineage's loop example
    (docs/compatibility.md) (``.text``,
    ``.tool_calls``, ``.as_message()``, ``call.result_message(result)``).
    """

    def __init__(self, turns: Iterable[Turn], *, usage: int | None = None) -> None:
        self._turns = list(turns)
        self._ids = itertools.count(1)
        self.usage = usage
        #: Every conversation the model was shown, one per turn.
        self.seen: list[list[Any]] = []

    @property
    def remaining(self) -> int:
        return len(self._turns)

    def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]] = ()) -> ModelReply:
        self.seen.append(list(messages))
        if not self._turns:
            return ModelReply(text="(the script has ended)", usage=self.usage)
        step: Any = self._turns.pop(0)
        if callable(step):
            step = step(messages)
        return self._reply(step)

    def _reply(self, step: Any) -> ModelReply:
        if isinstance(step, ModelReply):
            return step
        if isinstance(step, str):
            return ModelReply(text=step, usage=self.usage, stop_reason="end_turn")
        calls = [
            ToolCall(id=f"call_{next(self._ids)}", name=name, args=dict(args))
            for name, args in step
        ]
        return ModelReply(tool_calls=calls, usage=self.usage, stop_reason="tool_use")

    def assistant_message(self, reply: ModelReply) -> AssistantMessage:
        return {
            "role": "assistant",
            "content": reply.text,
            "tool_calls": [{"id": c.id, "name": c.name, "args": c.args} for c in reply.tool_calls],
        }

    def tool_result_message(self, call: ToolCall, result: str, *, is_error: bool) -> ToolMessage:
        return {
            "role": "tool",
            "tool_call_id": call.id,
            "name": call.name,
            "content": result,
            "is_error": is_error,
        }

    def __call__(self, messages: list[Any]) -> SeedReply:
        """The ``model(messages)`` shape of Lineage's loop example."""
        return SeedReply(self, self.turn(messages))


@dataclass(frozen=True, slots=True)
class SeedCall:
    """A tool call as Lineage's loop example uses it: ``name``, ``args``, ``result_message``."""

    model: ScriptedModel
    call: ToolCall

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def args(self) -> dict[str, Any]:
        return self.call.args

    def result_message(self, result: Any) -> ToolMessage:
        text = result if isinstance(result, str) else str(result)
        return self.model.tool_result_message(
            self.call, text, is_error=text.startswith(("Denied", "Error"))
        )


@dataclass(frozen=True, slots=True)
class SeedReply:
    """A reply as Lineage's loop example uses it: ``.text``, ``.tool_calls``, ``.as_message()``."""

    model: ScriptedModel
    reply: ModelReply

    @property
    def text(self) -> str:
        return self.reply.text

    @property
    def tool_calls(self) -> list[SeedCall]:
        return [SeedCall(self.model, call) for call in self.reply.tool_calls]

    def as_message(self) -> AssistantMessage:
        return self.model.assistant_message(self.reply)
