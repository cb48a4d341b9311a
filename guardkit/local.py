"""The in-process guard: ``Guard`` (the operator side) and ``LocalAgent`` (one agent's side).

Example::

    guard = Guard("guardkit.db")
    guard.create_agent("bot", {"budget": 30, "tools": {"llm_turn": {"cost": 1}}}, exist_ok=True)
    agent = guard.agent("bot")
    turn = agent.request("llm_turn", {})
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

from guardkit._agent_api import AgentConveniences, announce_wait, check_wait
from guardkit._tokens import agent_token, token_key
from guardkit.decisions import (
    Action,
    ActionStatusName,
    AgentEntry,
    AgentStatus,
    ConsumedAction,
    DecisionDict,
    FaultName,
    LogPage,
    NewAgent,
    PendingItem,
    PublicKeyInfo,
    Reason,
    Severity,
    SeverityName,
    Verification,
)
from guardkit.engine import DEFAULT_MAX_INPUT_BYTES, Engine
from guardkit.errors import AgentExists, ApprovalTimeout
from guardkit.policy import Policy, load_policy
from guardkit.protocols import IdempotencyStore
from guardkit.store import Store, Witness, open_store
from guardkit.store.deliveries import SinkStats, sink_stats
from guardkit.store.export import write_jsonl

__all__ = ["Guard", "LocalAgent"]

P = ParamSpec("P")
R = TypeVar("R")


class Guard:
    """The operator side of an embedded guard, with Lineage ``AdminClient``'s methods.

    ``store`` is ``":memory:"``, a SQLite path, ``"sqlite:///PATH"`` (or, with the postgres
    extra, a ``postgresql://`` URL). ``durability="full"`` fsyncs every decision; ``"normal"``
    survives a process crash but not a power cut. Opening verifies every agent's ledger;
    an agent that fails is quarantined and the others keep working.

    ``signing_key`` (an Ed25519 private key, its raw bytes or hex) signs every new record and
    pins its public key; ``public_key`` pins a key without signing (to read and verify a signed
    store). With a pinned key, a ledger signed by any other key (or by none) is refused at open,
    and a store whose ledgers the key signed none of raises ``StoreError`` naming both keys'
    fingerprints.

    ``witness``: every commit's heads also go outside the database, by default to the file
    ``<db>.witness`` beside it; a ledger behind its witness (cut short, or an older copy of the
    file restored) is quarantined. A path or any ``guardkit.store.Witness`` puts it elsewhere;
    None turns it off. See ``docs/guard.md``.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | Store = ":memory:",
        *,
        signing_key: Any = None,
        public_key: Any = None,
        durability: str = "full",
        witness: str | Witness | None = "auto",
        clock: Callable[[], float] = time.time,
        max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
    ) -> None:
        target = os.fspath(store) if isinstance(store, os.PathLike) else store
        self.store = open_store(
            target,
            signing_key=signing_key,
            public_key=public_key,
            durability=durability,
            witness=witness,
        )
        self.engine = Engine(self.store, clock=clock, max_input_bytes=max_input_bytes)
        try:
            self.engine.check_ledgers()
        except BaseException:
            self.store.close()
            raise

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    @property
    def public_key(self) -> str | None:
        """The pinned public key (the signing key's, or ``public_key=``), hex."""
        return self.store.trusted_key

    @property
    def quarantined(self) -> dict[str, str]:
        """Agents refused because their ledger failed a check (at open or since), with why."""
        return self.engine.quarantined

    # -- Lineage AdminClient ------------------------------------------------------------------

    def create_agent(self, agent_id: str, policy: Any, *, exist_ok: bool = False) -> NewAgent:
        """Create an agent with a fixed policy; returns ``{"agent": status, "token": token}``.

        With ``exist_ok=True`` an agent that already exists with the same policy is returned as
        it stands (a script can run twice); one with a different policy is still refused, since
        a policy never changes for an agent's life.
        """
        if exist_ok:
            existing = self._existing(agent_id, policy)
            if existing is not None:
                return {"agent": existing, "token": self.token(agent_id)}
        status = self.engine.create_agent(agent_id, policy)
        return {"agent": status, "token": self.token(agent_id)}

    def _existing(self, agent_id: str, policy: Any) -> AgentStatus | None:
        wanted = load_policy(policy)
        with self.store.transaction(write=False) as tx:
            if not tx.agent_exists(agent_id):
                return None
            stored = tx.agent(agent_id).policy
        if stored.to_dict() != wanted.to_dict():
            raise AgentExists(
                f"agent {agent_id!r} already exists with a different policy; a policy is fixed "
                "for an agent's life: create the agent under a new id (or use a new database)"
            )
        return self.engine.status(agent_id)

    def agents(self) -> list[AgentEntry]:
        return self.engine.agents()

    def status(self, agent_id: str) -> AgentStatus:
        return self.engine.status(agent_id)

    def action(self, agent_id: str, action_id: str) -> Action:
        return self.engine.action(agent_id, action_id)

    def notifications(self) -> list[SinkStats]:
        """Each notification sink's deliveries from this store (docs/notifications.md)."""
        with self.engine.store.transaction(write=False) as tx:
            return sink_stats(tx)

    def pending(self, agent_id: str) -> list[PendingItem]:
        return self.engine.pending(agent_id)

    def approve(
        self, agent_id: str, action_id: str, approver: str, note: str | None = None
    ) -> DecisionDict:
        return self.engine.approve(agent_id, action_id, approver, note).to_dict()

    def reject(
        self, agent_id: str, action_id: str, approver: str, reason: str, scar: str | None = None
    ) -> DecisionDict:
        return self.engine.reject(agent_id, action_id, approver, reason, scar).to_dict()

    def report_harm(self, agent_id: str, action_id: str, detail: str) -> AgentStatus:
        return self.engine.report(agent_id, action_id, "harmful", detail, operator=True)

    def scar(
        self, agent_id: str, severity: str, reason: str, action_id: str | None = None
    ) -> AgentStatus:
        return self.engine.scar(agent_id, severity, reason, action_id)

    def terminate(self, agent_id: str, reason: str, by: str) -> AgentStatus:
        return self.engine.terminate(agent_id, reason, by)

    def log(self, agent_id: str, after: int | None = None, limit: int | None = None) -> LogPage:
        return self.engine.log(agent_id, after, limit)

    def verify(
        self, agent_id: str, checkpoint: str | None = None, *, public_key: Any = None
    ) -> Verification:
        """Check the agent's chain and signatures (under ``public_key`` if given, else the
        pinned key); ``checkpoint`` (``seq:hash``, as ``checkpoint()`` printed it) must still
        be in it, which catches a ledger cut short behind it."""
        return self.engine.verify(agent_id, checkpoint, public_key=public_key)

    def checkpoint(self, agent_id: str) -> str:
        """The agent's head as ``seq:hash``, to publish where this host can't rewrite it."""
        return self.engine.checkpoint(agent_id)

    def policy(self, agent_id: str) -> Policy:
        """The agent's policy, fixed for its life (its check sections included)."""
        self.engine.status(agent_id)  # unknown or quarantined agents raise here
        with self.store.transaction(write=False) as tx:
            return tx.agent(agent_id).policy

    def public_key_info(self) -> PublicKeyInfo:
        return {"public_key": self.public_key, "algorithm": "ed25519"}

    # -- guardkit additions ---------------------------------------------------------------------

    def spawn(self, parent_id: str, child_id: str, policy: Any, budget: int) -> NewAgent:
        """Create a sub-agent funded from ``parent_id``'s budget; returns like ``create_agent``."""
        status = self.engine.spawn(parent_id, child_id, policy, budget)
        return {"agent": status, "token": self.token(child_id)}

    def consume(
        self,
        agent_id: str,
        action_id: str,
        tool: str,
        input: Any,
        cost: Any = None,
        *,
        by: str = "backend",
    ) -> ConsumedAction:
        """The backend role's check before acting; succeeds once per allowed action."""
        return self.engine.consume(agent_id, action_id, tool, input, cost, by=by)

    def export(self, agent_id: str, out: str | os.PathLike[str] | IO[str]) -> int:
        """Write the agent's ledger as Lineage-format JSON Lines; returns the record count."""
        self.engine.status(agent_id)
        records = self.store.iter_records(agent_id)
        if isinstance(out, (str, os.PathLike)):
            with Path(out).open("w", encoding="utf-8") as handle:
                return write_jsonl(records, handle)
        return write_jsonl(records, out)

    def token(self, agent_id: str) -> str:
        """The agent's token (the same every time; rotating the token key revokes them all)."""
        return agent_token(token_key(self.store), agent_id)

    def agent(self, agent_id: str) -> LocalAgent:
        """The agent side for ``agent_id``: what the agent's loop and tools talk to."""
        self.engine.status(agent_id)
        return LocalAgent(self, agent_id)


