"""``guardkit serve``: the guard server, configured by flags or Lineage's environment variables."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from guardkit.errors import GuardError
from guardkit.notify.config import NotifyConfig, from_options, notify_options
from guardkit.store.chain import fingerprint

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["serve"]


def _default_bind() -> str:
    return os.environ.get("GUARD_BIND") or "127.0.0.1:9200"


@click.command("serve")
@click.option(
    "--bind",
    default=_default_bind,
    show_default="$GUARD_BIND or 127.0.0.1:9200",
    help="HOST:PORT to listen on (port 0 picks a free one).",
)
@click.option(
    "--data-dir",
    envvar="GUARD_DATA_DIR",
    default="./guard-data",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Keys (and the default SQLite store) live here; $GUARD_DATA_DIR.",
)
@click.option(
    "--store",
    "store_url",
    default=None,
    help="sqlite:///PATH (default <data-dir>/guard.db) or postgresql://...",
)
@click.option(
    "--signing-key",
    default=None,
    help="Ed25519 private key (hex) or a file holding it; default "
    "<data-dir>/keys/audit.key, created on first start.",
)
@click.option(
    "--durability",
    type=click.Choice(["full", "normal"]),
    default="full",
    show_default=True,
    help="SQLite: fsync every commit (full) or not (normal).",
)
@click.option(
    "--witness",
    envvar="GUARD_WITNESS",
    default="auto",
    show_default=True,
    help="Where every commit's heads also go, outside the database: auto (<db>.witness beside "
    "a SQLite store), a file path (another disk), postgresql://... (a table of another "
    "database), cmd:PROGRAM ARGS (heads on its stdin), or none; $GUARD_WITNESS.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
@notify_options
def serve(
    bind: str,
    data_dir: Path,
    store_url: str | None,
    signing_key: str | None,
    durability: str,
    witness: str,
    log_level: str,
    **notify: Any,
) -> None:
    """Run the Lineage-compatible guard server (HTTP API and the approvals console).

    The admin token comes from $GUARD_ADMIN_TOKEN (>= 32 characters) or
    <data-dir>/keys/admin.token, created (mode 0600) on first start; the backend token likewise
    from $GUARD_BACKEND_TOKEN or keys/backend.token. Notifications (docs/notifications.md) go
    to $GUARD_NOTIFY_WEBHOOK, signed with $GUARD_NOTIFY_SECRET.
    """
    try:
        from guardkit.server.runner import bind as bind_socket
        from guardkit.server.runner import parse_bind
        from guardkit.server.runner import serve as run
    except ImportError as exc:
        raise click.ClickException(
            f"the server needs its extra: pip install 'guardkit[server]' ({exc})"
        ) from None

    try:
        host, port = parse_bind(bind)
        sock = bind_socket(host, port)  # before touching the data dir: a second instance exits
    except (ValueError, OSError) as exc:
        raise click.ClickException(f"cannot listen on {bind}: {exc}") from None
    url = f"http://{host}:{sock.getsockname()[1]}"
    try:
        config = from_options(notify)
    except ValueError as exc:
        sock.close()
        raise click.UsageError(str(exc)) from None
    logging.basicConfig(level=log_level.upper(), format="%(message)s")
    try:
        app, where = _build(data_dir, store_url, signing_key, durability, witness, config, url)
        state = app.state.guardkit
    except GuardError as exc:
        sock.close()
        raise click.ClickException(exc.message) from None
    except (ValueError, OSError) as exc:
        sock.close()
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"guardkit guard server on {url} (store {where}; data dir {data_dir}; "
        f"ledger key {fingerprint(state.guard.public_key)})"
    )
    admin = (
        "$GUARD_ADMIN_TOKEN"
        if os.environ.get("GUARD_ADMIN_TOKEN")
        else str(data_dir / "keys" / "admin.token")
    )
    click.echo(f"admin token in {admin}: paste it into the approvals console at {url}/")
    if state.notifier is not None:
        sinks = ", ".join(f"{s.name} ({s.target})" for s in state.notifier.sinks)
        click.echo(f"notifications to {sinks}")
    sys.stdout.flush()
    run(app, sock, log_level=log_level, on_exit=state.watch.release)


def _build(
    data_dir: Path,
    store_url: str | None,
    signing_key: str | None,
    durability: str,
    witness: str,
    notify: NotifyConfig,
    public_url: str,
) -> tuple[Starlette, str]:
    from guardkit.server.app import create_app
    from guardkit.server.keys import load_keys
    from guardkit.server.state import ServerState
    from guardkit.store import open_store

    keys = load_keys(
        data_dir,
        admin_token=os.environ.get("GUARD_ADMIN_TOKEN"),
        backend_token=os.environ.get("GUARD_BACKEND_TOKEN"),
        signing_key=signing_key,
    )
    url = store_url or f"sqlite:///{data_dir / 'guard.db'}"
    store = open_store(
        url,
        signing_key=keys.signing_key,
        durability=durability,
        witness=None if witness == "none" else witness,
    )
    state = ServerState.open(store, admin_token=keys.admin_token, backend_token=keys.backend_token)
    if notify.enabled:
        state.notifier = notify.worker(state.store, public_url)
    where = url.split("@")[-1] if url.startswith("postgres") else url
    return create_app(state), where
