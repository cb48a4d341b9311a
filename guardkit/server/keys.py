"""The server's secrets under the data directory, as Lineage keeps them (``keys/``, mode 0600).

- ``keys/admin.token``: the operator token, unless ``GUARD_ADMIN_TOKEN`` (>= 32 characters) is set.
- ``keys/backend.token``: guardkit's read-and-consume token for tool backends, unless
  ``GUARD_BACKEND_TOKEN`` (>= 32 characters) is set.
- ``keys/audit.key``: the Ed25519 key that signs ledger records, unless one is given; it also
  pins the key every ledger must be signed with (the database cannot rewrite it). Its public
  half is written beside it as ``keys/audit.pub``, to publish and to give ``guardkit verify
  --public-key``.

The HMAC key of the stateless agent tokens is *not* a file: it lives in the store's ``meta``
table (``token_key``), so every server process sharing one database, and the in-process
``Guard`` on the same store, issue and accept the same tokens.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from guardkit.errors import InvalidInput
from guardkit.store.chain import Signer

__all__ = ["MIN_TOKEN_LENGTH", "ServerKeys", "load_keys", "read_or_create"]

MIN_TOKEN_LENGTH = 32


@dataclass(frozen=True, slots=True)
class ServerKeys:
    admin_token: str
    backend_token: str
    signing_key: str
    #: The signing key's public half (hex): the key every ledger must be signed with.
    public_key: str


def read_or_create(path: Path, make: str) -> str:
    """Read a secret file, or create it (mode 0600, exclusively) holding ``make``."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(make + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return make


def _token(given: str | None, path: Path, name: str) -> str:
    if given:
        if len(given) < MIN_TOKEN_LENGTH:
            raise InvalidInput(f"{name} must be at least {MIN_TOKEN_LENGTH} characters")
        return given
    return read_or_create(path, secrets.token_urlsafe(32))


def load_keys(
    data_dir: Path,
    *,
    admin_token: str | None = None,
    backend_token: str | None = None,
    signing_key: str | None = None,
) -> ServerKeys:
    """The server's keys: given values win, then the files under ``data_dir/keys``."""
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    keys = data_dir / "keys"
    admin = _token(admin_token, keys / "admin.token", "the admin token")
    backend = _token(backend_token, keys / "backend.token", "the backend token")
    if signing_key is None:
        signing_key = read_or_create(keys / "audit.key", Signer.generate_hex())
        public = Signer(signing_key).public_key
        read_or_create(keys / "audit.pub", public)
    else:
        if Path(signing_key).is_file():
            signing_key = Path(signing_key).read_text(encoding="utf-8").strip()
        public = Signer(signing_key).public_key
    if secrets.compare_digest(admin.encode(), backend.encode()):
        raise InvalidInput("the backend token must differ from the admin token")
    return ServerKeys(
        admin_token=admin, backend_token=backend, signing_key=signing_key, public_key=public
    )