class LocalAgent(AgentConveniences):
    """One agent's view of an in-process guard, with Lineage ``AgentClient``'s methods.

    Every call has an ``async`` twin (``arequest``, ``areport``, ``astatus``, ``aaction``,
    ``await_for_approval``) that never blocks the event loop: a store that waits on a disk runs
    in a worker thread, and a wait for a human is woken by the decision itself.
    """

    def __init__(self, guard: Guard, agent_id: str) -> None:
        self.guard = guard
        self.agent_id = agent_id
        self._engine = guard.engine
        self._policy: Policy | None = None

    def __repr__(self) -> str:
        return f"LocalAgent({self.agent_id!r}, store={self.guard.store.location!r})"

    def request(self, tool: str, input: Any = None, cost: Any = None) -> DecisionDict:
        """Ask before acting: ``{"decision": "allowed" | "denied" | "pending_approval", ...}``."""
        return self._engine.request(self.agent_id, tool, input, cost).to_dict()

    def request_approval(self, tool: str, input: Any, cost: Any, reason: Reason) -> DecisionDict:
        """``request``, sending this one call to a human (``reason`` says why) if checks pass."""
        decision = self._engine.request(self.agent_id, tool, input, cost, approval_reason=reason)
        return decision.to_dict()

    def report(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus:
        """Report ``success`` or ``failure``; an agent may not report ``harmful``. A failure
        whose ``fault`` is ``upstream`` or ``caller`` leaves no scar."""
        return self._engine.report(
            self.agent_id, action_id, status, detail, operator=False, fault=fault
        )

    def deny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict:
        """Record a denial a local check decided (``path_denied``...): it lands in the ledger."""
        level = Severity(severity) if severity is not None else None
        return self._engine.deny(self.agent_id, tool, input, reason, level).to_dict()

    def status(self) -> AgentStatus:
        return self._engine.status(self.agent_id)

    def action(self, action_id: str) -> Action:
        return self._engine.action(self.agent_id, action_id)

    def policy(self) -> Policy:
        """The agent's policy (fixed for its life, so read once)."""
        if self._policy is None:
            self._policy = self.guard.policy(self.agent_id)
        return self._policy

    @property
    def idempotency_store(self) -> IdempotencyStore:
        """Idempotency records live beside the agent's ledger."""
        return self.guard.store

    def withdraw(self, action_id: str, timeout: float) -> Action:
        """Stop waiting for a human: a still-pending action is denied (``approval_timeout``)."""
        return self._engine.withdraw(self.agent_id, action_id, timeout)

    def approval_hint(self, action_id: str) -> str:
        """How a human decides ``action_id``: the exact command for this store."""
        location = self.guard.store.location
        if location == ":memory:":
            return f"from this process: guard.approve({self.agent_id!r}, {action_id!r}, by)"
        db = f" --db {location}" if not location.startswith("postgres") else ""
        return (
            f"guardkit approve {self.agent_id} {action_id} --by NAME{db}  "
            f"(or: guardkit reject {self.agent_id} {action_id} --by NAME --reason WHY{db})"
        )

    def wait_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """Block until the action is decided; returns its status (``allowed`` or ``denied``).

        An approval in this process wakes the waiter at once; one made by another process is
        seen within ``poll`` seconds. Says once (log ``guardkit``, WARNING) what it waits for and
        how to decide it. Raises ``ApprovalTimeout`` (a ``TimeoutError``) after ``timeout``; the
        action stays pending (``withdraw`` ends it, as guarded tools and the loop do).
        """
        check_wait(timeout, poll)
        deadline = time.monotonic() + timeout
        condition = self._engine.decided
        announced = False
        while True:
            with condition:
                status = self.action(action_id)["status"]
                if status != "pending_approval":
                    return status
                if not announced:
                    hint = self.approval_hint(action_id)
                    announced = announce_wait(self.agent_id, action_id, timeout, hint)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ApprovalTimeout(action_id, timeout)
                condition.wait(min(poll, left))

    # -- async ------------------------------------------------------------------------------------

    async def _off_loop(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        if not self.guard.store.blocks:
            return func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)

    async def arequest(self, tool: str, input: Any = None, cost: Any = None) -> DecisionDict:
        """``request`` for async code."""
        return await self._off_loop(self.request, tool, input, cost)

    async def arequest_approval(
        self, tool: str, input: Any, cost: Any, reason: Reason
    ) -> DecisionDict:
        """``request_approval`` for async code."""
        return await self._off_loop(self.request_approval, tool, input, cost, reason)

    async def areport(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus:
        """``report`` for async code."""
        return await self._off_loop(partial(self.report, fault=fault), action_id, status, detail)

    async def adeny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict:
        """``deny_local`` for async code."""
        return await self._off_loop(self.deny_local, tool, input, reason, severity)

    async def awithdraw(self, action_id: str, timeout: float) -> Action:
        """``withdraw`` for async code."""
        return await self._off_loop(self.withdraw, action_id, timeout)

    async def astatus(self) -> AgentStatus:
        return await self._off_loop(self.status)

    async def aaction(self, action_id: str) -> Action:
        return await self._off_loop(self.action, action_id)

    async def await_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """``wait_for_approval`` for async code: no thread is held while a human decides."""
        check_wait(timeout, poll)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        decided = asyncio.Event()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(decided.set)

        stop = self._engine.listen(wake)
        announced = False
        try:
            while True:
                decided.clear()
                status = (await self.aaction(action_id))["status"]
                if status != "pending_approval":
                    return status
                if not announced:
                    hint = self.approval_hint(action_id)
                    announced = announce_wait(self.agent_id, action_id, timeout, hint)
                left = deadline - loop.time()
                if left <= 0:
                    raise ApprovalTimeout(action_id, timeout)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(decided.wait(), min(poll, left))
        finally:
            stop()
