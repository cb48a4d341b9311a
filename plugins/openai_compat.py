"""OpenAI-compatible chat models (DeepSeek, OpenAI, vLLM, Ollama) through the ``openai`` SDK.

Example::

    import openai
    from guardkit.plugins.openai_compat import OpenAIModel

    client = openai.OpenAI(base_url="https://api.deepseek.com", api_key=key)
    model = OpenAIModel(client, "deepseek-reasoner", system=SYSTEM_PROMPT)
    result = run(model, guard.agent("ap"), tools, messages, tool_schemas=tool_schemas(*funcs))

Each turn calls ``client.chat.completions.create`` without streaming. The assistant message is
appended with its ``reasoning_content`` (DeepSeek's thinking mode answers 400 when an earlier
assistant message lacks it) and its tool calls' ``arguments`` text unchanged. Arguments arrive as
JSON text: text that does not parse to an object, or that breaks the tool's schema (types,
required fields, no extra fields), is reported through ``call_error`` so the loop answers the
model with a tool error and never asks the guard or runs the tool.

``finish_reason``: ``stop`` ends the run as ``done``, ``tool_calls`` runs the calls, ``length``
ends it as ``max_tokens`` without running any (possibly truncated) call, ``content_filter`` or a
``refusal`` field ends it as ``refusal``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from guardkit.protocols import ModelReply, ToolCall

from ._adapter import CallChecks, require
from ._schema import tool_schema, tool_schemas

__all__ = [
    "AsyncOpenAIModel",
    "OpenAIModel",
    "function_tools",
    # re-exported: schemas for the tools you pass as ``tool_schemas``
    "tool_schema",
    "tool_schemas",
]

_STOPS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def function_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Provider-neutral schemas (``name``, ``description``, ``input_schema``) as OpenAI tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]


class _OpenAIBase(CallChecks):
    def __init__(
        self,
        client: Any,
        model: str,
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        keep_reasoning: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.model = model
        self.system = system
        self.max_tokens = max_tokens
        #: Send ``reasoning_content`` back (DeepSeek thinking mode with tools needs it; the older
        #: ``deepseek-reasoner`` (R1) answers 400 if it is sent: pass ``keep_reasoning=False``).
        self.keep_reasoning = keep_reasoning
        self.extra = dict(extra or {})

    def params(self, messages: list[Any], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of ``client.chat.completions.create`` for this turn."""
        self.remember(tools)
        head = [{"role": "system", "content": self.system}] if self.system is not None else []
        params: dict[str, Any] = {"model": self.model, "messages": head + messages, **self.extra}
        if tools:
            params["tools"] = function_tools(tools)
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params

    def reply(self, response: Any) -> ModelReply:
        choice = response.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        finish = "refusal" if refusal or choice.finish_reason == "content_filter" else None
        stop = finish or _STOPS.get(choice.finish_reason, choice.finish_reason)
        raw = list(message.tool_calls or [])
        # After ``length`` the last call's arguments may be cut short: run none of them.
        calls = [self._parse(call) for call in raw] if stop not in ("max_tokens", "refusal") else []
        assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
        reasoning = getattr(message, "reasoning_content", None)
        if reasoning is not None and self.keep_reasoning:
            assistant["reasoning_content"] = reasoning
        if raw:
            assistant["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                }
                for call in raw
            ]
        usage = getattr(response, "usage", None)
        return ModelReply(
            text=message.content or refusal or "",
            tool_calls=calls,
            usage=getattr(usage, "total_tokens", None),
            message=assistant,
            stop_reason=stop,
        )

    def _parse(self, call: Any) -> ToolCall:
        try:
            args = json.loads(call.function.arguments or "{}")
        except json.JSONDecodeError as exc:
            self.broken(call.id, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})")
            args = {}
        if not isinstance(args, dict):
            self.broken(call.id, f"arguments must be a JSON object, got {type(args).__name__}")
            args = {}
        return ToolCall(id=call.id, name=call.function.name, args=args)

    def assistant_message(self, reply: ModelReply) -> dict[str, Any]:
        return dict(reply.message)

    def tool_result_message(self, call: ToolCall, result: str, *, is_error: bool) -> dict[str, Any]:
        # Chat completions has no error flag; denials and failures already start "Denied"/"Error".
        return {"role": "tool", "tool_call_id": call.id, "content": result}


class OpenAIModel(_OpenAIBase):
    """A chat-completions model for ``guardkit.loop.run``; ``client`` is an ``openai.OpenAI``."""

    @classmethod
    def from_env(
        cls,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> OpenAIModel:
        """Build the client; ``api_key`` defaults to ``OPENAI_API_KEY`` (``base_url`` for others).

        >>> OpenAIModel.from_env("deepseek-reasoner", base_url="https://api.deepseek.com",
        ...                      api_key=os.environ["DEEPSEEK_API_KEY"])
        """
        sdk = require("openai", "openai")
        return cls(sdk.OpenAI(base_url=base_url, api_key=api_key), model, **options)

    def close(self) -> None:
        """Close the SDK client (its connection pool)."""
        self.client.close()

    def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]] = ()) -> ModelReply:
        return self.reply(self.client.chat.completions.create(**self.params(messages, tools)))


class AsyncOpenAIModel(_OpenAIBase):
    """The same over ``openai.AsyncOpenAI``, for ``guardkit.loop.arun``."""

    async def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]] = ()) -> ModelReply:
        response = await self.client.chat.completions.create(**self.params(messages, tools))
        return self.reply(response)
