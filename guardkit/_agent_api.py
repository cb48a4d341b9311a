"""Lineage ``AgentClient`` conveniences built on the five primitives, shared by every agent guard.

``LocalAgent`` (in-process) and ``AgentClient`` (HTTP) both implement ``request``, ``report``,
``status``, ``action`` and ``wait_for_approval``; this mixin adds ``authorize`` and ``tool``.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from guardkit.decisions import ActionStatusName, AgentStatus, DecisionDict, FaultName
from guardkit.errors import ActionDenied, InvalidInput

__all__ = ["AgentConveniences", "announce_wait", "check_wait"]

P = ParamSpec("P")
R = TypeVar("R")

_log = logging.getLogger("guardkit")


class AgentConveniences(abc.ABC):
    """``authorize`` and the Lineage-style ``tool`` decorator over ``request``/``report``."""

    agent_id: str

    @abc.abstractmethod
    def request(self, tool: str, input: Any = None, cost: Any = None) -> DecisionDict:
        """Implemented by each agent guard."""

    @abc.abstractmethod
    def report(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus:
        """Implemented by each agent guard."""

    @abc.abstractmethod
    def wait_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
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
        action_id = decision["action_id"]
        if decision["decision"] == "allowed":
            return action_id
        if decision["decision"] == "pending_approval":
            if not wait_for_approval:
                raise ActionDenied(action_id, {"code": "pending_approval"})
            final = self.wait_for_approval(action_id, timeout=approval_timeout)
            if final == "allowed":
                return action_id
            raise ActionDenied(action_id, {"code": "rejected"})
        raise ActionDenied(action_id, decision.get("reason") or {"code": "denied"})

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
        from guardkit.tools import tool

        # Every concrete agent guard also has status and action: it is an AgentGuard.
        assert isinstance(self, AgentGuard)
        decorator: Callable[[Callable[P, R]], Callable[P, R]] = tool(
            name, guard=self, cost=cost, wait_for_approval=wait_for_approval, **options
        )
        return decorator


def check_wait(timeout: float, poll: float) -> None:
    """Refuse a wait that could never end well: ``poll`` must be > 0 and ``timeout`` >= 0."""
    if poll <= 0 or timeout < 0:
        raise InvalidInput("poll must be > 0 and timeout >= 0")


def announce_wait(agent_id: str, action_id: str, timeout: float, hint: str) -> bool:
    """Say once (log ``guardkit``, WARNING) what a wait is for and how a human decides it."""
    _log.warning(
        "guardkit: %s (agent %s) waits for a human's approval for up to %ss; %s",
        action_id,
        agent_id,
        f"{timeout:g}",
        hint,
    )
    return True
