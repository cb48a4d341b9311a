"""Signing a webhook body: ``Guardkit-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>``.

The MAC covers ``"<t>.<body>"`` (the timestamp, a dot, the exact body bytes), as Stripe's and
GitHub's webhooks do: a receiver checks it with ``hmac.compare_digest`` and refuses a timestamp
too far from its clock, so a captured request can't be replayed later (docs/notifications.md).
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["HEADER", "sign", "signature_header", "verify"]

#: The header carrying the signature.
HEADER = "Guardkit-Signature"


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>.<body>"`` under ``secret``."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Guardkit-Signature`` value for ``body`` sent at ``timestamp``.

    >>> signature_header("s", 1, b"{}")[:7]
    't=1,v1='
    """
    return f"t={timestamp},v1={sign(secret, timestamp, body)}"


def verify(secret: str, header: str, body: bytes, *, now: float, tolerance: float = 300) -> bool:
    """Whether ``header`` signs ``body`` under ``secret``, sent within ``tolerance`` seconds."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    stamp = fields.get("t", "")
    if not stamp.isdigit() or abs(now - int(stamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, int(stamp), body), fields.get("v1", ""))
