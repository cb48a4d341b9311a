"""guardkit: guard tool-calling LLM agents.

Every model turn and every tool call is requested first and answered ``allowed``, ``denied`` or
``pending_approval`` by a policy guard with a durable, hash-chained ledger::

    from guardkit import Guard

    guard = Guard("guardkit.db")
    guard.create_agent("bot", {"budget": 30, "tools": {"llm_turn": {"cost": 1, "max_calls": 10}}})
    agent = guard.agent("bot")
    decision = agent.request("llm_turn", {})
"""

import importlib

from guardkit._version import __version__
from guardkit.checks.egress import EgressRule
from guardkit.checks.paths import PathRule
from guardkit.checks.runtime import Runtime
from guardkit.decisions import ActionStatus, Decision, DenyCode, Outcome, Severity
from guardkit.errors import (
    ActionDenied,
    AgentExists,
    AlreadyConsumed,
    AlreadyTerminated,
    ApprovalTimeout,
    Conflict,
    ConsumeMismatch,
    Forbidden,
    GuardError,
    GuardStop,
    GuardUnavailable,
    IdempotencyConflict,
    IdempotencyInProgress,
    InvalidInput,
    InvalidState,
    LedgerTampered,
    NoAgentConfigured,
    NotFound,
    PolicyError,
    SetupError,
    StoreError,
    ToolDenied,
    TurnDenied,
    UnknownAction,
)
from guardkit.idempotency import Idempotency
from guardkit.local import Guard, LocalAgent
from guardkit.policy import Policy, RateLimit, ToolRule, load_policy
from guardkit.protocols import AgentGuard, AsyncAgentGuard, Model, ModelReply, ToolCall
from guardkit.provenance import Provenance, ProvenanceRule, tag
from guardkit.refusals import Refusal, refusal
from guardkit.tools import scope as _scope
from guardkit.tools import tool
from guardkit.tools.handoff import current_action_id
from guardkit.tools.scope import current_agent, use_agent
from guardkit.tools.turns import model_turn

__all__ = [
    "__version__",
    # the guard
    "Guard",
    "LocalAgent",
    "AgentGuard",
    "AsyncAgentGuard",
    "Policy",
    "ToolRule",
    "RateLimit",
    "load_policy",
    "Decision",
    "DenyCode",
    "ActionStatus",
    "Outcome",
    "Severity",
    # tools and model turns
    "tool",
    "model_turn",
    "use_agent",
    "current_agent",
    "current_action_id",
    "Idempotency",
    "PathRule",
    "EgressRule",
    "Runtime",
    "Provenance",
    "ProvenanceRule",
    "tag",
    # refusals: what a model reads when the guard did not let a call run
    "refusal",
    "Refusal",
    # the loop's seams
    "Model",
    "ModelReply",
    "ToolCall",
    # errors
    "GuardError",
    "ActionDenied",
    "ToolDenied",
    "ApprovalTimeout",
    "PolicyError",
    "InvalidInput",
    "Forbidden",
    "NotFound",
    "UnknownAction",
    "Conflict",
    "AgentExists",
    "InvalidState",
    "AlreadyTerminated",
    "AlreadyConsumed",
    "ConsumeMismatch",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "StoreError",
    "LedgerTampered",
    "GuardUnavailable",
    "SetupError",
    "GuardStop",
    "NoAgentConfigured",
    "TurnDenied",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and isinstance(_obj, type):
        _obj.__module__ = "guardkit"
del _name, _obj


def _agent_from_environment() -> AgentGuard | None:
    from guardkit.configure import agent_from_environment

    return agent_from_environment()


# With nothing set by use_agent, guarded call sites read GUARDKIT_AGENT... (guardkit.configure).
_scope.set_fallback(_agent_from_environment)

#: The HTTP clients and Lineage's setup helpers need httpx (the ``server`` or ``client``
#: extra), so they load on first use.
_HTTP_CLIENTS = {
    "AgentClient": "client",
    "AdminClient": "client",
    "BackendClient": "client",
    "connect_admin": "connect",
    "find_admin_token": "connect",
    "load_dotenv": "connect",
}


def __getattr__(name: str) -> object:
    if name in _HTTP_CLIENTS:
        try:
            module = importlib.import_module(f"guardkit.{_HTTP_CLIENTS[name]}")
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                f"guardkit.{name} needs httpx: pip install 'guardkit[client]'"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module 'guardkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, *_HTTP_CLIENTS])
