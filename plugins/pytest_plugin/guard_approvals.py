"""The ``guard`` fixture's guard: an approval nobody in the test will give fails the test at once.

A test has no human to wait for. When a guarded call waits for approval and no ``approver``
rule of the test matches it, the wait lasts ``guard_approval_wait`` seconds (default 0) instead of
the caller's timeout (300 s for a tool), then fails the test with ``pytest.fail``, whose text
names the tool and the ``approver`` fixture. ``Failed`` is a ``BaseException``: the ``except
Exception`` of an agent's loop lets it through to the test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from guardkit.errors import ApprovalTimeout
from guardkit.local import Guard, LocalAgent

if TYPE_CHECKING:
    from guardkit.decisions import ActionStatusName, PendingAction

    from .guard_fixtures import Approver

__all__ = ["TestGuard"]


class TestGuard(Guard):
    """A ``Guard`` whose agents fail the test on an approval nobody in the test gives."""

    __test__ = False  # not a test class, should pytest ever look at it

    def __init__(self, store: str, *, approval_wait: float) -> None:
        super().__init__(store)
        self.approval_wait = approval_wait
        #: The ``approver`` fixtures of the test (their rules say who will decide what).
        self.approvers: list[Approver] = []

    def agent(self, agent_id: str) -> LocalAgent:
        self.engine.status(agent_id)
        return _TestAgent(self, agent_id)


class _TestAgent(LocalAgent):
    guard: TestGuard

    def _wait(self, action_id: str, timeout: float) -> float:
        """How long to wait: the caller's timeout when an approver rule will decide it."""
        found = self.action(action_id)
        action: PendingAction = {
            "action_id": action_id,
            "tool": found["tool"],
            "input": found["input"],
            "cost": found["cost"],
        }
        if any(a.will_decide(action) for a in self.guard.approvers):
            return timeout
        return min(timeout, self.guard.approval_wait)

    def _nobody(self, action_id: str, waited: float) -> None:
        tool = self.action(action_id)["tool"]
        after = f" within guard_approval_wait={waited:g}s" if waited else ""
        pytest.fail(
            f"guardkit: the call of {tool!r} ({action_id}, agent {self.agent_id!r}) waits for a "
            f"human's approval and nobody in this test gives it{after}. Request the `approver` "
            f"fixture and add a rule: approver.approve({tool!r}) or approver.reject({tool!r}, "
            "reason=...); or, to approve from elsewhere, give it time with the guard_approval_wait "
            "ini key or --guard-approval-wait SECONDS.",
            pytrace=False,
        )

    def wait_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        wait = self._wait(action_id, timeout)
        try:
            return super().wait_for_approval(action_id, wait, min(poll, wait) or poll)
        except ApprovalTimeout:
            if wait >= timeout:
                raise  # the caller's own timeout: its ApprovalTimeout, as outside tests
            self._nobody(action_id, wait)
            raise

    async def await_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        wait = self._wait(action_id, timeout)
        try:
            return await super().await_for_approval(action_id, wait, min(poll, wait) or poll)
        except ApprovalTimeout:
            if wait >= timeout:
                raise
            self._nobody(action_id, wait)
            raise
