"""``guardkit mcp accept``: an operator reviews what an upstream changed in its tools, and pins it.

::

    guardkit mcp accept --agent files-bot --dry-run          # show every change waiting
    guardkit mcp accept --agent files-bot read_file --by alice

The proxy held each of these tools since the change (``--on-change``); once accepted, the next
``tools/list`` shows the new version and its calls go through as before. Each accept is recorded
in the agent's ledger (``--db``, or ``--guard URL --token``; ``pin_records``) before the pin file
is written: a ledger that can't take the record leaves every pin as it was.
"""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from guardkit.protocols import AgentGuard

    from .pins import Accepted, PinFile

__all__ = ["accept"]


@click.command()
@click.argument("tools", nargs=-1)
@click.option(
    "--agent",
    "agent_id",
    envvar="GUARDKIT_AGENT",
    default=None,
    help="The proxy's agent (default: the only one the pin file holds); env GUARDKIT_AGENT.",
)
@click.option("--server-name", default=None, help="The proxy's --server-name, if it was given one.")
@click.option(
    "--pins",
    "pins_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The pin file (default: the one beside --db).",
)
@click.option(
    "--db",
    envvar="GUARDKIT_DB",
    default="guardkit.db",
    show_default=True,
    help="The proxy's embedded ledger, beside which its pin file is; env GUARDKIT_DB.",
)
@click.option(
    "--guard",
    "guard_url",
    envvar="GUARDKIT_URL",
    default=None,
    help="The proxy's guard server, when it ran with --guard; env GUARDKIT_URL.",
)
@click.option(
    "--token",
    envvar="GUARDKIT_TOKEN",
    default=None,
    help="A token of the agent for --guard; env GUARDKIT_TOKEN.",
)
@click.option(
    "--no-ledger",
    is_flag=True,
    help="Pin without recording the accept in a ledger (a proxy whose ledger was in memory).",
)
@click.option("--by", default=None, help="Who reviewed the change (default: your login name).")
@click.option("--dry-run", is_flag=True, help="Show what changed; pin nothing.")
def accept(
    tools: tuple[str, ...],
    agent_id: str | None,
    server_name: str | None,
    pins_path: Path | None,
    db: str,
    guard_url: str | None,
    token: str | None,
    no_ledger: bool,
    by: str | None,
    dry_run: bool,
) -> None:
    """Show what changed in TOOLS (every tool with a change waiting, if none is named) since
    they were pinned, and pin the new versions."""
    from .pins import PinFile, agents, default_pin_path, digest

    path = pins_path or default_pin_path(db)
    if path is None or not path.exists():
        raise click.ClickException(
            f"no pin file at {path or db}: give the proxy's --pins PATH, or its --db"
        )
    try:
        if agent_id is None:
            held = agents(path)
            if len(held) != 1:
                raise click.UsageError(
                    f"{path} holds pins for {', '.join(held) or 'no agent'}: name one with --agent"
                )
            agent_id = held[0]
        pins = PinFile(path, agent_id, server_name)
        reviewer = by or getpass.getuser()
        if dry_run or no_ledger:
            done = pins.accept(tools, reviewer, dry_run=dry_run)
        else:
            with _ledger(agent_id, db, guard_url, token) as agent:
                done = pins.accept(
                    tools, reviewer, before_write=lambda done: _record(agent, done, reviewer, pins)
                )
    except (LookupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not done:
        click.echo(f"nothing to accept: no tool of {pins.describe()} changed since it was pinned")
        return
    from .pins import diff

    for item in done:
        click.echo(diff(item.old, item.new, item.tool), nl=False)
        old = "none" if item.old is None else digest(item.old)
        verb = "would pin" if dry_run else "pinned"
        click.echo(f"{verb} {item.tool} for {pins.describe()}: {old} -> {digest(item.new)}")


@contextmanager
def _ledger(agent_id: str, db: str, guard_url: str | None, token: str | None) -> Iterator[Any]:
    """The agent's guard the accept is recorded with (its embedded ledger or its server)."""
    if guard_url is not None:
        if not token:
            raise click.UsageError(
                "--guard needs --token (a token of the agent), or GUARDKIT_TOKEN"
            )
        from guardkit.client import AgentClient

        with AgentClient(guard_url, agent_id, token) as client:
            yield client
        return
    local = db.removeprefix("sqlite:///")
    if not db.startswith(("postgresql://", "postgres://")) and not Path(local).exists():
        raise click.ClickException(
            f"no ledger at {db} to record the accept in: give the proxy's --db, or --guard URL "
            "--token (or --no-ledger for a proxy whose ledger was in memory); nothing was pinned"
        )
    from guardkit import Guard

    with Guard(db) as guard:
        yield guard.agent(agent_id)


def _record(agent: AgentGuard, done: list[Accepted], by: str, pins: PinFile) -> None:
    from dataclasses import replace

    from guardkit import GuardError
    from guardkit.tools.flow import drive

    from .pin_records import record_pin

    try:
        for item in done:
            event = item.record(by)
            if pins.server:  # named as the proxy names the server's tools in the ledger
                event = replace(event, name=f"{pins.server}.{event.name}")
            drive(record_pin(agent, event, pins.where), agent)
    except GuardError as exc:
        raise click.ClickException(
            f"could not record the accept in {pins.describe()}'s ledger: {exc.message}; nothing "
            "was pinned"
        ) from exc
