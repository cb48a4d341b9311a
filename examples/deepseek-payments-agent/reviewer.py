"""The fraud reviewer and the approval router: hard rules, then a model that can only tighten.

Every ``pay_invoice`` waits for approval. The router, a thread holding the operator ``Guard``,
polls the pending queue and for each payment:

1. applies hard rules from the systems of record: the invoice exists, is not already paid, the
   amount matches, and the IBAN is the vendor master's. Any hard-rule failure rejects the payment
   with a ``moderate`` scar: asking was itself a red flag. Provenance (``guardkit.provenance``):
   an IBAN that occurs in no trusted tool result (only in an email, or nowhere) is escalated to a
   person, never approved by software.
2. asks an optional model reviewer for a JSON verdict (``approve``/``escalate``/``reject``, risk,
   reasons). It can only make the decision stricter; unreadable output counts as ``escalate``.
3. approves as ``fraud-reviewer`` (the verdict is the signed note) up to the auto limit, and asks
   a human above it or when the model escalates.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from books import Books

from guardkit import Guard, GuardError
from guardkit.provenance import Provenance

_STRICTNESS = {"approve": 0, "escalate": 1, "reject": 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    decision: str
    risk: int
    reasons: tuple[str, ...]

    def note(self) -> str:
        return json.dumps({"decision": self.decision, "risk": self.risk, "reasons": self.reasons})


def hard_rules(books: Books, args: dict[str, Any]) -> list[str]:
    """Every way the payment contradicts the systems of record; ``[]`` if none."""
    invoice = books.invoices.get(str(args.get("invoice_id")))
    if invoice is None:
        return [f"invoice {args.get('invoice_id')!r} does not exist in the ledger"]
    problems = []
    if invoice.invoice_id in books.paid:
        problems.append(f"{invoice.invoice_id} is already paid")
    if abs(float(args.get("amount", 0)) - invoice.amount) > 0.005:
        problems.append(f"amount {args.get('amount')} differs from the invoice's {invoice.amount}")
    vendor = books.vendors[invoice.vendor_id]
    iban = str(args.get("iban", ""))
    if iban != vendor.iban:
        problems.append(f"IBAN {iban} is not {vendor.name}'s IBAN in the vendor master")
    return problems


def provenance_rule(provenance: Provenance, iban: str) -> str | None:
    """Why the IBAN's provenance is not good enough for software to approve, or ``None``.

    The tools record their results in ``provenance``: the vendor master and the ledger as
    trusted, the inbox as untrusted. An IBAN that occurs in no trusted source (only in an email,
    or nowhere: the model made it up) needs a person.
    """
    if provenance.trusted(iban):
        return None
    return f"provenance: IBAN {iban} is in no trusted source ({', '.join(provenance.labels(iban))})"


def read_verdict(text: str) -> Verdict:
    """A model's JSON verdict; anything unreadable is ``escalate`` (never fails open)."""
    try:
        data = json.loads(text)
        decision = str(data["decision"])
        risk = int(data["risk"])
        reasons = tuple(str(r) for r in data.get("reasons", ()))
        if decision not in _STRICTNESS or not 0 <= risk <= 100:
            raise ValueError(decision)
    except (ValueError, KeyError, TypeError):
        return Verdict(decision="escalate", risk=100, reasons=("unreadable reviewer output",))
    return Verdict(decision=decision, risk=risk, reasons=reasons)


#: The model reviewer: the pending action in, JSON text out.
ModelReviewer = Callable[[dict[str, Any]], str]
#: The human: the pending action and the reviewer's verdict in, approve (True) or not out.
Human = Callable[[dict[str, Any], Verdict], bool]


@dataclass(slots=True)
class Reviewer:
    books: Books
    model: ModelReviewer | None = None
    provenance: Provenance | None = None

    def review(self, action: dict[str, Any]) -> Verdict:
        args = action["input"]
        problems = hard_rules(self.books, args)
        origin = None if self.provenance is None else provenance_rule(self.provenance, args["iban"])
        if problems:
            return Verdict(
                decision="reject", risk=100, reasons=(*problems, *filter(None, [origin]))
            )
        verdict = Verdict(decision="approve", risk=0, reasons=("hard rules pass",))
        if origin is not None:
            verdict = Verdict(decision="escalate", risk=80, reasons=(origin,))
        if self.model is None:
            return verdict
        try:
            opinion = read_verdict(self.model(action))
        except Exception as exc:  # noqa: BLE001 - a failing reviewer model escalates, never approves
            opinion = Verdict(decision="escalate", risk=100, reasons=(f"reviewer failed: {exc}",))
        # The model can only make the decision stricter; it never overturns a hard-rule rejection
        # (returned above) or a provenance escalation.
        return max(opinion, verdict, key=lambda v: _STRICTNESS[v.decision])


@dataclass(slots=True)
class ApprovalRouter:
    """A thread that decides every pending ``pay_invoice`` of one agent."""

    guard: Guard
    agent_id: str
    reviewer: Reviewer
    human: Human
    #: EUR; above it a human decides even when the reviewer approves.
    auto_limit: float = 5000.0
    poll: float = 0.02
    decisions: list[tuple[str, str, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> ApprovalRouter:
        self._thread = threading.Thread(target=self._loop, name="approval-router", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            for item in self.guard.pending(self.agent_id):
                action = item["action"]
                try:
                    self.decide(action)
                except Exception as exc:  # noqa: BLE001 - the router fails closed, and keeps going
                    self._fail_closed(str(action["action_id"]), f"{type(exc).__name__}: {exc}")

    def _fail_closed(self, action_id: str, detail: str) -> None:
        try:
            self.guard.reject(
                self.agent_id, action_id, "approval-router", f"review failed: {detail}"
            )
            self.decisions.append((action_id, "rejected", "approval-router"))
        except GuardError as exc:
            self.decisions.append((action_id, "skipped", exc.code))

    def decide(self, action: dict[str, Any]) -> None:
        action_id = str(action["action_id"])
        verdict = self.reviewer.review(action)
        try:
            if verdict.decision == "reject":
                reason = "; ".join(verdict.reasons)
                self.guard.reject(self.agent_id, action_id, "fraud-reviewer", reason, "moderate")
                self.decisions.append((action_id, "rejected", reason))
            elif verdict.decision == "approve" and action["input"]["amount"] <= self.auto_limit:
                self.guard.approve(self.agent_id, action_id, "fraud-reviewer", verdict.note())
                self.decisions.append((action_id, "approved", "fraud-reviewer"))
            elif self.human(action, verdict):
                self.guard.approve(self.agent_id, action_id, "human", verdict.note())
                self.decisions.append((action_id, "approved", "human"))
            else:
                self.guard.reject(self.agent_id, action_id, "human", "declined by a person")
                self.decisions.append((action_id, "rejected", "human"))
        except GuardError as exc:  # decided meanwhile, or the agent died: nothing left to do
            self.decisions.append((action_id, "skipped", exc.code))
