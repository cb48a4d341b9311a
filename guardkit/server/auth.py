"""Who is calling: the operator (admin), one agent, or a tool backend; compared in constant time.

Every route names the roles it admits (``Access``); a missing or unknown token is 401
``unauthorized``, a valid token of a role the route does not admit (or another agent's token) is
403 ``forbidden``. A signed approval link (``guardkit.notify.links``) is no bearer token: it is
checked by ``TokenBook.link`` for the one action it names, on the link routes only.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from enum import StrEnum

from guardkit._tokens import agent_token
from guardkit.errors import Forbidden, GuardError
from guardkit.notify.links import LinkClaims, LinkRefused, read

__all__ = ["Access", "Caller", "Role", "TokenBook", "Unauthorized"]

_KEPT_TOKENS = 4096


class Role(StrEnum):
    ADMIN = "admin"
    AGENT = "agent"
    BACKEND = "backend"


class Unauthorized(GuardError):
    """401: no token, or one the server does not know."""

    def __init__(self, message: str = "missing or invalid bearer token") -> None:
        super().__init__(401, "unauthorized", message)


@dataclass(frozen=True, slots=True)
class Caller:
    role: Role
    #: The agent an agent token belongs to; None for the admin and backend roles.
    agent_id: str | None = None


@dataclass(frozen=True, slots=True)
class Access:
    """Which roles a route admits; ``agent`` means the agent named in the path, only."""

    admin: bool = True
    agent: bool = False
    backend: bool = False

    def check(self, caller: Caller, path_agent: str | None) -> None:
        if caller.role is Role.ADMIN and self.admin:
            return
        if caller.role is Role.BACKEND and self.backend:
            return
        if caller.role is Role.AGENT and self.agent and caller.agent_id == path_agent:
            return
        if caller.role is Role.AGENT and self.agent:
            raise Forbidden("an agent token reaches only its own agent")
        raise Forbidden(f"the {caller.role.value} token may not do this")


@dataclass(frozen=True, slots=True)
class TokenBook:
    """The secrets that tokens are checked against."""

    admin_token: str
    backend_token: str
    agent_key: bytes
    #: The key signed approval links are checked with (the store's ``meta.link_key``).
    link_key: bytes
    # Agents' tokens already presented, as bytes, with their (immutable) caller: an HMAC (five
    # Python calls) per request otherwise. Only a token that matched is kept, so unknown ids
    # cannot fill it.
    _agent_tokens: dict[str, tuple[bytes, Caller]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def identify(self, authorization: str | None) -> Caller:
        """The caller behind an ``Authorization: Bearer <token>`` header; raises 401."""
        if not authorization:
            raise Unauthorized()
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("expected 'Authorization: Bearer <token>'")
        given = token.encode()
        if hmac.compare_digest(given, self.admin_token.encode()):
            return Caller(Role.ADMIN)
        if hmac.compare_digest(given, self.backend_token.encode()):
            return Caller(Role.BACKEND)
        if token.startswith("agt_") and "." in token:
            agent_id = token[4:].rpartition(".")[0]
            kept = self._agent_tokens.get(agent_id)
            expected = agent_token(self.agent_key, agent_id).encode() if kept is None else kept[0]
            if hmac.compare_digest(given, expected):
                if kept is None:
                    if len(self._agent_tokens) >= _KEPT_TOKENS:
                        self._agent_tokens.clear()
                    kept = self._agent_tokens[agent_id] = (expected, Caller(Role.AGENT, agent_id))
                return kept[1]
        raise Unauthorized()

    def link(self, token: str, agent_id: str, action_id: str, now: float) -> LinkClaims:
        """The claims of a genuine, unexpired link for this agent's action; raises 403."""
        claims = read(self.link_key, token, now)
        if (claims["agent_id"], claims["action_id"]) != (agent_id, action_id):
            raise LinkRefused(
                f"this approval link is for {claims['agent_id']}'s {claims['action_id']}, "
                f"not {agent_id}'s {action_id}"
            )
        return claims
