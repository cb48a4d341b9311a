"""Lineage's stateless agent tokens: an HMAC of the agent id under a key kept in the store."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from guardkit.store import Store

__all__ = ["agent_token", "token_key"]

_TOKEN_DOMAIN = b"lineage-guard-agent-token:"


def token_key(store: Store) -> bytes:
    """The agent-token HMAC key in the store's meta table, made on first use.

    Every process on one database (servers and in-process ``Guard``s) issues and accepts the
    same tokens; rotating the key revokes them all.
    """
    with store.transaction(write=False) as tx:
        key = tx.get_meta("token_key")
    if key is None:
        with store.transaction() as tx:
            key = tx.get_meta("token_key")
            if key is None:
                key = secrets.token_hex(32)
                tx.set_meta("token_key", key)
    return bytes.fromhex(key)


def agent_token(key: bytes, agent_id: str) -> str:
    """``agt_<id>.<hex HMAC-SHA256>``, as Lineage's server issues them."""
    mac = hmac.new(key, _TOKEN_DOMAIN + agent_id.encode(), hashlib.sha256).hexdigest()
    return f"agt_{agent_id}.{mac}"
