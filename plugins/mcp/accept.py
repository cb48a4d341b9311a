"""``guardkit mcp accept``: an operator reviews what an upstream changed, and pins it.

::

    guardkit mcp accept --agent files-bot --dry-run          # show every change waiting
    guardkit mcp accept --agent files-bot read_file --by alice

The proxy held each of these tools (prompts, resources, instructions: ``listings``) since the
change (``--on-change``); once accepted, the next listing shows the new version and its calls go
through as before. Each accept is recorded
in the agent's ledger (``--db``, or ``--guard URL --token``; ``pin_records``) before the pin file
is written: a ledger that can't take the record leaves every pin as it was.
"""

from __future__ import annotations

import functools
import getpass
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from guardkit.protocols import AgentGuard

    from .pins import Accepted, PinFile

__all__ = ["accept"]


@click.command()
@click.argument("items", nargs=-1)
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
    items: tuple[str, ...],
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
    """Show what changed in ITEMS (every one with a change waiting, if none is named) since they
    were pinned, and pin the new versions. An item is a tool's or a prompt's name, a resource's
    URI or template, or `instructions`."""
    from .pins import KINDS, PinFile, agents, default_pin_path, diff, digest

    path = pins_path or default_pin_path(db)
    if path is None or not path.exists():
        raise click.ClickException(
            f"no pin file at {path or db}: give the proxy's --pins PATH, or its --db"
        )
    done: list[Accepted] = []
    try:
        if agent_id is None:
            held = agents(path)
            if len(held) != 1:
                raise click.UsageError(
                    f"{path} holds pins for {', '.join(held) or 'no agent'}: name one with --agent"
                )
            agent_id = held[0]
        sections = [PinFile(path, agent_id, server_name, kind) for kind in KINDS]
        pins = sections[0]
        offering = {section.kind: section.offering() for section in sections}
        unknown = [name for name in items if not any(name in o for o in offering.values())]
        if unknown:
            waiting = sorted({name for names in offering.values() for name in names})
            raise LookupError(
                f"nothing to accept for {', '.join(map(repr, unknown))} in {path} "
                f"({pins.describe()}): items with a change waiting are "
                f"{', '.join(waiting) or 'none'}"
            )
        wanted = {
            section.kind: [n for n in offering[section.kind] if not items or n in items]
            for section in sections
        }
        reviewer = by or getpass.getuser()
        ledger = _ledger(agent_id, db, guard_url, token) if any(wanted.values()) else None
        with (
            ledger if ledger is not None and not (dry_run or no_ledger) else nullcontext() as agent
        ):
            for section in sections:
                if not wanted[section.kind]:
                    continue
                record = None
                if agent is not None:
                    record = functools.partial(_record, agent, by=reviewer, pins=section)
                done += section.accept(
                    tuple(wanted[section.kind]), reviewer, dry_run=dry_run, before_write=record
                )
    except (LookupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    if not done:
        click.echo(f"nothing to accept: nothing of {pins.describe()} changed since it was pinned")
        return
    for item in done:
        click.echo(diff(item.old, item.new, item.tool), nl=False)
        old = "none" if item.old is None else digest(item.old)
        verb = "would pin" if dry_run else "pinned"
        what = item.tool if item.kind == "tool" else f"{item.kind} {item.tool!r}"
        click.echo(f"{verb} {what} for {pins.describe()}: {old} -> {digest(item.new)}")


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


def _record(agent: AgentGuard, done: list[Accepted], *, by: str, pins: PinFile) -> None:
    from dataclasses import replace

    from guardkit import GuardError
    from guardkit.tools.flow import drive

    from .pin_records import record_pin

    try:
        for item in done:
            event = item.record(by)
            if pins.server and pins.kind == "tools":  # as the proxy names them in the ledger
                event = replace(event, name=f"{pins.server}.{event.name}")
            drive(record_pin(agent, event, pins.where), agent)
    except GuardError as exc:
        raise click.ClickException(
            f"could not record the accept in {pins.describe()}'s ledger: {exc.message}; nothing "
            "was pinned"
        ) from exc
