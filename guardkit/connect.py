"""Lineage's client setup helpers: find the admin token, check the server, read ``.env`` (§13).

A Lineage script that starts with ``admin = connect_admin()`` runs unchanged against a guardkit
server: the same environment (``GUARD_URL``, default ``http://127.0.0.1:9200``;
``GUARD_ADMIN_TOKEN``; ``GUARD_DATA_DIR``), the same search order for the token, and
``SetupError`` with a sentence saying what to do when something is missing.

Example::

    from guardkit.connect import SetupError, connect_admin

    try:
        admin = connect_admin()
    except SetupError as exc:
        raise SystemExit(str(exc))
    print([a["agent_id"] for a in admin.agents()])
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from guardkit.client import AdminClient
from guardkit.errors import GuardError, SetupError

__all__ = ["DEFAULT_URL", "SetupError", "connect_admin", "find_admin_token", "load_dotenv"]

DEFAULT_URL = "http://127.0.0.1:9200"
_TOKEN_VARIABLE = "GUARD_ADMIN_TOKEN"  # noqa: S105 - the variable's name, not a secret


def _repo_root() -> Path:
    """The repository the script runs in: the nearest directory up with ``.git``, else here."""
    here = Path.cwd()
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return directory
    return here


def _read_dotenv(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key.strip()] = value
    return values


def load_dotenv(path: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Load ``KEY=value`` lines into ``os.environ``, never overriding what is already set.

    ``path`` defaults to ``.env`` at the repository root; a missing file loads nothing. Returns
    the values the file holds.
    """
    file = Path(path) if path is not None else _repo_root() / ".env"
    if not file.is_file():
        return {}
    values = _read_dotenv(file)
    for key, value in values.items():
        os.environ.setdefault(key, value)
    return values


def _token_files() -> list[Path]:
    places = []
    if os.environ.get("GUARD_DATA_DIR"):
        places.append(Path(os.environ["GUARD_DATA_DIR"]))
    places += [_repo_root() / "guard-data", Path("guard-data")]
    return [place / "keys" / "admin.token" for place in places]


def find_admin_token() -> str:
    """The operator token: ``$GUARD_ADMIN_TOKEN``, then ``.env`` at the repository root, then
    ``keys/admin.token`` under ``$GUARD_DATA_DIR``, the repository's ``guard-data/`` or
    ``./guard-data/``. Raises ``SetupError`` naming every place it looked.
    """
    token = os.environ.get(_TOKEN_VARIABLE, "").strip()
    if token:
        return token
    dotenv = _repo_root() / ".env"
    if dotenv.is_file():
        token = _read_dotenv(dotenv).get(_TOKEN_VARIABLE, "").strip()
        if token:
            return token
    files = _token_files()
    for file in files:
        if file.is_file():
            token = file.read_text(encoding="utf-8").strip()
            if token:
                return token
    looked = ", ".join(str(f) for f in dict.fromkeys(files))
    raise SetupError(
        f"no admin token found: {_TOKEN_VARIABLE} is not set, {dotenv} does not set it, and none "
        f"of {looked} exists. Start the guard server once (guardkit serve --data-dir DIR creates "
        f"DIR/keys/admin.token), then set GUARD_DATA_DIR=DIR or {_TOKEN_VARIABLE}."
    )


def connect_admin(url: str | None = None, token: str | None = None) -> AdminClient:
    """An ``AdminClient`` for a server that answers and accepts the token; ``SetupError`` if not.

    Checks ``/healthz``, finds the token (``find_admin_token``) unless given, and lists the agents
    once to prove the token is the admin's.
    """
    base = (url or os.environ.get("GUARD_URL") or DEFAULT_URL).rstrip("/")
    try:
        healthy = httpx.get(f"{base}/healthz", timeout=10).status_code == 200
    except httpx.HTTPError as exc:
        raise SetupError(
            f"no guard server answers at {base} ({type(exc).__name__}): start one with "
            "'guardkit serve' or set GUARD_URL to where it runs"
        ) from None
    if not healthy:
        raise SetupError(f"{base}/healthz did not answer ok: is GUARD_URL a guard server?")
    admin = AdminClient(base, token or find_admin_token())
    try:
        admin.agents()
    except GuardError as exc:
        admin.close()
        if exc.status in (401, 403):
            raise SetupError(
                f"the guard at {base} rejected the admin token: use the server's own "
                f"({_TOKEN_VARIABLE} or <data dir>/keys/admin.token of that server)"
            ) from None
        raise
    return admin
