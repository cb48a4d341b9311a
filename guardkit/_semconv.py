"""Attribute, span and event names guardkit emits: OTel GenAI conventions plus ``guardkit.*``.

Kept here rather than imported from ``opentelemetry-semantic-conventions``: that package marks
every ``gen_ai.*`` constant deprecated since the GenAI conventions moved to their own repository
(see docs/tracing.md). The names follow semantic-conventions-genai v0.1.0.
"""

from __future__ import annotations

from typing import Final

# -- OTel GenAI ------------------------------------------------------------------------------

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_AGENT_ID: Final = "gen_ai.agent.id"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
#: Opt-in content (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
ERROR_TYPE: Final = "error.type"

OP_EXECUTE_TOOL: Final = "execute_tool"
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
TOOL_TYPE_FUNCTION: Final = "function"

#: The environment switch shared by the GenAI instrumentations.
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# -- guardkit --------------------------------------------------------------------------------

DECISION: Final = "guardkit.decision"
REASON: Final = "guardkit.reason"
ACTION_ID: Final = "guardkit.action_id"
AGENT_ID: Final = "guardkit.agent_id"
COST: Final = "guardkit.cost"
REMAINING: Final = "guardkit.remaining"
SCAR_SCORE: Final = "guardkit.scar_score"
CHECK: Final = "guardkit.check"
IDEMPOTENT_REPLAY: Final = "guardkit.idempotent_replay"
APPROVAL_STATUS: Final = "guardkit.approval.status"
APPROVAL_TIMEOUT: Final = "guardkit.approval.timeout"
GUARD_METHOD: Final = "guardkit.guard.method"
RUN_OUTCOME: Final = "guardkit.run.outcome"
RUN_TURNS: Final = "guardkit.run.turns"

#: Span names guardkit starts besides the GenAI ones.
SPAN_APPROVAL: Final = "guardkit.approval"
SPAN_GUARD_CALL: Final = "guardkit.guard"

#: The log-based event (OTel Logs API) emitted for every decision.
EVENT_DECISION: Final = "guardkit.decision"

# -- error.type values (the documented set) --------------------------------------------------

ERR_DENIED: Final = "guardkit.denied"
ERR_APPROVAL_TIMEOUT: Final = "guardkit.approval_timeout"
ERR_IDEMPOTENCY_IN_PROGRESS: Final = "guardkit.idempotency_in_progress"
ERR_IDEMPOTENCY_CONFLICT: Final = "guardkit.idempotency_conflict"
ERR_GUARD_UNAVAILABLE: Final = "guardkit.guard_unavailable"
ERR_INVALID_INPUT: Final = "guardkit.invalid_input"
ERR_GUARD_FAILED: Final = "guardkit.guard_failed"
ERROR_TYPES: Final = frozenset(
    {
        ERR_DENIED,
        ERR_APPROVAL_TIMEOUT,
        ERR_IDEMPOTENCY_IN_PROGRESS,
        ERR_IDEMPOTENCY_CONFLICT,
        ERR_GUARD_UNAVAILABLE,
        ERR_INVALID_INPUT,
        ERR_GUARD_FAILED,
    }
)
#: A tool's own failure reported back to the model (the MCP conventions' ``isError``).
ERR_TOOL_ERROR: Final = "tool_error"
