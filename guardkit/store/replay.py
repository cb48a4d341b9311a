"""Replaying a ledger: every record checked against the chain, then folded into state.

``Replay`` takes an agent's records one by one (as a store streams them in batches): each must
continue the hash chain, carry a valid signature under the pinned key, name the agent as its
actor, sit under the right action in the store's index, and be a record a guard could have
written at that point. A full replay (from genesis) also tracks every action's status in one
byte, so an outcome without an allow or a second consumption is caught even after the action
left the state's bounded view. A catch-up replay continues a state verified earlier.
"""

from __future__ import annotations

import json
from typing import Any

from guardkit.decisions import VerifyFailure
from guardkit.errors import PolicyError
from guardkit.store.chain import ChainCheck, Checkpoint, Record, parse_timestamp
from guardkit.store.fold import (
    ACTION_KINDS,
    NEXT_STATUS,
    LedgerInvalid,
    action_number,
    apply,
    start,
)
from guardkit.store.state import AgentState

__all__ = ["Replay", "record_action"]

_CODES = {"requested": 1, "pending_approval": 2, "allowed": 3, "denied": 4, "completed": 5}
_NAMES = {code: name for name, code in _CODES.items()}
_CONSUMED = 8


def record_action(kind: str, payload: Any) -> int | None:
    """The action a record is about (what the store indexes it under), or None."""
    return action_number(payload["action_id"]) if kind in ACTION_KINDS else None


class Replay:
    """Verify and fold an agent's ledger, record by record.

    ``Replay(agent_id, trusted_key)`` starts at genesis; ``Replay(..., state=s)`` continues the
    already verified ``s`` (it is updated in place).
    """

    def __init__(
        self,
        agent_id: str,
        trusted_key: str | None,
        *,
        state: AgentState | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.agent_id = agent_id
        self.state = state
        if state is None:
            self.chain = ChainCheck(trusted_key, checkpoint)
            self._statuses: bytearray | None = bytearray(1)
        else:
            head = (state.head_seq, state.head_hash)
            self.chain = ChainCheck(head=head, public_key=state.public_key)
            self._statuses = None
        self._genesis: dict[str, Any] | None = None
        self.failure: VerifyFailure | None = None

    def feed(self, record: Record, action: int | None, *, indexed: bool = True) -> Any:
        """Check and fold ``record`` (indexed under ``action``); returns its parsed payload.

        ``indexed=False`` for records that come with no store index (an exported file).
        """
        problem = self.chain.check(record)
        if problem is not None:
            self.failure = self.chain.failure(record, problem)
            raise LedgerInvalid(
                f"ledger of {self.agent_id!r} failed verification at line "
                f"{self.failure['line']}: {problem}"
            )
        try:
            return self._fold(record, action, indexed)
        except LedgerInvalid as exc:
            raise LedgerInvalid(f"ledger of {self.agent_id!r} does not replay: {exc}") from None
        except PolicyError as exc:
            raise LedgerInvalid(
                f"ledger of {self.agent_id!r} does not replay: its policy does not load: "
                f"{exc.message}"
            ) from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise LedgerInvalid(
                f"ledger of {self.agent_id!r} does not replay: malformed {record.kind} record "
                f"at seq {record.seq} ({type(exc).__name__}: {exc})"
            ) from None

    def _fold(self, record: Record, action: int | None, indexed: bool) -> Any:
        if record.actor != self.agent_id:
            raise LedgerInvalid(f"record {record.seq} is by {record.actor!r}")
        payload = json.loads(record.payload_json)
        if not isinstance(payload, dict):
            raise LedgerInvalid(f"record {record.seq} has no payload object")
        number = record_action(record.kind, payload)
        if indexed and number != action:
            raise LedgerInvalid(f"the store indexes record {record.seq} under act-{action}")
        epoch = parse_timestamp(record.timestamp)
        if record.seq == 0:
            self._genesis = payload
            return payload
        if record.seq == 1:
            if record.kind != "policy" or self._genesis is None:
                raise LedgerInvalid("the second record is not the policy")
            self.state = start(self.agent_id, self._genesis, payload)
        else:
            state = self.state
            if state is None:
                raise LedgerInvalid("records before the policy")
            if number is not None and self._statuses is not None:
                self._track(number, record.kind)
            apply(state, record.seq, record.kind, payload, epoch)
        assert self.state is not None
        self.state.head_seq, self.state.head_hash = record.seq, record.hash
        return payload

    def _track(self, number: int, kind: str) -> None:
        statuses = self._statuses
        assert statuses is not None
        if kind == "action_requested":
            if number != len(statuses):
                raise LedgerInvalid(f"act-{number} requested out of order")
            statuses.append(_CODES["requested"])
            return
        code = statuses[number] if number < len(statuses) else 0
        status = _NAMES.get(code & 7)
        after = NEXT_STATUS.get((status, kind)) if status is not None else None
        consumed = code & _CONSUMED
        if after is None or (kind == "action_consumed" and consumed):
            raise LedgerInvalid(f"{kind} for act-{number}, which is {status or 'unknown'}")
        statuses[number] = _CODES[after] | (_CONSUMED if kind == "action_consumed" else consumed)

    def finish(self) -> AgentState:
        """The replayed state; ``LedgerInvalid`` if the ledger ended too early."""
        failure = self.chain.finish()
        if failure is not None:
            self.failure = failure
            raise LedgerInvalid(
                f"ledger of {self.agent_id!r} failed verification at line {failure['line']}: "
                f"{failure['reason']}"
            )
        if self.state is None:
            raise LedgerInvalid(f"ledger of {self.agent_id!r} has no policy record")
        return self.state
