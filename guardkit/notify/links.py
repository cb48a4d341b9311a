"""Signed one-click links: a capability to decide one pending action, and nothing else.

A notification of a pending approval carries a link to the console's page for that action. The
link holds a token, ``gkl1.<claims>.<mac>``: base64url of the claims' canonical JSON (the agent,
the action, the SHA-256 of its exact input, the expiry in unix seconds, the sink it was sent
to) and of their HMAC-SHA256 under the link key: derived from the ledger's signing key on a
signed store, else ``meta.link_key`` (made on first use), so every server and ``guardkit
notify`` worker on one database mints and accepts the same links. The token is a capability:
whoever holds it may approve or reject that one action with that input, until it expires, once.
It is no operator token and opens nothing else.

- A different input: the claims name the input's hash, checked against the action as the
  ledger says before deciding (an action's input never changes).
- A second time: deciding moves the action out of ``pending_approval`` in the ledger, in the
  transaction that records the decision (under the agent's lock on PostgreSQL), and the record
  names the link (``approved_by`` ends with ``via link <id>``): a replayed link finds the action
  decided, across restarts and servers alike.
- After expiry: the claims' expiry is checked on every use; it is never later than the
  approval's own (``approval_ttl``), and at most ``link_ttl`` after the request.

Tokens are compared in constant time; a link travels in the URL's fragment (``#...&link=``),
which browsers never send to a server, and the console posts it in a JSON body to decide.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from typing import TypedDict

from guardkit._canonical import canonical_json
from guardkit.errors import Forbidden, GuardError
from guardkit.store.base import Store, Transaction
from guardkit.store.outbox import Event

__all__ = ["LinkClaims", "LinkRefused", "claims_for", "link_id", "link_key", "mint", "read"]

_PREFIX = "gkl1"
_DOMAIN = b"guardkit-approval-link-v1:"


class LinkClaims(TypedDict):
    """What a link token vouches for."""

    agent_id: str
    action_id: str
    #: The SHA-256 of the action's canonical input: the only input the link may decide.
    input_sha256: str
    #: Unix seconds after which the link is refused.
    exp: int
    #: The sink the link was sent through: the identity the link gives its user.
    sink: str


class LinkRefused(Forbidden):
    """A link that is not valid for what it was used for; says why."""


def link_key(store: Store) -> bytes:
    """The link HMAC key: on a signed ledger, derived from the signing key (whoever can read or
    write the database but lacks the key cannot mint a link); on an unsigned one, a key in the
    store's meta table, made on first use (rotating it revokes every link sent so far)."""
    if store.signer is not None:
        return store.signer.derive(b"approval-link")
    with store.transaction(write=False) as tx:
        key = tx.get_meta("link_key")
    if key is None:
        with store.transaction() as tx:
            key = tx.get_meta("link_key")
            if key is None:
                key = secrets.token_hex(32)
                tx.set_meta("link_key", key)
    return bytes.fromhex(key)


def claims_for(tx: Transaction, event: Event, sink: str, link_ttl: float) -> LinkClaims | None:
    """The claims of the link ``event`` (an ``approval.pending``) carries to ``sink``: expiring
    ``link_ttl`` seconds after the request, or with the approval if that is sooner. None for
    any other event, or when the action can't be read (the event is then sent without one)."""
    if event["type"] != "approval.pending" or event["action_id"] is None or link_ttl <= 0:
        return None
    agent_id, action_id = event["agent_id"], event["action_id"]
    try:
        row = tx.get_action(agent_id, int(action_id.removeprefix("act-")))
        ttl = None if row is None else tx.agent(agent_id).policy.ttl_for(row.tool)
    except (GuardError, ValueError):
        return None
    if row is None:
        return None
    lasts = link_ttl if ttl is None else min(ttl, link_ttl)
    return {
        "agent_id": agent_id,
        "action_id": action_id,
        "input_sha256": row.input_sha256,
        "exp": int(row.requested_at + lasts),
        "sink": sink,
    }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, claims: bytes) -> bytes:
    return hmac.new(key, _DOMAIN + claims, hashlib.sha256).digest()


def mint(key: bytes, claims: LinkClaims) -> str:
    """The token for ``claims``."""
    body = canonical_json(dict(claims)).encode()
    return f"{_PREFIX}.{_b64(body)}.{_b64(_mac(key, body))}"


def link_id(token: str) -> str:
    """A short public name of a link (the first 12 hex digits of its MAC), for the ledger."""
    return _unb64(token.rpartition(".")[2]).hex()[:12]


def read(key: bytes, token: str, now: float) -> LinkClaims:
    """The claims of a genuine, unexpired ``token``; raises ``LinkRefused`` saying why."""
    prefix, _, rest = token.partition(".")
    body_text, _, mac_text = rest.partition(".")
    try:
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (binascii.Error, ValueError):
        body, mac = b"", b""
    if prefix != _PREFIX or not body or not hmac.compare_digest(mac, _mac(key, body)):
        raise LinkRefused("this approval link is not genuine (altered, or from another guard)")
    claims: LinkClaims = json.loads(body)
    if now >= claims["exp"]:
        raise LinkRefused(
            f"this approval link for {claims['action_id']} expired; ask an operator, or use "
            "the console with the operator token"
        )
    return claims
