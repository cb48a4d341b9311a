"""Idempotent tool calls: an IN_PROGRESS/COMPLETED state machine kept in the guard's store.

Semantics follow Stripe's and AWS Powertools' (docs/tools.md compares them), with SHA-256 keys and a
lease we set ourselves. Every transition is one write transaction on the store, which serialises
writers across threads, processes and (with PostgreSQL) hosts:

* no record, an expired COMPLETED record or an IN_PROGRESS record whose lease ran out: take it
  (IN_PROGRESS, our owner id, ``now + lease``) and run the tool;
* a live COMPLETED record with the same payload hash: replay its stored result, run nothing;
* a live IN_PROGRESS record: ``IdempotencyInProgress`` (or poll until it completes, if ``wait``);
* the same key with a different payload hash: ``IdempotencyConflict``.

A failed call deletes its IN_PROGRESS record so it can be retried.
"""

from __future__ import annotations

import json
import time
import typing
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from guardkit._canonical import canonical_json, check_json_value, sha256_hex
from guardkit.errors import IdempotencyConflict, IdempotencyInProgress, InvalidInput
from guardkit.protocols import IdempotencyStore, IdemRecord

__all__ = ["Claim", "IdemStatus", "Idempotency", "Replay"]


_JSON_TYPES = (str, int, float, bool, type(None), dict, list, tuple)


class IdemStatus(StrEnum):
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"


@dataclass(frozen=True, slots=True, kw_only=True)
class Idempotency:
    """Make a tool idempotent on some of its arguments.

    >>> @guardkit.tool(idempotency=Idempotency(key=["invoice_id"], ttl=86400))
    ... def pay_invoice(invoice_id: str, amount_cents: int) -> dict: ...
    """

    #: Argument names whose values make the key, or a function of the bound arguments that
    #: returns any JSON value.
    key: Sequence[str] | Callable[[dict[str, Any]], Any]
    #: Seconds a completed result is replayed; None keeps it forever.
    ttl: float | None = 3600.0
    #: Seconds a call may run before a duplicate may take its key over.
    lease: float = 60.0
    #: Seconds a duplicate waits for a running call to complete; 0 raises at once.
    wait: float = 0.0
    #: Store for the records (``guardkit.store.open_store(...)``); defaults to the agent's own.
    store: IdempotencyStore | None = None
    #: Turn a result into JSON data and back (for results that are not plain JSON).
    serialize: Callable[[Any], Any] | None = None
    deserialize: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.key, str):
            raise TypeError("Idempotency.key is a list of argument names, not one string")
        if not callable(self.key):
            object.__setattr__(self, "key", tuple(self.key))
        if self.lease <= 0 or (self.ttl is not None and self.ttl <= 0) or self.wait < 0:
            raise ValueError("lease and ttl must be > 0, wait >= 0")

    def check_target(self, func: Callable[..., Any]) -> None:
        """Refuse, at decoration, a tool whose declared result can't be stored as JSON."""
        if self.serialize is not None:
            return
        try:
            declared = typing.get_type_hints(func).get("return")
        except Exception:  # noqa: BLE001 - unresolvable hints are checked at the first call
            return
        if (
            isinstance(declared, type)
            and declared not in (Any, object)  # Any is a class on 3.11+
            and not issubclass(declared, _JSON_TYPES)
        ):
            raise TypeError(
                f"an idempotent tool must return JSON data, but {func.__name__} returns "
                f"{declared.__name__}: pass Idempotency(serialize=..., deserialize=...)"
            )

    def derive_key(self, tool: str, arguments: dict[str, Any]) -> str:
        """SHA-256 over the tool name and the chosen argument values (canonical JSON)."""
        if callable(self.key):
            chosen = self.key(arguments)
        else:
            missing = [name for name in self.key if name not in arguments]
            if missing:
                raise TypeError(f"idempotency key names unknown arguments {missing}")
            chosen = {name: arguments[name] for name in self.key}
        problem = check_json_value(chosen, "input")
        if problem is not None:  # the request would refuse it too; nothing is claimed first
            raise InvalidInput(problem)
        return "tool:" + sha256_hex(canonical_json([tool, chosen]))


