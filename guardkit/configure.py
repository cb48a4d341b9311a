"""Configure the guard from the environment: the one documented way for code you did not wire up.

Guarded call sites that get no agent explicitly (``@guardkit.tool()`` without ``guard=``,
``guardkit.model_turn()``, code ``guardkit fix`` inserted) ask ``guardkit.current_agent()``. When
nothing was set with ``use_agent``, it reads:

``GUARDKIT_AGENT``
    the agent id (nothing is configured without it);
``GUARDKIT_URL`` and ``GUARDKIT_TOKEN``
    a guard server and the agent's token: an ``AgentClient``;
``GUARDKIT_DB``
    otherwise, the embedded guard's ledger (default ``guardkit.db``, as the CLI);
``GUARDKIT_POLICY``
    a JSON or TOML policy file: the agent is created with it on first use if it does not exist
    yet (an existing agent must have the same policy).

::

    export GUARDKIT_AGENT=support-bot GUARDKIT_DB=guardkit.db GUARDKIT_POLICY=guardkit-policy.toml
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from guardkit.errors import GuardError, GuardFailed, NoAgentConfigured, PolicyError, StoreError
from guardkit.protocols import AgentGuard

__all__ = ["agent_from_environment"]

DEFAULT_DB = "guardkit.db"


def agent_from_environment(environ: Mapping[str, str] = os.environ) -> AgentGuard | None:
    """The agent guard the environment describes, or None when ``GUARDKIT_AGENT`` is unset.

    A configuration that can't work (a URL without a token, an unknown agent with no policy, a
    policy file that does not load) raises ``NoAgentConfigured`` saying what to fix, naming the
    variable; a ledger that can't be opened raises ``GuardFailed`` naming the path and the OS
    error. Both are ``GuardStop``: an agent's ``except Exception`` does not swallow them.
    """
    agent_id = environ.get("GUARDKIT_AGENT", "").strip()
    if not agent_id:
        return None
    url = environ.get("GUARDKIT_URL", "").strip()
    if url:
        token = environ.get("GUARDKIT_TOKEN", "").strip()
        if not token:
            raise NoAgentConfigured.for_site(
                "call site", "GUARDKIT_URL is set but GUARDKIT_TOKEN, the agent's token, is not"
            )
        try:
            from guardkit.client import AgentClient
        except ImportError as exc:
            raise NoAgentConfigured(
                f"GUARDKIT_URL={url} names a guard server, and talking to one needs httpx: "
                "pip install 'guardkit[client]'; nothing was run"
            ) from exc

        return AgentClient(url, agent_id, token)
    from guardkit.local import Guard

    db = environ.get("GUARDKIT_DB", "").strip() or DEFAULT_DB
    policy = environ.get("GUARDKIT_POLICY", "").strip()
    where = f"GUARDKIT_DB={db}" if environ.get("GUARDKIT_DB", "").strip() else f"{db} (the default)"
    try:
        guard = Guard(db)
    except StoreError as exc:
        raise _unusable(where, exc) from exc
    try:
        if policy:
            guard.create_agent(agent_id, policy, exist_ok=True)
        return guard.agent(agent_id)
    except PolicyError as exc:
        guard.close()
        raise NoAgentConfigured(
            f"the policy file {policy} that GUARDKIT_POLICY names is not a valid policy, so "
            f"nothing was run: {exc.message}. Fix the file, or point GUARDKIT_POLICY at another"
        ) from exc
    except StoreError as exc:
        guard.close()
        raise _unusable(where, exc) from exc
    except GuardError as exc:
        guard.close()
        hint = "; set GUARDKIT_POLICY to create it" if not policy else ""
        raise NoAgentConfigured.for_site(
            "call site", f"GUARDKIT_AGENT={agent_id} in {db}: {exc.message}{hint}"
        ) from exc


def _unusable(where: str, exc: StoreError) -> GuardFailed:
    """The ledger the environment names can't be opened or read: the agent must stop."""
    return GuardFailed(
        f"the guard's ledger {where} could not be opened, so nothing was run and the agent must "
        f"stop: {exc.message}. Point GUARDKIT_DB at a file that can be created or written",
        status=exc.status,
        code=exc.code,
    )
