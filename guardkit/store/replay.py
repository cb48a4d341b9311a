"""Replaying a ledger: every record checked against the chain, then folded into state.

``Replay`` takes an agent's records one by one (as a store streams them in batches): each must
continue the hash chain, carry a valid signature under the pinned key, name the agent as its
actor, carry the right ``requested`` count (the store's search aid for finding an action's
request), and be a record a guard could have written at that point. A catch-up replay
continues a state verified earlier.
"""

from __future__ import annotations

import json
from typing import Any

from guardkit.decisions import VerifyFailure
from guardkit.errors import PolicyError
from guardkit.store.chain import ChainCheck, Checkpoint, Record, parse_timestamp
from guardkit.store.fold import ACTION_KINDS, LedgerInvalid, action_number, apply, start
from guardkit.store.state import AgentState

__all__ = ["Replay", "record_action"]


def record_action(kind: str, payload: Any) -> int | None:
    """The action a record is about (what the store indexes it under), or None."""
    return action_number(payload["action_id"]) if kind in ACTION_KINDS else None


class Replay:
    """Verify and fold an agent's ledger, record by record.

    ``Replay(agent_id, trusted_key)`` starts at genesis; ``Replay(..., state=s)`` continues the
    already verified ``s`` (it is updated in place). Signatures are checked as ``ChainCheck``
    with ``every_signature`` says: by default the newest one, in ``finish``.
    """

    def __init__(
        self,
        agent_id: str,
        trusted_key: str | None,
        *,
        state: AgentState | None = None,
        checkpoint: Checkpoint | None = None,
        every_signature: bool = False,
    ) -> None:
        self.agent_id = agent_id
        self.state = state
        if state is None:
            self.chain = ChainCheck(trusted_key, checkpoint, every_signature=every_signature)
        else:
            head = (state.head_seq, state.head_hash)
            self.chain = ChainCheck(
                head=head, public_key=state.public_key, every_signature=every_signature
            )
        self._genesis: dict[str, Any] | None = None
        self.failure: VerifyFailure | None = None

    def feed(self, record: Record, requested: int | None) -> Any:
        """Check and fold ``record``, stored with the count ``requested``; returns its payload.

        ``requested=None`` for records that come with no count (an exported file).
        """
        problem = self.chain.check(record)
        if problem is not None:
            self.failure = self.chain.failure(record, problem)
            raise LedgerInvalid(
                f"ledger of {self.agent_id!r} failed verification at line "
                f"{self.failure['line']}: {problem}"
            )
        try:
            return self._fold(record, requested)
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

    def _fold(self, record: Record, requested: int | None) -> Any:
        if record.actor != self.agent_id:
            raise LedgerInvalid(f"record {record.seq} is by {record.actor!r}")
        payload = json.loads(record.payload_json)
        if not isinstance(payload, dict):
            raise LedgerInvalid(f"record {record.seq} has no payload object")
        epoch = parse_timestamp(record.timestamp)
        if record.seq == 0:
            self._genesis = payload
        elif record.seq == 1:
            if record.kind != "policy" or self._genesis is None:
                raise LedgerInvalid("the second record is not the policy")
            self.state = start(self.agent_id, self._genesis, payload)
        elif self.state is None:
            raise LedgerInvalid("records before the policy")
        else:
            number = record_action(record.kind, payload)
            apply(self.state, record.seq, record.kind, payload, epoch, number)
        count = 0 if self.state is None else self.state.next_action
        if requested is not None and requested != count:
            raise LedgerInvalid(f"the store counts {requested} requests at record {record.seq}")
        if self.state is not None:
            self.state.head_seq, self.state.head_hash = record.seq, record.hash
        return payload

    def finish(self) -> AgentState:
        """The replayed state; ``LedgerInvalid`` if the ledger ended too early or its newest
        signature does not verify."""
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
