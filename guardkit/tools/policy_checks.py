"""A tool's checks merged with its agent's policy section, worked out once per policy."""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref
from collections.abc import Mapping
from typing import Any, cast

from guardkit.checks.checkset import CheckSet
from guardkit.errors import PolicyError
from guardkit.policy import Policy
from guardkit.protocols import AgentGuard, KnowsPolicy, implements

__all__ = ["PolicyChecks"]


class PolicyChecks:
    """The decorator's checks plus the policy's ``tools.<name>`` check section.

    Only agent guards that know their policy (``KnowsPolicy``) contribute a section. A policy
    never changes for an agent, so the merge is cached per policy object.
    """

    def __init__(
        self, tool: str, own: CheckSet, parameters: Mapping[str, inspect.Parameter] | None = None
    ) -> None:
        self._tool = tool
        self._own = own
        self._parameters = parameters
        # Keyed by id(); the policy is kept in the value so its id can't be reused meanwhile.
        self._cache: dict[int, tuple[Policy, CheckSet]] = {}
        # What each agent guard got, so a later call needs no policy() (a store read, or an
        # HTTP round trip for an AgentClient) at all.
        self._by_agent: weakref.WeakKeyDictionary[Any, CheckSet] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def ready(self, agent: AgentGuard) -> bool:
        """Whether ``for_agent`` answers without reading the policy (so it can't block)."""
        return not implements(agent, KnowsPolicy) or self._known(agent) is not None

    def _known(self, agent: AgentGuard) -> CheckSet | None:
        try:
            return self._by_agent.get(agent)
        except TypeError:  # an agent guard that can't be weakly referenced or hashed
            return None

    def for_agent(self, agent: AgentGuard) -> CheckSet:
        """The decorator's checks merged with ``agent``'s policy section, if it has one."""
        if not implements(agent, KnowsPolicy):
            return self._own
        known = self._known(agent)
        if known is not None:
            return known
        policy = cast(KnowsPolicy, agent).policy()
        # A read needs no lock: a racing first call only merges twice.
        found = self._cache.get(id(policy))
        merged = found[1] if found is not None and found[0] is policy else self._merge(policy)
        with self._lock:
            self._cache[id(policy)] = (policy, merged)
            with contextlib.suppress(TypeError):
                self._by_agent[agent] = merged
        return merged

    def _merge(self, policy: Policy) -> CheckSet:
        rule = policy.rule_for(self._tool)
        if rule is None:
            return self._own
        section = CheckSet.from_policy(
            self._tool, rule.checks, requires_approval=rule.requires_approval
        )
        unknown = section.unknown_arguments(self._parameters) if self._parameters else []
        if self._tool in policy.tools and unknown:
            raise PolicyError(
                [
                    (
                        f"tools.{self._tool}",
                        f"check rules name arguments the tool doesn't take: {unknown}",
                    )
                ]
            )
        return self._own.merged(section)
