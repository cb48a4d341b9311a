"""The bank: pays only an action it can verify with the guard's backend role, once.

The clerk's ``pay_invoice`` tool sends the bank the guard's ``action_id`` with the payment. The
bank asks the guard (``Guard.consume``) whether that action is allowed, is a ``pay_invoice``, was
recorded with exactly this invoice, IBAN and amount (and the amount in cents as its cost), and was
never used before. Anything else is refused and nothing moves: a made-up id, a pending or
rejected action, an action for another tool, an edited amount/IBAN/invoice, a replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from books import Books

from guardkit import Guard, GuardError


def cents(amount: float) -> int:
    """EUR to cents, refusing sub-cent amounts and anything not positive."""
    value = round(amount * 100)
    if value <= 0 or abs(value - amount * 100) > 1e-6:
        raise ValueError(f"amount must be a positive number of cents, got {amount!r}")
    return value


class BankRefused(Exception):
    """The bank would not move money; ``code`` is the guard's reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"bank refused ({code}): {message}")
        self.code = code


@dataclass(frozen=True, slots=True, kw_only=True)
class Payment:
    action_id: str
    invoice_id: str
    iban: str
    amount: float


@dataclass(slots=True)
class Bank:
    guard: Guard
    agent_id: str
    books: Books
    payments: list[Payment] = field(default_factory=list)
    refusals: list[tuple[str | None, str]] = field(default_factory=list)

    def pay(self, action_id: str | None, invoice_id: str, iban: str, amount: float) -> Payment:
        """Verify the action with the guard, then pay; raises ``BankRefused`` otherwise."""
        request: dict[str, Any] = {"invoice_id": invoice_id, "iban": iban, "amount": amount}
        try:
            if action_id is None:
                raise BankRefused("no_action", "a payment must carry the guard's action id")
            self.guard.consume(self.agent_id, action_id, "pay_invoice", request, cents(amount))
        except GuardError as exc:
            self.refusals.append((action_id, exc.code))
            raise BankRefused(exc.code, exc.message) from exc
        except BankRefused as exc:
            self.refusals.append((action_id, exc.code))
            raise
        if not self.books.mark_paid(invoice_id):
            self.refusals.append((action_id, "already_paid"))
            raise BankRefused("already_paid", f"{invoice_id} is already paid")
        payment = Payment(action_id=action_id, invoice_id=invoice_id, iban=iban, amount=amount)
        self.payments.append(payment)
        return payment
