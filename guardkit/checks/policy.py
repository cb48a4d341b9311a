"""The policy's part of a tool's checks, read from a ``LocalAgent``'s store once per agent."""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from guardkit.checks.local import CheckSet
from guardkit.errors import PolicyError
from guardkit.store.base import Store

__all__ = ["PolicyChecks"]


class PolicyChecks:
    """The policy's part of a tool's checks, read once per (store, agent): policies are fixed."""

    def __init__(
        self, tool: str, own: CheckSet, parameters: Mapping[str, inspect.Parameter] | None = None
    ) -> None:
        self._tool = tool
        self._own = own
        self._parameters = parameters
        self._cache: weakref.WeakKeyDictionary[Store, dict[str, CheckSet]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def for_agent(self, agent: Any) -> CheckSet:
        """The decorator's checks merged with ``agent``'s policy section (a ``LocalAgent``'s)."""
        store = getattr(getattr(agent, "guard", None), "store", None)
        agent_id = getattr(agent, "agent_id", None)
        if not isinstance(store, Store) or not isinstance(agent_id, str):
            return self._own
        # A read needs no lock: a racing first call only reads the policy twice.
        found = self._cache.get(store, {}).get(agent_id)
        if found is not None:
            return found
        with store.transaction(write=False) as tx:
            policy = tx.agent(agent_id).policy
        rule = policy.rule_for(self._tool)
        merged = self._own
        if rule is not None:
            own_rule = self._tool in policy.tools
            section = CheckSet.from_policy(
                self._tool, rule.checks, requires_approval=rule.requires_approval
            )
            unknown = section.unknown_arguments(self._parameters) if self._parameters else []
            if own_rule and unknown:
                raise PolicyError(
                    [
                        (
                            f"tools.{self._tool}",
                            f"check rules name arguments the tool doesn't take: {unknown}",
                        )
                    ]
                )
            merged = self._own.merged(section)
        with self._lock:
            self._cache.setdefault(store, {})[agent_id] = merged
        return merged
