"""``guardkit.tools.outcome.report``: the one outcome step every way in reports with."""

from __future__ import annotations

from typing import Any

import guardkit
from guardkit.tools.flow import drive
from guardkit.tools.outcome import DETAIL_MAX, report

from .conftest import records


class FirstVersionAgent:
    """An agent guard whose ``report`` predates the ``fault`` keyword."""

    agent_id = "old"

    def __init__(self) -> None:
        self.reports: list[tuple[Any, ...]] = []

    def report(self, action_id: str, status: str, detail: str = "") -> None:
        self.reports.append((action_id, status, detail))


def test_the_agents_own_outcome_is_reported_without_a_fault_keyword() -> None:
    old = FirstVersionAgent()
    drive(report("act_1", "failure", "x" * (DETAIL_MAX + 50)), old)  # type: ignore[arg-type]
    assert old.reports == [("act_1", "failure", "x" * DETAIL_MAX)]


def test_a_cancelled_call_is_recorded_as_the_callers_and_leaves_no_scar(
    agent: guardkit.LocalAgent,
) -> None:
    decision = agent.request("pay", {"to": "bob"})
    drive(report(decision["action_id"], "failure", "cancelled before it finished", "caller"), agent)
    outcome = records(agent, "outcome")[-1]
    assert outcome["status"] == "failure"
    assert outcome["fault"] == "caller"
    assert agent.status()["scars"] == []


def test_the_agents_failure_scars(agent: guardkit.LocalAgent) -> None:
    decision = agent.request("pay", {"to": "bob"})
    drive(report(decision["action_id"], "failure", "ValueError: no"), agent)
    assert "fault" not in records(agent, "outcome")[-1]
    assert len(agent.status()["scars"]) == 1
