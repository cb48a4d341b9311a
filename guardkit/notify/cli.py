"""``guardkit notify``: the delivery worker on its own, beside an embedded guard."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

import click

from guardkit.errors import GuardError
from guardkit.notify.config import from_options, notify_options

__all__ = ["notify"]


@click.command("notify")
@click.option(
    "--store",
    "store_url",
    envvar="GUARDKIT_DB",
    required=True,
    help="The guard's store: a SQLite path, sqlite:///PATH or postgresql://...; env GUARDKIT_DB.",
)
@click.option(
    "--signing-key",
    envvar="GUARDKIT_SIGNING_KEY",
    default=None,
    help="The ledger's Ed25519 signing key (hex, or a file holding it), as the guard has it: on "
    "a signed ledger the approval links' key derives from it; env GUARDKIT_SIGNING_KEY.",
)
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit.")
@notify_options
def notify(store_url: str, signing_key: str | None, once: bool, **options: Any) -> None:
    """Deliver the store's notifications (the same worker as ``guardkit serve`` runs).

    Runs until SIGINT or SIGTERM; a delivery interrupted by a crash is sent again (same event
    id) after its lease.
    """
    from guardkit.store import open_store

    try:
        config = from_options(options)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if not config.enabled:
        raise click.UsageError(
            "no sink: set GUARD_NOTIFY_WEBHOOK and GUARD_NOTIFY_SECRET (or --notify-webhook, "
            "--notify-slack, --notify-command)"
        )
    if signing_key is not None and Path(signing_key).is_file():
        signing_key = Path(signing_key).read_text(encoding="utf-8").strip()
    try:
        store = open_store(store_url, signing_key=signing_key)
    except GuardError as exc:
        raise click.ClickException(exc.message) from None
    try:
        worker = config.worker(store, None)
    except GuardError as exc:
        store.close()
        raise click.ClickException(exc.message) from None
    try:
        if once:
            for sink in worker.sinks:
                while worker.deliver_due(sink):
                    pass
            return
        stopping = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stopping.set())
        worker.start()
        click.echo(
            f"delivering notifications of {store.location} to "
            + ", ".join(f"{s.name} ({s.target})" for s in worker.sinks)
        )
        stopping.wait()
    except GuardError as exc:
        raise click.ClickException(exc.message) from None
    finally:
        worker.stop()
        store.close()
