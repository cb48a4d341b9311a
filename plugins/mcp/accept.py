"""``guardkit mcp accept``: an operator reviews what an upstream changed in its tools, and pins it.

::

    guardkit mcp accept --agent files-bot --dry-run          # show every change waiting
    guardkit mcp accept --agent files-bot read_file --by alice

The proxy held each of these tools since the change (``--on-change``); once accepted, the next
``tools/list`` shows the new version and its calls go through as before.
"""

from __future__ import annotations

import getpass
from pathlib import Path

import click

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
@click.option("--by", default=None, help="Who reviewed the change (default: your login name).")
@click.option("--dry-run", is_flag=True, help="Show what changed; pin nothing.")
def accept(
    tools: tuple[str, ...],
    agent_id: str | None,
    server_name: str | None,
    pins_path: Path | None,
    db: str,
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
        done = pins.accept(tools, by or getpass.getuser(), dry_run=dry_run)
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
