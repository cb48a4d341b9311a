"""guardkit: guard tool-calling LLM agents.

Every model turn and every tool call is requested first and answered ``allowed``, ``denied`` or
``pending_approval`` by a policy guard with a durable, hash-chained ledger::

    from guardkit import Guard

    guard = Guard("guardkit.db")
    guard.create_agent("bot", {"budget": 30, "tools": {"llm_turn": {"cost": 1, "max_calls": 10}}})
    agent = guard.agent("bot")
    decision = agent.request("llm_turn", {})
"""

# Everything below loads on first use (PEP 562 ``__getattr__``): a bare ``import guardkit``,
# which every pytest run does through the plugin's entry point (``guardkit.plugins``), stays cheap.

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from guardkit import _fallback
from guardkit._version import __version__

if TYPE_CHECKING:
    from guardkit.checks.egress import EgressRule
    from guardkit.checks.paths import PathRule
    from guardkit.checks.runtime import Runtime
    from guardkit.decisions import ActionStatus, Decision, DenyCode, Outcome, Severity
    from guardkit.dispatch import acall_tool, call_tool
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
        GuardFailed,
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
    "call_tool",
    "acall_tool",
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
    "GuardFailed",
]

#: The module that defines each public name.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "guardkit.checks.egress": ("EgressRule",),
    "guardkit.checks.paths": ("PathRule",),
    "guardkit.checks.runtime": ("Runtime",),
    "guardkit.decisions": ("ActionStatus", "Decision", "DenyCode", "Outcome", "Severity"),
    "guardkit.dispatch": ("acall_tool", "call_tool"),
    "guardkit.errors": (
        "ActionDenied",
        "AgentExists",
        "AlreadyConsumed",
        "AlreadyTerminated",
        "ApprovalTimeout",
        "Conflict",
        "ConsumeMismatch",
        "Forbidden",
        "GuardError",
        "GuardFailed",
        "GuardStop",
        "GuardUnavailable",
        "IdempotencyConflict",
        "IdempotencyInProgress",
        "InvalidInput",
        "InvalidState",
        "LedgerTampered",
        "NoAgentConfigured",
        "NotFound",
        "PolicyError",
        "SetupError",
        "StoreError",
        "ToolDenied",
        "TurnDenied",
        "UnknownAction",
    ),
    "guardkit.idempotency": ("Idempotency",),
    "guardkit.local": ("Guard", "LocalAgent"),
    "guardkit.policy": ("Policy", "RateLimit", "ToolRule", "load_policy"),
    "guardkit.protocols": ("AgentGuard", "AsyncAgentGuard", "Model", "ModelReply", "ToolCall"),
    "guardkit.provenance": ("Provenance", "ProvenanceRule", "tag"),
    "guardkit.refusals": ("Refusal", "refusal"),
    "guardkit.tools": ("tool",),
    "guardkit.tools.handoff": ("current_action_id",),
    "guardkit.tools.scope": ("current_agent", "use_agent"),
    "guardkit.tools.turns": ("model_turn",),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
#: The HTTP clients and Lineage's setup helpers need httpx (the ``server`` or ``client``
#: extra): the module of each.
_HTTP_CLIENTS = {
    "AgentClient": "client",
    "AdminClient": "client",
    "BackendClient": "client",
    "connect_admin": "connect",
    "find_admin_token": "connect",
    "load_dotenv": "connect",
}


def _agent_from_environment() -> AgentGuard | None:
    from guardkit.configure import agent_from_environment

    return agent_from_environment()


# With nothing set by use_agent, guarded call sites read GUARDKIT_AGENT... (guardkit.configure).
_fallback.factory[0] = _agent_from_environment


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        if isinstance(value, type):
            value.__module__ = "guardkit"
        globals()[name] = value
        return value
    if name in _HTTP_CLIENTS:
        try:
            module = importlib.import_module(f"guardkit.{_HTTP_CLIENTS[name]}")
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ImportError(
                f"guardkit.{name} needs httpx: pip install 'guardkit[client]'"
            ) from exc
        return getattr(module, name)
    # Anything else (``guardkit.tracing``...): load what an eager package would have loaded.
    for home in _EXPORTS:
        importlib.import_module(home)
    if name in globals():
        return globals()[name]
    raise AttributeError(f"module 'guardkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, *_HTTP_CLIENTS])
