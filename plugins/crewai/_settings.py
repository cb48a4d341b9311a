"""What a ``guard`` call decided for the agents it took, and how the hooks find it again."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from guardkit.protocols import AgentGuard
from guardkit.tools.scope import current_agent

__all__ = ["SETTINGS", "CostFn", "Settings", "settings_of"]

#: Computes a call's charge from its arguments (never trust a cost the model states).
CostFn = Callable[[Mapping[str, Any]], Any]
#: On a guarded agent: the settings of the latest ``guard`` call that took it.
SETTINGS = "_guardkit_settings"


class Settings:
    __slots__ = ("approval_timeout", "costs", "exempt", "guard", "poll")

    def __init__(
        self,
        guard_agent: AgentGuard | None,
        costs: dict[str, CostFn],
        approval_timeout: float,
        poll: float,
        exempt: frozenset[str],
    ) -> None:
        self.guard = guard_agent
        self.costs = costs
        self.approval_timeout = approval_timeout
        self.poll = poll
        self.exempt = exempt

    def agent(self) -> AgentGuard:
        return self.guard if self.guard is not None else current_agent("CrewAI call")


def settings_of(agent: Any) -> Settings | None:
    """The settings of a guarded agent (or of the agent a ``LiteAgent`` runs for)."""
    for candidate in (agent, getattr(agent, "original_agent", None)):
        settings = getattr(candidate, SETTINGS, None)
        if isinstance(settings, Settings):
            return settings
    return None
