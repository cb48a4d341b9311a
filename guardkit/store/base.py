"""The store contract: an append-only, hash-chained ledger per agent, and what it proves.

Nothing the guard decides on is read from a table and trusted. An agent's state is the fold of
its ledger (``guardkit.store.fold``): replayed and checked against the chain when a process
first needs the agent, then kept current by folding each record as it is appended, by this
process or (checked record by record) by another one. That state holds every action's status,
so approve, reject, report and consume decide on verified facts alone. An action's content (its
tool, input and cost, who approved it, why it was denied) is read from its records, each checked
(hash, signature, actor, the action it names, agreement with the status) where it is used. A
check that fails quarantines the agent (``LedgerTampered``) while the others keep working.

Backends implement a handful of primitives on a transaction (the head of a ledger, its records
after a seq, writing records, agent rows, meta and idempotency rows); this module does the rest
once.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Literal

from guardkit._canonical import canonical_json
from guardkit.errors import LedgerTampered, NotFound, StoreError
from guardkit.protocols import IdemRecord
from guardkit.store.actions import read_action
from guardkit.store.chain import (
    Record,
    Signer,
    fingerprint,
    parse_timestamp,
    public_key_hex,
    record_hash,
    stamp,
)
from guardkit.store.fold import AGENT_HANDLERS, LedgerInvalid, apply_action
from guardkit.store.outbox import EVENT_KINDS, OutboxEvent, build_event
from guardkit.store.replay import Replay, record_action
from guardkit.store.seals import Seals
from guardkit.store.state import (
    CONSUMED,
    ActionRow,
    AgentState,
)
from guardkit.store.witness import Entry, Head, Witness
from guardkit.store.witness_spec import witness_for

__all__ = ["ActionRow", "AgentState", "Store", "Transaction"]

_BATCH = 5000
#: A named tuple made without its generated ``__new__`` (a Python call per record otherwise).
_new_record: Any = tuple.__new__


class Store(abc.ABC):
    """A durable ledger, and the verified state of every agent this process has seen."""

    #: A human-readable location (path or URL) for messages.
    location: str = ""
    #: Whether a transaction may wait on a disk or the network (async callers then run it in a
    #: worker thread); False only for the in-process memory store.
    blocks: bool = True
    #: Whether transactions on different agents run at once (then agents are locked in-process).
    parallel_writers: bool = False
    _MAX_ACTIONS = 4096

    def __init__(self, signer: Signer | None = None, *, public_key: Any = None) -> None:
        self.signer = signer
        pinned = public_key_hex(public_key) if public_key is not None else None
        if signer is not None and pinned is not None and pinned != signer.public_key:
            raise StoreError(
                f"the signing key's public key is {fingerprint(signer.public_key)}, but "
                f"public_key= pins {fingerprint(pinned)}: pass the matching pair"
            )
        #: The key every signed ledger must be signed with (None: each ledger's own genesis key).
        self.trusted_key: str | None = pinned
        if pinned is None and signer is not None:
            self.trusted_key = signer.public_key
        #: Agents whose ledger failed a check, with the reason.
        self.quarantined: dict[str, str] = {}
        #: Verified state of every agent loaded so far (the committed state, outside a write).
        self.states: dict[str, AgentState] = {}
        #: Recently used action rows, verified.
        self.actions: dict[tuple[str, int], ActionRow] = {}
        self.seals = Seals(signer)
        #: Where every commit's new heads go (``guardkit.store.witness``); None: nowhere.
        self.witness: Witness | None = None
        #: Whether a witness append is made durable before the caller is answered.
        self.sync_witness = True
        #: The witnessed head each agent was last checked against, and the head it was then.
        self.witness_checked: dict[str, tuple[Head, int, str]] = {}
        self._agent_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    @abc.abstractmethod
    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        """Open a transaction; a write transaction holds the writer lock until it ends."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def open_witness(self, tx: Transaction, witness: str | Witness | None) -> None:
        """Attach the witness (a file path, or any ``Witness``) in the store's opening write
        transaction: a file this store had must still be there, and no shorter than it was."""
        if witness is None:
            return
        self.witness = witness if isinstance(witness, Witness) else witness_for(witness, tx)
        try:
            tx.set_meta("witness", self.witness.location)
            tx.set_meta("witness_size", str(self.witness.size))
        except BaseException:
            self.close_witness()
            raise

    def close_witness(self) -> None:
        if self.witness is not None:
            self.witness.close()
            self.witness = None

    def catch_up_witness(self) -> None:
        """Witness the heads a crash left unwitnessed (committed, never answered), and the
        ledgers of a store that had no witness before; called once every agent is verified."""
        witness = self.witness
        if witness is None:
            return
        # Under the writer lock and after a refresh (a write transaction), as every other append:
        # another process committing meanwhile has witnessed its own heads, and no line of
        # ours lands between its write and its next read of the file.
        with self.transaction():
            lagging: list[Entry] = [
                (agent_id, state.head_seq, state.head_hash, None)
                for agent_id, state in self.states.items()
                if agent_id not in self.quarantined
                and ((seen := witness.heads.get(agent_id)) is None or seen.seq < state.head_seq)
            ]
            if lagging:
                witness.append(lagging, sync=True)

    def iter_records(self, agent_id: str, batch: int = _BATCH) -> Iterator[Record]:
        after: int | None = None
        while True:
            with self.transaction(write=False) as tx:
                chunk = tx.records(agent_id, after=after, limit=batch)
            yield from chunk
            if len(chunk) < batch:
                return
            after = chunk[-1].seq

    def quarantine(self, agent_id: str, why: str) -> LedgerTampered:
        """Refuse the agent from now on; returns the error to raise."""
        self.quarantined[agent_id] = why
        self.states.pop(agent_id, None)
        for key in [k for k in self.actions if k[0] == agent_id]:
            del self.actions[key]
        return LedgerTampered(why)

    def keep_action(self, row: ActionRow) -> None:
        self.actions[(row.agent_id, row.number)] = row
        if len(self.actions) > self._MAX_ACTIONS:
            self.trim_actions()

    def trim_actions(self) -> None:
        """Forget the older half of the action rows kept in memory."""
        for key in list(self.actions)[: len(self.actions) - self._MAX_ACTIONS // 2]:
            del self.actions[key]

    def agent_lock(self, agent_id: str) -> threading.Lock:
        with self._locks_lock:
            lock = self._agent_locks.get(agent_id)
            if lock is None:
                lock = self._agent_locks[agent_id] = threading.Lock()
            return lock


class Transaction(abc.ABC):
    """One atomic unit of work; every change is committed together or not at all."""

    __slots__ = (
        "_building",
        "_events",
        "_held",
        "_loaded",
        "_records",
        "_stamp",
        "_touched",
        "_witnessing",
        "changes",
        "done",
        "store",
        "write",
    )

    def __init__(self, store: Store, *, write: bool) -> None:
        self.store = store
        self.write = write
        self._loaded: dict[str, AgentState] = {}
        # Records are buffered and written together just before commit.
        self._records: list[tuple[str, Record, int]] = []
        # Action rows this transaction changed in the store's cache (rare: made when needed).
        self._touched: set[tuple[str, int]] | None = None
        # Agent locks held (stores with parallel writers), and agents being rebuilt: both rare,
        # so made when first needed.
        self._held: list[threading.Lock] | None = None
        self._building: set[str] | None = None
        # Events the records announce (``guardkit.store.outbox``), written with them.
        self._events: list[OutboxEvent] | None = None
        # The heads this transaction wrote, for the witness once it commits.
        self._witnessing: list[Entry] | None = None
        #: Writes so far (group commit uses it to tell a clean failure from a dirty one).
        self.changes = 0
        #: Whether the commit happened (an error after it, from the witness, undoes nothing).
        self.done = False
        # Every record of one operation shares its clock reading; format it once.
        self._stamp: tuple[float, str, float] = (-1.0, "", 0.0)

    # -- agents --------------------------------------------------------------------------------

    def agent(self, agent_id: str) -> AgentState:
        """The agent's verified state (locked in a write transaction); raises ``NotFound``."""
        state = self._loaded.get(agent_id)
        if state is not None:
            return state
        store = self.store
        why = store.quarantined.get(agent_id)
        if why is not None:
            raise LedgerTampered(why)
        if not store.parallel_writers:
            state = store.states.get(agent_id)
            if state is None or not self._fresh(agent_id):
                state = self._current(agent_id, state, self._head(agent_id))
            self._loaded[agent_id] = state
            return state
        # Transactions on different agents run at once: the database locks the agent's row
        # (in ``_head``, for a write) and a lock in this process keeps readers from seeing a
        # write half done; a reader copies the state and lets go at once.
        head = self._head(agent_id)
        lock = store.agent_lock(agent_id)
        lock.acquire()
        if self.write:
            self._held = [*(self._held or ()), lock]
        try:
            state = store.states.get(agent_id)
            if not self.write and head and state and head[0] < state.head_seq:
                # read before a write of this process committed and let go of the lock: a
                # statement of its own now sees that commit (a cut ledger still ends short)
                head = self._head(agent_id)
            state = self._current(agent_id, state, head)
            if not self.write:
                state = state.copy()
        finally:
            if not self.write:
                lock.release()
        self._loaded[agent_id] = state
        return state

    def _current(
        self, agent_id: str, state: AgentState | None, head: tuple[int, str] | None
    ) -> AgentState:
        """The verified state as of ``head`` (the database's newest record of the agent)."""
        if head is None:
            witness = self.store.witness
            seen = None if witness is None else witness.heads.get(agent_id)
            if state is not None or seen is not None:
                raise self.store.quarantine(
                    agent_id, f"the records of agent {agent_id!r} were deleted"
                )
            raise NotFound(f"unknown agent {agent_id!r}")
        try:
            if state is None:
                state = self._rebuild(agent_id)
            elif head != (state.head_seq, state.head_hash):
                self._catch_up(state, head)
            if self.store.witness is not None:
                self._witnessed(state)
        except LedgerInvalid as exc:
            raise self.store.quarantine(agent_id, str(exc)) from None
        self._checked(agent_id)
        self.store.states[agent_id] = state
        return state

    def _witnessed(self, state: AgentState) -> None:
        """Check the verified state against the newest head the witness saw for the agent.

        The witness was read before this transaction's snapshot began (a line is appended only
        after its commit), so what it saw is never newer than what the snapshot holds.
        """
        store, who = self.store, state.agent_id
        witness = store.witness
        assert witness is not None
        seen = witness.heads.get(who)
        if seen is None:
            return
        checked = (seen, state.head_seq, state.head_hash)
        if store.witness_checked.get(who) == checked:
            return
        digest: str | None = state.head_hash
        if seen.seq < state.head_seq:
            rows = self._read_rows(who, seen.seq - 1, 1)
            digest = rows[0][0].hash if rows and rows[0][0].seq == seen.seq else None
        elif seen.seq > state.head_seq:
            raise LedgerInvalid(
                f"the ledger of {who!r} ends at seq {state.head_seq}, but its witness "
                f"{witness.location} saw seq {seen.seq} with hash {seen.hash}: records were cut "
                "off, or an older copy of the database was restored"
            )
        if digest != seen.hash:
            raise LedgerInvalid(
                f"the record at seq {seen.seq} of {who!r} has hash {digest}, but its witness "
                f"{witness.location} saw hash {seen.hash} there: the ledger was rewritten"
            )
        store.witness_checked[who] = checked

    def _rebuild(self, agent_id: str) -> AgentState:
        """Replay the agent's whole ledger and check its row against it."""
        if self._building is None:
            self._building = set()
        if agent_id in self._building:
            raise LedgerInvalid(f"agent {agent_id!r} is its own ancestor")
        self._building.add(agent_id)
        try:
            row = self._agent_row(agent_id)
            if row is None:
                raise NotFound(f"unknown agent {agent_id!r}")
            replay = Replay(agent_id, self.store.trusted_key)
            after: int | None = None
            while True:
                chunk = self._read_rows(agent_id, after, _BATCH)
                for record, requested in chunk:
                    replay.feed(record, requested)
                if len(chunk) < _BATCH:
                    break
                after = chunk[-1][0].seq
            state = replay.finish()
            self._check_row(state, *row)
            return state
        finally:
            self._building.discard(agent_id)

    def _check_row(
        self, state: AgentState, parent_id: str | None, policy: str, public_key: str | None
    ) -> None:
        who = state.agent_id
        if policy != canonical_json(state.policy.to_dict()):
            raise LedgerInvalid(f"the stored policy of {who!r} is not the one its ledger records")
        if public_key != state.public_key:
            raise LedgerInvalid(f"the stored public key of {who!r} is not its genesis key")
        if parent_id is not None:
            try:
                parent = self.agent(parent_id)
            except (NotFound, LedgerTampered) as exc:
                raise LedgerInvalid(f"the parent of {who!r} does not verify: {exc}") from None
            if who not in parent.children:
                raise LedgerInvalid(f"{parent_id!r}'s ledger never spawned {who!r}")
        for child in state.children:
            child_row = self._agent_row(child)
            if child_row is not None and child_row[0] != who:
                # The child's row was edited (a child freed of its parent escapes its cascade):
                # the child is refused, the parent's own ledger is sound.
                self.store.quarantine(
                    child, f"the row of {child!r} does not name {who!r}, whose ledger spawned it"
                )
        state.parent_id = parent_id

    def _catch_up(self, state: AgentState, head: tuple[int, str]) -> None:
        """Fold in the records another process appended since this one last saw the agent."""
        seq, digest = head
        if seq <= state.head_seq:
            raise LedgerInvalid(
                f"the ledger of {state.agent_id!r} now ends at seq {seq} with another hash "
                f"than the seq {state.head_seq} this guard verified: records were cut off or "
                "rewritten"
            )
        replay = Replay(state.agent_id, self.store.trusted_key, state=state)
        for record, requested in self._read_rows(state.agent_id, state.head_seq, None):
            payload = replay.feed(record, requested)
            number = record_action(record.kind, payload)
            if number is not None:
                self._fold_cached(state.agent_id, number, record, payload)
        replay.finish()
        if state.head_seq < seq or (state.head_seq == seq and state.head_hash != digest):
            raise LedgerInvalid(f"the ledger of {state.agent_id!r} changed while it was read")

    def _fold_cached(self, agent_id: str, number: int, record: Record, payload: Any) -> None:
        key = (agent_id, number)
        row = self.store.actions.get(key)
        if row is None and record.kind != "action_requested":
            return
        epoch = parse_timestamp(record.timestamp)
        row = apply_action(row, agent_id, number, record.seq, record.kind, payload, epoch)
        self.store.keep_action(row)

    def create(self, state: AgentState, now: float) -> None:
        """Insert a new agent and write its genesis and policy records."""
        policy = state.policy.to_dict()
        self._insert_agent(
            state.agent_id, state.parent_id, canonical_json(policy), state.public_key
        )
        self._loaded[state.agent_id] = state
        self.store.states[state.agent_id] = state
        self._checked(state.agent_id)
        genesis = {"log_id": state.agent_id, "public_key": state.public_key}
        for kind, text in (("genesis", genesis), ("policy", {"policy": policy})):
            self._records.append(
                (state.agent_id, self._seal(state, kind, canonical_json(text), now), 0)
            )

    def append(
        self,
        state: AgentState,
        kind: str,
        payload: dict[str, Any],
        now: float,
        *,
        payload_json: str | None = None,
        action: int | None = None,
    ) -> Record:
        """Chain a new record onto the agent's ledger and fold it into state (and its action).

        ``payload_json`` is the payload's canonical text when the caller already has it;
        ``action`` the number of the action the record is about (read from the payload if not
        given).
        """
        text = payload_json if payload_json is not None else canonical_json(payload)
        if action is None:
            action = record_action(kind, payload)
        # The action an event is about, read before this record changes the chain's head: a
        # call for approval, a pending action settled (allowed, rejected, denied), a termination.
        announced: dict[str, Any] | Literal[False] | None = False
        if kind in EVENT_KINDS:
            if kind == "terminated":
                announced = None
            elif action is not None:
                waiting = state.open.get(action)
                if waiting is not None and waiting.pending != (kind == "approval_required"):
                    row = self.get_action(state.agent_id, action)
                    announced = None if row is None else dict(row.to_dict())
        # _seal, spelt out: this runs for every record a decision writes.
        signer = None if state.public_key is None else self._signer(state)
        stamped = self._stamp
        if now != stamped[0]:
            stamped = self._stamp = (now, *stamp(now))
        who, seq, prev = state.agent_id, state.head_seq + 1, state.head_hash
        digest = record_hash(seq, stamped[1], who, kind, text, prev)
        record: Record = _new_record(
            Record,
            (seq, stamped[1], who, kind, text, prev, digest, signer and signer.sign(digest)),
        )
        state.head_seq = seq
        state.head_hash = digest
        state.dirty = True
        self.changes += 1
        # fold.apply, spelt out.
        handler = AGENT_HANDLERS.get(kind)
        if handler is None:
            raise LedgerInvalid(f"{kind!r} record at seq {seq}")
        handler(state, seq, payload, stamped[2], action)
        self._records.append((who, record, state.next_action))
        if action is not None and (who, action) in self.store.actions:
            # Action rows are built when an action is read; one already built is kept current.
            self._fold_row(who, action, record, payload, stamped[2])
        if announced is not False:
            event = build_event(record, payload, announced)
            if self._events is None:
                self._events = []
            self._events.append(event)
        return record

    def _fold_row(self, who: str, action: int, record: Record, payload: Any, epoch: float) -> None:
        key = (who, action)
        apply_action(self.store.actions[key], who, action, record.seq, record.kind, payload, epoch)
        if self._touched is None:
            self._touched = set()
        self._touched.add(key)

    def _signer(self, state: AgentState) -> Signer:
        """The signer for a signed ledger's next record: the store's, if it has the key."""
        signer = self.store.signer
        if signer is None or signer.public_key != state.public_key:
            raise StoreError(
                f"agent {state.agent_id!r} has a ledger signed by key "
                f"{fingerprint(state.public_key)}; open the store with that signing key "
                "to append to it"
            )
        return signer

    def _seal(self, state: AgentState, kind: str, text: str, now: float) -> Record:
        """A record of ``kind`` chained onto the agent's head (a new agent's first two)."""
        signer = None if state.public_key is None else self._signer(state)
        if now != self._stamp[0]:
            self._stamp = (now, *stamp(now))
        timestamp, prev, seq = self._stamp[1], state.head_hash, state.head_seq + 1
        digest = record_hash(seq, timestamp, state.agent_id, kind, text, prev)
        signature = None if signer is None else signer.sign(digest)
        record = Record(seq, timestamp, state.agent_id, kind, text, prev, digest, signature)
        state.head_seq = seq
        state.head_hash = digest
        state.dirty = True
        self.changes += 1
        return record

    # -- actions ---------------------------------------------------------------------------------

    def get_action(self, agent_id: str, number: int) -> ActionRow | None:
        """The action as its records say; None if the agent never requested it."""
        state = self.agent(agent_id)
        if not 0 < number < len(state.statuses):
            return None
        row = self.store.actions.get((agent_id, number))
        if row is None:
            try:
                row = read_action(self, state, number)
            except LedgerInvalid as exc:
                raise self.store.quarantine(agent_id, str(exc)) from None
            self.store.keep_action(row)
        return row

    def pending_actions(self, agent_id: str) -> list[ActionRow]:
        """The agent's pending actions, oldest first."""
        state = self.agent(agent_id)
        rows = (self.get_action(agent_id, n) for n, a in sorted(state.open.items()) if a.pending)
        return [row for row in rows if row is not None]

    def consumed(self, agent_id: str, number: int) -> bool:
        """Whether a backend consumed the action: its ledger says so, nothing else does."""
        state = self.agent(agent_id)
        return 0 < number < len(state.statuses) and bool(state.statuses[number] & CONSUMED)

    def records(
        self, agent_id: str, after: int | None = None, limit: int | None = None
    ) -> list[Record]:
        """Committed records of an agent with ``seq > after``, oldest first (as stored)."""
        return [record for record, _ in self._read_rows(agent_id, after, limit)]

    def prefetch(self, agent_ids: list[str]) -> None:  # noqa: B027 - a hint, most stores ignore it
        """The agents a batch of operations will write (group commit): a store may lock them and
        read their heads in one go instead of one by one."""

    def head(self, agent_id: str) -> tuple[int, str] | None:
        """``(seq, hash)`` of the agent's newest stored record; None if there is no such agent."""
        return self._head(agent_id)

    def public_key(self, agent_id: str) -> str | None:
        """The public key the agent's row names (checked against its genesis when loaded)."""
        row = self._agent_row(agent_id)
        return None if row is None else row[2]

    # -- idempotency records (sealed) -----------------------------------------------------------

    def idem_get(self, key: str) -> IdemRecord | None:
        found = self._idem_read(key)
        if found is None:
            return None
        record, mark = found
        problem = self.store.seals.problem(record, mark)
        if problem is not None:
            if record.agent_id is not None:
                raise self.store.quarantine(record.agent_id, problem)
            raise LedgerTampered(problem)
        return record

    def idem_put(self, record: IdemRecord) -> None:
        """Insert or replace the idempotency record for ``record.key``."""
        self.changes += 1
        self._idem_write(record, self.store.seals.seal(record))

    def idem_delete(self, key: str) -> None:
        self.changes += 1
        self._idem_remove(key)

    # -- commit and rollback -------------------------------------------------------------------

    def flush(self) -> None:
        """Write everything this transaction changed (called just before commit)."""
        records = self._records
        if records:
            witness = self.store.witness
            if witness is not None and witness.failed:
                witness.check()  # a broken witness refuses before anything is written
            self._write_records(records)
            if witness is not None:
                who, last, _ = records[-1]
                if len(records) <= 2 and records[0][0] == who:
                    # One agent's one or two records (a request, a report): its last one.
                    self._witnessing = [(who, last.seq, last.hash, last.signature)]
                else:
                    heads = {agent_id: record for agent_id, record, _ in records}
                    self._witnessing = [(a, r.seq, r.hash, r.signature) for a, r in heads.items()]
            self._records = []
        if self._events:
            self._write_events(self._events)
            self._events = None

    def committed(self) -> None:
        """The commit succeeded: the states it changed are now the committed ones."""
        self.done = True
        for state in self._loaded.values():
            state.dirty = False
        if self._held:
            self._release()
        if self._witnessing:
            witness = self.store.witness
            assert witness is not None
            # Written under the writer lock, in commit order; made durable by ``witnessed``.
            witness.append(self._witnessing, sync=False)

    def witnessed(self) -> None:
        """Have this commit's witness lines made durable (``durability="full"``: on the
        witness's thread, see ``guardkit.store.witness``); a backend calls it once the commit is
        durable and its writer lock released, before the caller is answered."""
        if self._witnessing and self.store.sync_witness:
            assert self.store.witness is not None
            self.store.witness.sync_soon()

    def aborted(self) -> None:
        """The transaction rolled back: forget every state and action it changed in memory."""
        store = self.store
        for agent_id, state in self._loaded.items():
            if state.dirty and store.states.get(agent_id) is state:
                del store.states[agent_id]
        for key in self._touched or ():
            store.actions.pop(key, None)
        self._release()

    def _release(self) -> None:
        for lock in self._held or ():
            lock.release()
        self._held = None

    # -- backend primitives --------------------------------------------------------------------

    def _fresh(self, agent_id: str) -> bool:
        """Whether the cached state is known current without asking the database."""
        return False

    def _checked(self, agent_id: str) -> None:  # noqa: B027 - most backends have nothing to note
        """The cached state was just reconciled with the database."""

    @abc.abstractmethod
    def _head(self, agent_id: str) -> tuple[int, str] | None:
        """``(seq, hash)`` of the agent's newest record (a write transaction also locks the
        agent against other writers); None if there is no such agent."""

    @abc.abstractmethod
    def _agent_row(self, agent_id: str) -> tuple[str | None, str, str | None] | None:
        """``(parent_id, policy, public_key)`` of the agent's row, or None."""

    @abc.abstractmethod
    def _insert_agent(
        self, agent_id: str, parent_id: str | None, policy: str, public_key: str | None
    ) -> None:
        """Insert the agent's row; ``AgentExists`` if there is one."""

    @abc.abstractmethod
    def agent_exists(self, agent_id: str) -> bool: ...

    @abc.abstractmethod
    def agent_ids(self) -> list[str]: ...

    @abc.abstractmethod
    def ledger_ids(self) -> set[str]:
        """Every agent id that has records (an agent whose row is gone still has its ledger)."""

    @abc.abstractmethod
    def _read_rows(
        self, agent_id: str, after: int | None, limit: int | None
    ) -> list[tuple[Record, int]]:
        """Records with ``seq > after`` (all if None), oldest first, with their request count."""

    @abc.abstractmethod
    def _requested_at(self, agent_id: str, seq: int) -> int | None:
        """The stored count of requests up to record ``seq`` (None: no such record)."""

    @abc.abstractmethod
    def _write_records(self, records: list[tuple[str, Record, int]]) -> None:
        """Insert ``(agent_id, record, requests counted up to it)`` rows."""

    @abc.abstractmethod
    def _write_events(self, events: list[OutboxEvent]) -> None:
        """Insert outbox rows (``guardkit.store.outbox``), in order."""

    @abc.abstractmethod
    def outbox(self, after: int = 0, limit: int = 100) -> list[tuple[int, str, str, str]]:
        """Committed outbox events ``(seq, id, type, body)`` with ``seq > after``, oldest first."""

    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abc.abstractmethod
    def set_meta(self, key: str, value: str) -> None: ...

    @abc.abstractmethod
    def _idem_read(self, key: str) -> tuple[IdemRecord, str | None] | None: ...

    @abc.abstractmethod
    def _idem_write(self, record: IdemRecord, seal: str) -> None: ...

    @abc.abstractmethod
    def _idem_remove(self, key: str) -> None: ...
