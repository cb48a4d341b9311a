"""Lineage ``AgentClient`` conveniences built on the five primitives, shared by every agent guard.

``LocalAgent`` (in-process) and ``AgentClient`` (HTTP) both implement ``request``, ``report``,
``status``, ``action`` and ``wait_for_approval``; this mixin adds ``authorize`` and ``tool``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from guardkit.errors import ActionDenied

__all__ = ["AgentConveniences"]

P = ParamSpec("P")
R = TypeVar("R")


class AgentConveniences(abc.ABC):
    """``authorize`` and the Lineage-style ``tool`` decorator over ``request``/``report``."""

    @abc.abstractmethod
    def request(self, tool: str, input: Any = None, cost: Any = None) -> dict[str, Any]:
        """Implemented by each agent guard."""

    @abc.abstractmethod
    def report(self, action_id: str, status: str, detail: str = "") -> dict[str, Any]:
        """Implemented by each agent guard."""

    @abc.abstractmethod
    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str:
        """Implemented by each agent guard."""

    def authorize(
        self,
        tool: str,
        input: Any = None,
        cost: Any = None,
        wait_for_approval: bool = True,
        approval_timeout: float = 300,
    ) -> str:
        """Request and return the action id if allowed; raise ``ActionDenied`` otherwise.

        >>> action_id = agent.authorize("pay_invoice", {"invoice": "INV-7"}, cost=1200)
        """
        decision = self.request(tool, input, cost)
        action_id = str(decision["action_id"])
        if decision["decision"] == "allowed":
            return action_id
        if decision["decision"] == "pending_approval":
            if not wait_for_approval:
                raise ActionDenied(action_id, {"code": "pending_approval"})
            final = self.wait_for_approval(action_id, timeout=approval_timeout)
            if final == "allowed":
                return action_id
            raise ActionDenied(action_id, {"code": "rejected"})
        raise ActionDenied(action_id, dict(decision.get("reason") or {"code": "denied"}))

    def tool(
        self,
        name: str | None = None,
        cost: Any = None,
        wait_for_approval: bool = True,
        **options: Any,
    ) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """``guardkit.tool`` bound to this agent; ``options`` are its keyword options.

        >>> @agent.tool("search")
        ... def search(query): ...
        """
        from guardkit.protocols import AgentGuard
        from guardkit.tools import tool_decorator

        guard = cast(AgentGuard, self)  # every concrete agent guard also has status and action
        return tool_decorator(
            name, guard=guard, cost=cost, wait_for_approval=wait_for_approval, **options
        )
