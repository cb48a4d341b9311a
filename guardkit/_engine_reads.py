"""The engine's reads, the backend's consume and the checks made when a store opens."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from guardkit import limits
from guardkit.decisions import (
    Action,
    AgentStatus,
    ConsumedAction,
    Decision,
    Head,
    LogPage,
    PendingAction,
    PendingItem,
    Verification,
    VerifyFailure,
)
from guardkit.errors import (
    AlreadyConsumed,
    ConsumeMismatch,
    InvalidInput,
    InvalidState,
    LedgerTampered,
    NotFound,
    StoreError,
    UnknownAction,
)
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import (
    ChainCheck,
    Checkpoint,
    fingerprint,
    format_timestamp,
    public_key_hex,
)
from guardkit.store.fold import missing_termination
from guardkit.store.state import AgentState

__all__ = ["EngineReads"]

from guardkit._engine_input import (
    _ALLOWED,
    _COMPLETED,
    _LOG_LIMIT_DEFAULT,
    _LOG_LIMIT_MAX,
    _action_number,
    _check_text,
    _has_ttl,
)


class EngineReads:
    """Reads of actions and ledgers, consumption, and verifying every ledger on open: the part
    of ``guardkit.engine.Engine`` (which it is a base of) that decides nothing new."""

    store: Store
    clock: Callable[[], float]
    if TYPE_CHECKING:  # the engine's own steps, used here

        @property
        def quarantined(self) -> dict[str, str]: ...
        def status(self, agent_id: str) -> AgentStatus: ...
        def _input_json(self, value: Any) -> str: ...
        def _expire(
            self, tx: Transaction, state: AgentState, now: float
        ) -> dict[int, Decision]: ...
        def _terminate(
            self, tx: Transaction, state: AgentState, reason: str, by: str, now: float
        ) -> None: ...

    # -- reads ---------------------------------------------------------------------------------

    def _status(self, tx: Transaction, state: AgentState) -> AgentStatus:
        policy, spent = state.policy, state.spent
        return {
            "agent_id": state.agent_id,
            "alive": state.alive,
            "termination_reason": state.termination_reason,
            "budget": policy.budget,
            "spent": spent,
            "remaining": policy.budget - spent,  # state.remaining, without a property call
            "scar_score": state.scar_score,
            "scar_limit": policy.scar_limit,
            "scars": list(state.scars),
            "actions_allowed": state.actions_allowed,
            "actions_denied": state.actions_denied,
            "actions_pending": state.actions_pending,
            "head": {"seq": state.head_seq, "hash": state.head_hash},
            "public_key": state.public_key,
            "parent_id": state.parent_id,
        }

    def action(self, agent_id: str, action_id: str) -> Action:
        number = _action_number(action_id)
        write = self._may_expire(agent_id)
        with self.store.transaction(write=write) as tx:
            state = self._agent(tx, agent_id)
            if write:
                self._expire(tx, state, self.clock())
            row = tx.get_action(agent_id, number)
            if row is None:
                raise UnknownAction(f"unknown action {action_id!r}")
            return row.to_dict()

    def pending(self, agent_id: str) -> list[PendingItem]:
        write = self._may_expire(agent_id)
        with self.store.transaction(write=write) as tx:
            state = self._agent(tx, agent_id)
            if write:
                self._expire(tx, state, self.clock())
            items: list[PendingItem] = []
            for row in tx.pending_actions(agent_id):
                action: PendingAction = {
                    "action_id": row.action_id,
                    "tool": row.tool,
                    "input": row.to_dict()["input"],
                    "cost": row.cost,
                }
                if row.approval_reason is not None:
                    action["approval_reason"] = row.approval_reason
                items.append(
                    {
                        "requested_at": format_timestamp(row.requested_at),
                        "seq": row.requested_seq,
                        "action": action,
                    }
                )
            return items

    def _may_expire(self, agent_id: str) -> bool:
        with self.store.transaction(write=False) as tx:
            state = self._agent(tx, agent_id)
            return bool(state.actions_pending) and _has_ttl(state.policy)

    def log(self, agent_id: str, after: int | None = None, limit: int | None = None) -> LogPage:
        if limit is None:
            limit = _LOG_LIMIT_DEFAULT
        if not isinstance(limit, int) or not 1 <= limit <= _LOG_LIMIT_MAX:
            raise InvalidInput(f"limit must be 1-{_LOG_LIMIT_MAX}")
        if after is not None and (
            not isinstance(after, int) or isinstance(after, bool) or not -(2**63) <= after < 2**63
        ):
            raise InvalidInput("after must be a sequence number")
        with self.store.transaction(write=False) as tx:
            self._exists(tx, agent_id)
            records = tx.records(agent_id, after=after, limit=limit)
            seq, digest = tx.head(agent_id) or (-1, "")
            return {"records": [r.to_dict() for r in records], "head": {"seq": seq, "hash": digest}}

    def checkpoint(self, agent_id: str) -> str:
        """The agent's head as ``seq:hash``: publish it where the guard's host can't rewrite it."""
        return str(Checkpoint(**self.status(agent_id)["head"]))

    def verify(
        self, agent_id: str, checkpoint: str | None = None, *, public_key: Any = None
    ) -> Verification:
        """Check the agent's whole chain: Lineage's ``/verify`` answer.

        Signatures are checked under ``public_key``, else the store's pinned key, else the key
        the ledger names; ``checkpoint`` (``seq:hash``) must be a record of the chain, which
        catches a ledger cut short behind it. So must the newest head the store's witness saw.
        """
        point = None
        if checkpoint is not None:
            try:
                point = Checkpoint.parse(checkpoint)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        with self.store.transaction(write=False) as tx:
            self._exists(tx, agent_id)
        trusted = public_key_hex(public_key) if public_key is not None else None
        check = ChainCheck(trusted or self.store.trusted_key, point)
        witness = self.store.witness
        if witness is not None:
            witness.refresh()
        seen = None if witness is None else witness.heads.get(agent_id)
        last = None
        failure: VerifyFailure | None
        for record in self.store.iter_records(agent_id):
            problem = check.check(record)
            if problem is None and seen and record.seq == seen.seq and record.hash != seen.hash:
                reason = f"its witness saw another hash ({seen.hash}) at seq {seen.seq}"
                failure = {"line": check.count, "seq": seen.seq, "reason": reason}
                return {"ok": False, "records": check.count, "failure": failure}
            if problem is not None:
                return {
                    "ok": False,
                    "records": check.count + 1,
                    "failure": check.failure(record, problem),
                }
            last = record
        failure = check.finish()
        if failure is None and last is not None and seen is not None and seen.seq > last.seq:
            failure = {
                "line": check.count,
                "seq": last.seq,
                "reason": f"its witness saw seq {seen.seq} (hash {seen.hash}) beyond the log's "
                f"last record {last.seq}: records were cut off",
            }
        if failure is not None or last is None:
            return {
                "ok": False,
                "records": check.count,
                "failure": failure or {"line": 0, "seq": None, "reason": "empty log"},
            }
        head: Head = {"seq": last.seq, "hash": last.hash}
        return {"ok": True, "records": check.count, "public_key": check.public_key, "head": head}

    # -- backend role (guardkit) ---------------------------------------------------------------

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
        """What a bank or deploy system checks before acting: succeeds once per allowed action.

        The action must be allowed (or completed), for this ``tool``, with a recorded input equal
        to ``input`` field for field (and, if given, the same ``cost``). The consumption is a
        ledger record (``action_consumed``, guardkit's), so it can't be undone by deleting a row.
        """
        number = _action_number(action_id)
        _check_text(by, "by")
        input_json = self._input_json({} if input is None else input)
        declared = limits.check_cost(cost)
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            row = tx.get_action(agent_id, number)
            if row is None:
                raise UnknownAction(f"unknown action {action_id!r}")
            if row.status not in (_ALLOWED, _COMPLETED):
                raise InvalidState(f"action {action_id} is {row.status}, not allowed")
            if row.tool != tool:
                raise ConsumeMismatch(f"action {action_id} is for tool {row.tool!r}, not {tool!r}")
            if row.input_json != input_json:
                raise ConsumeMismatch(f"input differs from what action {action_id} recorded")
            if declared is not None and declared != row.cost:
                raise ConsumeMismatch(f"cost {declared} differs from the recorded {row.cost}")
            if tx.consumed(agent_id, number):
                raise AlreadyConsumed(f"action {action_id} was already consumed")
            tx.append(
                state, "action_consumed", {"action_id": action_id, "by": by}, now, action=number
            )
            return ConsumedAction(**row.to_dict(), consumed=True)

    # -- opening -------------------------------------------------------------------------------

    def check_ledgers(self) -> dict[str, str]:
        """Verify every agent's ledger on open; quarantine the ones that fail.

        Raises ``StoreError`` at once when the pinned key signed none of the ledgers (the wrong
        key was given). Repairs a missing termination record as Lineage does (by
        ``guard (replay)``).
        """
        with self.store.transaction(write=False) as tx:
            agent_ids = tx.agent_ids()
            keys = {tx.public_key(agent_id) for agent_id in agent_ids}
            orphans = tx.ledger_ids() - set(agent_ids)
        self._check_pinned_key(keys)
        for agent_id in sorted(orphans):
            self.store.quarantine(
                agent_id,
                f"the ledger of {agent_id!r} has no row in the agents table: it was deleted or "
                "renamed behind the guard's back",
            )
        witness = self.store.witness
        for agent_id in sorted(set(witness.heads) - set(agent_ids) - orphans if witness else ()):
            seen = witness.heads[agent_id]  # type: ignore[union-attr]
            self.store.quarantine(
                agent_id,
                f"its witness saw agent {agent_id!r} at seq {seen.seq} with hash {seen.hash}, "
                "but the store has no such agent: it was deleted, or an older copy of the "
                "database was restored",
            )
        for agent_id in agent_ids:
            try:
                with self.store.transaction(write=False) as tx:
                    missing = missing_termination(tx.agent(agent_id))
            except (LedgerTampered, NotFound):
                continue
            if missing is not None:
                self._repair(agent_id, missing)
        self.store.catch_up_witness()
        return dict(self.quarantined)

    def _check_pinned_key(self, keys: set[str | None]) -> None:
        trusted = self.store.trusted_key
        if trusted is None or not keys or trusted in keys:
            return
        found = ", ".join(sorted(fingerprint(k) for k in keys))
        raise StoreError(
            f"store {self.store.location}: its ledgers are signed by {found}, but this guard "
            f"trusts key {fingerprint(trusted)} (its signing key or public_key=), which signed "
            "none of them: open the store with the key that signed them (a server's "
            "keys/audit.key), or they were re-signed by someone else"
        )

    def _repair(self, agent_id: str, missing: str) -> None:
        try:
            with self.store.transaction() as tx:
                state = tx.agent(agent_id)
                if missing_termination(state) is not None:
                    self._terminate(tx, state, missing, "guard (replay)", self.clock())
        except LedgerTampered:
            return
        except StoreError as exc:  # a read-only file, or a signed ledger opened without its key
            self.store.quarantine(
                agent_id,
                f"ledger of {agent_id!r} needs a termination record: {missing} "
                f"(not repaired: {exc.message})",
            )

    # -- helpers -------------------------------------------------------------------------------

    def _agent(self, tx: Transaction, agent_id: str) -> AgentState:
        if not isinstance(agent_id, str):
            raise InvalidInput("agent ids are strings")
        return tx.agent(agent_id)

    @staticmethod
    def _exists(tx: Transaction, agent_id: str) -> None:
        """Reads of the ledger itself work for a quarantined agent too."""
        if not isinstance(agent_id, str) or not tx.agent_exists(agent_id):
            raise NotFound(f"unknown agent {agent_id!r}")
