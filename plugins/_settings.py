"""What an integration's ``guard`` call decided for the agents it guards in place: the guard
(or none: ``guardkit.current_agent()`` at each call), the tools' cost functions, how long an
approval is waited for and how often it is polled, and the tools left unguarded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from guardkit.protocols import AgentGuard
from guardkit.tools.scope import current_agent

__all__ = ["CostFn", "GuardSettings"]

#: Computes a call's charge from its arguments (never trust a cost the model states).
CostFn = Callable[[Mapping[str, Any]], Any]


class GuardSettings:
    __slots__ = ("approval_timeout", "costs", "exempt", "framework", "guard", "poll")

    def __init__(
        self,
        framework: str,
        guard_agent: AgentGuard | None,
        costs: dict[str, CostFn],
        approval_timeout: float,
        poll: float,
        exempt: frozenset[str],
    ) -> None:
        self.framework = framework
        self.guard = guard_agent
        self.costs = costs
        self.approval_timeout = approval_timeout
        self.poll = poll
        self.exempt = exempt

    def agent(self) -> AgentGuard:
        """The guard, or the current agent (failing closed, naming the framework, without)."""
        return self.guard if self.guard is not None else current_agent(f"{self.framework} call")
