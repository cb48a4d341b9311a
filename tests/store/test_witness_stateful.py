"""Random interleavings of decisions, tails cut and older copies restored (Hypothesis).

Whatever someone who can write the database file does between two opens, what the guard once
promised holds: every consumed action stays consumed, every terminated agent stays terminated,
or the agent is quarantined.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from guardkit import Guard, LedgerTampered
from guardkit.errors import AlreadyConsumed, GuardError

AGENTS = ("a", "b")
POLICY = {
    "budget": 10**6,
    "scar_limit": 10**6,
    "tools": {"llm_turn": {"cost": 1}, "pay": {"cost": 1, "requires_approval": True}},
}


class Attacks(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="guardkit-witness-")
        self.path = str(Path(self.dir) / "guard.db")
        self.guard: Guard | None = None
        #: (agent, action id, input) of every consumption the guard answered
        self.consumed: list[tuple[str, str, dict[str, int]]] = []
        self.terminated: set[str] = set()
        #: (agent, action id, input) approved and not consumed yet
        self.allowed: list[tuple[str, str, dict[str, int]]] = []
        self.copies: list[str] = []
        self.n = 0

    @property
    def g(self) -> Guard:
        assert self.guard is not None
        return self.guard

    @initialize()
    def start(self) -> None:
        self.guard = Guard(self.path, durability="normal")
        for agent_id in AGENTS:
            self.g.create_agent(agent_id, POLICY)

    def _reopen(self) -> None:
        self.g.close()
        self.guard = Guard(self.path, durability="normal")

    # -- what the guard does -------------------------------------------------------------------

    @rule(agent=st.sampled_from(AGENTS), pay=st.booleans())
    def decide(self, agent: str, pay: bool) -> None:
        self.n += 1
        payment = {"n": self.n}
        try:
            decision = self.g.agent(agent).request("pay" if pay else "llm_turn", payment)
            if decision["decision"] == "pending_approval":
                approved = self.g.approve(agent, decision["action_id"], "alice")
                if approved["decision"] == "allowed":
                    self.allowed.append((agent, decision["action_id"], payment))
        except GuardError:
            pass  # refused (quarantined): nothing was promised

    @precondition(lambda self: self.allowed)
    @rule(data=st.data())
    def consume(self, data: st.DataObject) -> None:
        agent, action_id, payment = data.draw(st.sampled_from(self.allowed))
        try:
            self.g.consume(agent, action_id, "pay", payment)
        except GuardError:
            return
        self.allowed.remove((agent, action_id, payment))
        self.consumed.append((agent, action_id, payment))

    @rule(agent=st.sampled_from(AGENTS))
    def terminate(self, agent: str) -> None:
        try:
            self.g.terminate(agent, "operator", "alice")
        except GuardError:
            return
        self.terminated.add(agent)

    @rule()
    def reopen(self) -> None:
        self._reopen()

    # -- what the attacker does ----------------------------------------------------------------

    @rule()
    def keep_a_copy(self) -> None:
        copy = str(Path(self.dir) / f"copy-{len(self.copies)}.db")
        with closing(sqlite3.connect(self.path)) as src, closing(sqlite3.connect(copy)) as dst:
            src.backup(dst)
        self.copies.append(copy)

    @precondition(lambda self: self.copies)
    @rule(data=st.data())
    def restore_a_copy(self, data: st.DataObject) -> None:
        copy = data.draw(st.sampled_from(self.copies))
        self.g.close()
        for suffix in ("-wal", "-shm"):
            Path(self.path + suffix).unlink(missing_ok=True)
        shutil.copyfile(copy, self.path)
        self.guard = Guard(self.path, durability="normal")

    @rule(agent=st.sampled_from(AGENTS), cut=st.integers(1, 4))
    def cut_the_tail(self, agent: str, cut: int) -> None:
        with closing(sqlite3.connect(self.path)) as conn, conn:
            (last,) = conn.execute(
                "SELECT coalesce(max(seq), 0) FROM records WHERE agent_id = ?", (agent,)
            ).fetchone()
            conn.execute(
                "DELETE FROM records WHERE agent_id = ? AND seq > ?", (agent, max(1, last - cut))
            )
        self._reopen()

    # -- what must hold ------------------------------------------------------------------------

    @invariant()
    def promises_hold(self) -> None:
        if self.guard is None:
            return
        for agent, action_id, payment in self.consumed:
            if agent in self.g.quarantined:
                continue
            try:
                self.g.consume(agent, action_id, "pay", payment)
            except (AlreadyConsumed, LedgerTampered):
                continue
            raise AssertionError(f"{agent} {action_id} was consumed a second time")
        for agent in self.terminated:
            try:
                alive = self.g.status(agent)["alive"]
            except LedgerTampered:
                continue
            assert not alive, f"{agent} came back to life"

    def teardown(self) -> None:
        if self.guard is not None:
            self.guard.close()
        shutil.rmtree(self.dir, ignore_errors=True)


Attacks.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
TestAttacks = Attacks.TestCase