@dataclass(frozen=True, slots=True, kw_only=True)
class Replay:
    """A completed call's stored result, to return without running anything."""

    value: Any
    action_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """An IN_PROGRESS record this call owns."""

    store: IdempotencyStore
    key: str
    owner: str
    payload_hash: str
    rule: Idempotency

    @classmethod
    def acquire(
        cls,
        store: IdempotencyStore,
        rule: Idempotency,
        key: str,
        payload: Any,
        agent_id: str | None,
    ) -> Claim | Replay:
        """Take the key or replay its result; raises Conflict or InProgress."""
        payload_hash = sha256_hex(canonical_json(payload))
        deadline = time.monotonic() + rule.wait
        while True:
            found = cls._try(store, rule, key, payload_hash, agent_id)
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                raise IdempotencyInProgress(f"a call with idempotency key {key} is still running")
            time.sleep(min(0.05, rule.wait))

    @classmethod
    def _try(
        cls,
        store: IdempotencyStore,
        rule: Idempotency,
        key: str,
        payload_hash: str,
        agent_id: str | None,
    ) -> Claim | Replay | None:
        now = time.time()
        with store.transaction() as tx:
            record = tx.idem_get(key)
            if record is not None and _live(record, now):
                if record.payload_hash != payload_hash:
                    raise IdempotencyConflict(
                        f"idempotency key {key} was used with a different payload"
                    )
                if record.status == IdemStatus.COMPLETED:
                    stored = json.loads(record.result_json or "null")
                    value = rule.deserialize(stored) if rule.deserialize else stored
                    return Replay(value=value, action_id=record.action_id)
                return None
            owner = uuid.uuid4().hex
            tx.idem_put(
                IdemRecord(
                    key=key,
                    status=IdemStatus.IN_PROGRESS.value,
                    payload_hash=payload_hash,
                    owner=owner,
                    lease_expires=now + rule.lease,
                    agent_id=agent_id,
                )
            )
        return cls(store=store, key=key, owner=owner, payload_hash=payload_hash, rule=rule)

    def result_json(self, result: Any) -> str:
        """The JSON text to store; TypeError naming the fix when the result isn't JSON."""
        data = self.rule.serialize(result) if self.rule.serialize else result
        try:
            return canonical_json(data)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"an idempotent tool returned a {type(result).__name__}, which can't be stored "
                f"as JSON ({exc}); return JSON data or pass Idempotency(serialize=..., "
                "deserialize=...)"
            ) from exc

    def complete(self, result_json: str, action_id: str | None) -> None:
        """Store the result, unless our lease was lost to another caller."""
        now = time.time()
        with self.store.transaction() as tx:
            record = tx.idem_get(self.key)
            if record is None or record.owner != self.owner:
                return
            expires = None if self.rule.ttl is None else now + self.rule.ttl
            tx.idem_put(
                IdemRecord(
                    key=self.key,
                    status=IdemStatus.COMPLETED.value,
                    payload_hash=self.payload_hash,
                    owner=self.owner,
                    lease_expires=now,
                    expires_at=expires,
                    result_json=result_json,
                    action_id=action_id,
                    agent_id=record.agent_id,
                )
            )

    def release(self) -> None:
        """Delete our IN_PROGRESS record (the call failed or was denied) so it can be retried."""
        with self.store.transaction() as tx:
            record = tx.idem_get(self.key)
            if record is not None and record.owner == self.owner:
                tx.idem_delete(self.key)


def _live(record: IdemRecord, now: float) -> bool:
    if record.status == IdemStatus.COMPLETED:
        return record.expires_at is None or record.expires_at > now
    return record.lease_expires > now
