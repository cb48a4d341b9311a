"""Claude through the official ``anthropic`` SDK, as a ``guardkit.protocols.Model``.

Example::

    import anthropic
    from guardkit.loop import SYSTEM_PROMPT, run
    from guardkit.plugins.anthropic import AnthropicModel

    model = AnthropicModel(anthropic.Anthropic(), "claude-sonnet-5-5", system=SYSTEM_PROMPT,
                           cache=True, fallbacks="default")
    result = run(model, guard.agent("ops"), tools, messages, tool_schemas=schemas)

Each turn calls ``client.beta.messages.create`` without streaming and appends ``response.content``
to the conversation unchanged (thinking, redacted-thinking and fallback blocks included: their
signatures must come back byte-identical). ``tool_use`` blocks become guarded calls with their
parsed input; results go back as ``tool_result`` blocks with ``is_error: true`` for denials and
failures. Stop reasons: ``end_turn``/``stop_sequence`` end the run as ``done``; ``tool_use`` runs
the calls; ``pause_turn`` is continued by the loop's next gated turn; ``max_tokens`` ends the run
without running any (possibly truncated) tool call; ``refusal`` ends it with the refusal's
explanation.

``ModelReply.usage`` is every token the turn processed (input, cache writes and reads, output);
``guardkit.loop.run`` records it in the ``llm_turn`` outcome and, with ``usage_tool=``, charges it.

Options: ``cache=True`` puts ``cache_control: {"type": "ephemeral"}`` on the system prompt and
on the last tool, so the stable prefix is cached. ``fallbacks`` (``"default"`` or a list such as
``[{"model": "claude-haiku-4-5"}]``) is sent as the request's ``fallbacks`` field with the
``server-side-fallback-2026-07-01`` beta: when the model declines for policy reasons the server
retries on the fallback model and the reply carries a ``fallback`` block, which is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from guardkit.protocols import ModelReply, ToolCall

from ._adapter import CallChecks, require
from ._schema import tool_schema, tool_schemas

__all__ = [
    "FALLBACK_BETA",
    "AnthropicModel",
    "AsyncAnthropicModel",
    # re-exported: schemas for the tools you pass as ``tool_schemas``
    "tool_schema",
    "tool_schemas",
]

#: The beta that enables the server-side refusal fallback (``fallbacks`` on the request).
FALLBACK_BETA = "server-side-fallback-2026-07-01"
_CACHE = {"type": "ephemeral"}
#: Stops after which a ``tool_use`` block may be cut short or was never meant to run.
_NO_CALLS = frozenset({"max_tokens", "refusal", "model_context_window_exceeded"})


class _AnthropicBase(CallChecks):
    def __init__(
        self,
        client: Any,
        model: str,
        *,
        max_tokens: int = 4096,
        system: str | None = None,
        thinking: Mapping[str, Any] | None = None,
        cache: bool = False,
        fallbacks: str | Sequence[Mapping[str, Any]] | None = None,
        betas: Sequence[str] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.system = system
        self.thinking = thinking
        self.cache = cache
        self.fallbacks = fallbacks
        self.betas = list(betas) + ([FALLBACK_BETA] if fallbacks is not None else [])
        self.extra = dict(extra or {})

    def params(self, messages: list[Any], tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of ``client.beta.messages.create`` for this turn."""
        self.remember(tools)
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": _merge_user_turns(messages),
            **self.extra,
        }
        if tools:
            params["tools"] = [dict(tool) for tool in tools]
            if self.cache:
                params["tools"][-1]["cache_control"] = _CACHE
        if self.system is not None:
            params["system"] = (
                [{"type": "text", "text": self.system, "cache_control": _CACHE}]
                if self.cache
                else self.system
            )
        if self.thinking is not None:
            params["thinking"] = dict(self.thinking)
        if self.fallbacks is not None:
            params["fallbacks"] = self.fallbacks
        if self.betas:
            params["betas"] = self.betas
        return params

    def reply(self, response: Any) -> ModelReply:
        """The provider-neutral view of one ``BetaMessage``; ``message`` is its content as is."""
        stop = response.stop_reason
        blocks = list(response.content)
        calls = [
            ToolCall(id=block.id, name=block.name, args=_as_args(self, block))
            for block in blocks
            if block.type == "tool_use" and stop not in _NO_CALLS
        ]
        text = "".join(block.text for block in blocks if block.type == "text")
        if stop == "refusal":
            details = getattr(response, "stop_details", None)
            explanation = getattr(details, "explanation", None)
            text = text or explanation or "The model declined to continue."
        return ModelReply(
            text=text,
            tool_calls=calls,
            usage=_tokens(response.usage),
            message=blocks,
            stop_reason=stop,
        )

    def assistant_message(self, reply: ModelReply) -> dict[str, Any]:
        return {"role": "assistant", "content": reply.message}

    def tool_result_message(self, call: ToolCall, result: str, *, is_error: bool) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": result}
        if is_error:
            block["is_error"] = True
        return {"role": "user", "content": [block]}


class AnthropicModel(_AnthropicBase):
    """A Claude model for ``guardkit.loop.run``; ``client`` is an ``anthropic.Anthropic``."""

    @classmethod
    def from_env(cls, model: str, **options: Any) -> AnthropicModel:
        """Build the client from ``ANTHROPIC_API_KEY`` (and ``ANTHROPIC_BASE_URL``)."""
        sdk = require("anthropic", "anthropic")
        return cls(sdk.Anthropic(), model, **options)

    def close(self) -> None:
        """Close the SDK client (its connection pool)."""
        self.client.close()

    def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]] = ()) -> ModelReply:
        return self.reply(self.client.beta.messages.create(**self.params(messages, tools)))


class AsyncAnthropicModel(_AnthropicBase):
    """The same over ``anthropic.AsyncAnthropic``, for ``guardkit.loop.arun``."""

    async def turn(self, messages: list[Any], tools: Sequence[dict[str, Any]] = ()) -> ModelReply:
        response = await self.client.beta.messages.create(**self.params(messages, tools))
        return self.reply(response)


def _merge_user_turns(messages: list[Any]) -> list[Any]:
    """One user turn per run of user messages, so parallel tool results share one message.

    The loop appends one ``tool_result`` message per call; the API wants all the results for an
    assistant turn's ``tool_use`` blocks in the next user message.
    """
    merged: list[Any] = []
    for message in messages:
        previous = merged[-1] if merged else None
        if (
            isinstance(previous, dict)
            and isinstance(message, dict)
            and previous.get("role") == message.get("role") == "user"
        ):
            merged[-1] = {"role": "user", "content": _blocks(previous) + _blocks(message)}
        else:
            merged.append(message)
    return merged


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _as_args(checks: CallChecks, block: Any) -> dict[str, Any]:
    if isinstance(block.input, dict):
        return dict(block.input)
    checks.broken(block.id, f"input must be a JSON object, got {type(block.input).__name__}")
    return {}


def _tokens(usage: Any) -> int | None:
    """Every token the turn processed: input, cache writes and reads, and output."""
    if usage is None:
        return None
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(getattr(usage, name, 0) or 0 for name in (*fields, "output_tokens"))
