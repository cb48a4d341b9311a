"""The ``guardkit`` command line: the demo, operator commands on a ledger, and (lazily) scan,
fix and serve.

Exit codes, which scripts may rely on:

====  =============================================================================
0     success
1     a check failed: ``verify`` found a broken chain, ``scan`` found something
2     usage error (bad arguments, unreadable policy file)
3     the guard refused the operation (unknown agent or action, wrong state, bad input)
4     the store failed or the agent is quarantined (tampered ledger)
====  =============================================================================
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from guardkit.decisions import AgentStatus
    from guardkit.local import Guard

__all__ = ["main"]

EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_STORE = 4

# Subcommands owned by other packages, imported only when used (libcst, starlette are heavy).
_LAZY = {
    "scan": "guardkit.codemods.cli:scan",
    "fix": "guardkit.codemods.cli:fix",
    "serve": "guardkit.server.cli:serve",
    "notify": "guardkit.notify.cli:notify",
    "mcp": "guardkit.plugins.mcp.cli:mcp",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *_LAZY])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _LAZY:
            module, attr = _LAZY[cmd_name].split(":")
            try:
                command = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as exc:
                raise click.ClickException(
                    f"'guardkit {cmd_name}' is unavailable: {exc}. Install the extra it needs "
                    "(pip install 'guardkit[server]' for serve, 'guardkit[mcp]' for mcp)."
                ) from exc
            return command if isinstance(command, click.Command) else None
        return super().get_command(ctx, cmd_name)


@click.group(cls=_LazyGroup)
@click.version_option(package_name="guardkit")
def main() -> None:
    """Guard tool-calling LLM agents: policies, approvals, a durable ledger, scans and fixes."""


_db_option = click.option(
    "--db",
    envvar="GUARDKIT_DB",
    default="guardkit.db",
    show_default=True,
    help="Ledger database (SQLite path or sqlite:///PATH); env GUARDKIT_DB.",
)
_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


_public_key_option = click.option(
    "--public-key",
    envvar="GUARDKIT_PUBLIC_KEY",
    default=None,
    help="Ed25519 public key (hex, or a file holding it) every ledger must be signed with; "
    "env GUARDKIT_PUBLIC_KEY. Without it a signed ledger is checked against the key it names "
    "itself, which whoever rewrote it could have replaced.",
)


@contextmanager
def _guard(
    db: str, *, must_exist: bool = True, public_key: str | None = None, witness: str | None = "auto"
) -> Iterator[Guard]:
    from guardkit.errors import GuardError, LedgerTampered, StoreError
    from guardkit.local import Guard

    if must_exist and "://" not in db and not os.path.exists(db):
        raise click.UsageError(f"No ledger at {db!r}. Use --db or GUARDKIT_DB to name one.")
    try:
        with Guard(db, public_key=public_key, witness=witness) as guard:
            yield guard
    except (StoreError, LedgerTampered) as exc:
        click.echo(f"Error: {sentence(exc.message)}", err=True)
        sys.exit(EXIT_STORE)
    except GuardError as exc:
        click.echo(f"Error: {sentence(exc.message)}", err=True)
        sys.exit(EXIT_REFUSED)


def sentence(text: str) -> str:
    """``text`` as a sentence: a capital first letter and a full stop (``click``'s ``Error:``)."""
    text = text.strip()
    if text[:1].islower():
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _say(text: str) -> None:
    """Print text that may hold agent-controlled parts: invisible characters shown escaped."""
    from guardkit._visible import escape_hidden

    click.echo(escape_hidden(text))


def _cell(text: Any) -> Any:
    """A table cell of agent-controlled text: escaped, and never read as rich markup."""
    from rich.text import Text

    from guardkit._visible import escape_hidden

    return Text(escape_hidden(str(text)))


def _emit(data: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    if as_json:
        # The escapes are JSON's: the document parses to the same data.
        _say(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render(data)


def _print_status(status: AgentStatus) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"agent {status['agent_id']}", show_header=False)
    table.add_row(
        "alive", "yes" if status["alive"] else _cell(f"no: {status['termination_reason']}")
    )
    table.add_row(
        "budget", f"{status['spent']} spent of {status['budget']} ({status['remaining']} left)"
    )
    table.add_row("scars", f"{status['scar_score']} of {status['scar_limit']}")
    for scar in status["scars"]:
        table.add_row(
            "", _cell(f"{scar['severity']}: {scar['reason']} ({scar['action_id'] or '-'})")
        )
    table.add_row(
        "actions",
        f"{status['actions_allowed']} allowed, {status['actions_denied']} "
        f"denied, {status['actions_pending']} pending",
    )
    table.add_row("head", f"seq {status['head']['seq']} {status['head']['hash'][:16]}…")
    Console().print(table)


@main.command()
@click.argument(
    "scenario", required=False, type=click.Choice(["guard", "ops", "payments"]), default="guard"
)
@click.option("--db", default=None, help="Write the demo ledger here (default: a temp file).")
@click.option(
    "--trace",
    type=click.Choice(["off", "console", "otlp"]),
    default="off",
    help="Export OpenTelemetry traces of every decision.",
)
@_json_option
def demo(scenario: str, db: str | None, trace: str, as_json: bool) -> None:
    """Run a scripted, offline guarded agent (no API keys needed)."""
    if trace != "off":
        tracing = importlib.import_module("guardkit.tracing")
        tracing.enable_for_cli(trace)
    if scenario != "guard":
        sys.exit(_run_example(scenario))
    from guardkit.demo import run_demo

    outcome = run_demo(db)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "outcome": outcome.result.outcome,
                    "text": outcome.result.text,
                    "decisions": outcome.decisions,
                    "status": outcome.status,
                    "ledger": outcome.db_path,
                },
                indent=2,
            )
        )
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Every decision the guard made")
    for column in ("action", "tool", "decision", "cost", "what happened"):
        table.add_column(column)
    styles = {"allowed": "green", "denied": "red", "pending_approval": "yellow"}
    for row in outcome.decisions:
        table.add_row(
            row["action_id"],
            row["tool"],
            f"[{styles.get(row['decision'], '')}]{row['decision']}[/]",
            "" if row["cost"] is None else str(row["cost"]),
            row["detail"],
        )
    console = Console()
    console.print(table)
    console.print(f"run ended: [bold]{outcome.result.outcome}[/] — {outcome.result.text}")
    _print_status(outcome.status)
    console.print(
        f"ledger: {outcome.db_path}  (try: guardkit --help, "
        f"guardkit verify {outcome.status['agent_id']} --db {outcome.db_path})"
    )


def _run_example(name: str) -> int:
    import runpy
    from pathlib import Path

    folder = {"ops": "guarded-agent", "payments": "deepseek-payments-agent"}[name]
    root = Path(__file__).resolve().parent.parent / "examples" / folder / "agent.py"
    if not root.exists():
        raise click.ClickException(
            f"the {name} example lives in the source tree ({root}); "
            "run it from a checkout of guardkit"
        )
    namespace = runpy.run_path(str(root), run_name="guardkit_example")
    return int(namespace["main"]([]))


@main.group()
def policy() -> None:
    """Check policy files before an agent is created with them."""


@policy.command("check")
@click.argument("policy_file", type=click.Path(exists=True, dir_okay=False))
@_json_option
def policy_check(policy_file: str, as_json: bool) -> None:
    """Check a .json or .toml policy: every problem named with its path; exit 1 if any."""
    from pathlib import Path

    from guardkit.errors import PolicyError
    from guardkit.policy import load_policy

    if not policy_file.endswith((".json", ".toml")):
        raise click.UsageError("the policy file must end in .json or .toml")
    try:
        parsed = load_policy(Path(policy_file))
    except PolicyError as exc:
        problems = [{"path": path, "problem": problem} for path, problem in exc.problems]
        if as_json:
            click.echo(json.dumps({"ok": False, "problems": problems}, ensure_ascii=False))
        else:
            for item in problems:
                _say(f"{item['path']}: {item['problem']}")
        sys.exit(EXIT_CHECK_FAILED)
    rules = sum(
        len(rule.conditions.rules) for rule in parsed.tools.values() if rule.conditions is not None
    )
    summary = {"ok": True, "tools": len(parsed.tools), "rules": rules}
    _emit(summary, as_json, lambda d: click.echo(f"ok: {d['tools']} tools, {d['rules']} rules"))


@main.command()
@click.argument("agent_id")
@click.option(
    "--policy",
    "policy_path",
    required=True,
    type=click.Path(exists=True),
    help="Policy file (.json or .toml).",
)
@_db_option
@_json_option
def create(agent_id: str, policy_path: str, db: str, as_json: bool) -> None:
    """Create an agent with a fixed policy; prints its token."""
    from pathlib import Path

    from guardkit.policy import load_policy

    if not policy_path.endswith((".json", ".toml")):
        raise click.UsageError("the policy file must end in .json or .toml")
    with _guard(db, must_exist=False) as guard:
        created = guard.create_agent(agent_id, load_policy(Path(policy_path)))
    _emit(created, as_json, lambda d: click.echo(d["token"]))


@main.command()
@_db_option
@_json_option
def agents(db: str, as_json: bool) -> None:
    """List agents with their budget and scars."""
    with _guard(db) as guard:
        listing = guard.agents()

    def render(items: list[dict[str, Any]]) -> None:
        from rich.console import Console
        from rich.table import Table

        table = Table()
        for column in ("agent", "state", "alive", "spent/budget", "scars", "pending"):
            table.add_column(column)
        for item in items:
            if item["state"] != "active":
                table.add_row(item["agent_id"], item["state"], "", "", "", _cell(item["error"]))
                continue
            s = item["status"]
            table.add_row(
                item["agent_id"],
                "active",
                "yes" if s["alive"] else "no",
                f"{s['spent']}/{s['budget']}",
                f"{s['scar_score']}/{s['scar_limit']}",
                str(s["actions_pending"]),
            )
        Console().print(table)

    _emit(listing, as_json, render)


@main.command()
@click.argument("agent_id", required=False)
@click.option(
    "--notifications", is_flag=True, help="Show each notification sink's deliveries instead."
)
@_db_option
@_json_option
def status(agent_id: str | None, notifications: bool, db: str, as_json: bool) -> None:
    """Show an agent's budget, scars and head (or, with --notifications, the deliveries)."""
    if notifications:
        with _guard(db) as guard:
            _emit(guard.notifications(), as_json, _print_sinks)
        return
    if agent_id is None:
        raise click.UsageError("name an agent (or pass --notifications)")
    with _guard(db) as guard:
        _emit(guard.status(agent_id), as_json, _print_status)


def _print_sinks(sinks: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    if not sinks:
        click.echo("No sink has delivered from this store yet (docs/notifications.md).")
        return
    table = Table("sink", "pending", "delivered", "skipped", "attempts", "failures", "last error")
    for row in sinks:
        table.add_row(
            row["sink"],
            str(row["pending"]),
            str(row["delivered"]),
            str(row["skipped"]),
            str(row["attempts"]),
            str(row["failures"]),
            _cell(row["last_error"] or ""),
        )
    Console().print(table)


@main.command()
@click.argument("agent_id", required=False)
@click.option("--all", "every", is_flag=True, help="Every agent's, newest first.")
@click.option("--agent", "agents", multiple=True, help="With --all: only this agent (repeatable).")
@click.option("--tool", "tools", multiple=True, help="With --all: only this tool (repeatable).")
@_db_option
@_json_option
def pending(
    agent_id: str | None,
    every: bool,
    agents: tuple[str, ...],
    tools: tuple[str, ...],
    db: str,
    as_json: bool,
) -> None:
    """List actions waiting for approval, with their exact input.

    ``--all`` lists them across agents, newest first (each line names its agent).
    """
    if every == (agent_id is not None) or ((agents or tools) and not every):
        raise click.UsageError("name one agent, or pass --all (with --agent/--tool filters)")
    with _guard(db) as guard:
        items: list[Any]
        if agent_id is not None:
            items = list(guard.pending(agent_id))
        else:
            from guardkit.notify.inbox import pending_across

            items = list(pending_across(guard.engine, set(agents), set(tools)))

    def render(rows: list[dict[str, Any]]) -> None:
        if not rows:
            click.echo("nothing pending")
        from guardkit.decisions import describe_reason

        for item in rows:
            action = item["action"]
            who = f"{item['agent_id']}  " if "agent_id" in item else ""
            _say(
                f"{who}{action['action_id']}  {action['tool']}  cost {action['cost']}  "
                f"since {item['requested_at']}\n  input: "
                f"{json.dumps(action['input'], ensure_ascii=False)}"
            )
            why = action.get("approval_reason")
            if why:
                # A rule of the policy or a check sent this call here: say which and why.
                _say(f"  asks a human because {describe_reason(why)}")
                if why.get("sources"):
                    _say(f"  labels: {', '.join(why['sources'])}")

    _emit(items, as_json, render)


def _decision_render(decision: dict[str, Any]) -> None:
    extra = decision.get("reason") or {"remaining": decision.get("remaining")}
    click.echo(f"{decision['action_id']}: {decision['decision']} {json.dumps(extra)}")


@main.command()
@click.argument("agent_id")
@click.argument("action_id")
@click.option("--by", "approver", required=True, help="Who approves.")
@click.option("--note", default=None, help="Signed into the ledger with the approval.")
@_db_option
@_json_option
def approve(
    agent_id: str, action_id: str, approver: str, note: str | None, db: str, as_json: bool
) -> None:
    """Approve a pending action (every check runs again)."""
    with _guard(db) as guard:
        _emit(guard.approve(agent_id, action_id, approver, note), as_json, _decision_render)


@main.command()
@click.argument("agent_id")
@click.argument("action_id")
@click.option("--by", "approver", required=True)
@click.option("--reason", "--note", "reason", required=True, help="Why (signed into the ledger).")
@click.option(
    "--scar",
    type=click.Choice(["minor", "moderate", "severe", "fatal"]),
    default=None,
    help="Scar the agent too, when asking was itself a red flag.",
)
@_db_option
@_json_option
def reject(
    agent_id: str,
    action_id: str,
    approver: str,
    reason: str,
    scar: str | None,
    db: str,
    as_json: bool,
) -> None:
    """Reject a pending action."""
    with _guard(db) as guard:
        _emit(guard.reject(agent_id, action_id, approver, reason, scar), as_json, _decision_render)


@main.command()
@click.argument("agent_id")
@click.option(
    "--severity", required=True, type=click.Choice(["minor", "moderate", "severe", "fatal"])
)
@click.option("--reason", required=True)
@click.option("--action", "action_id", default=None)
@_db_option
@_json_option
def scar(
    agent_id: str, severity: str, reason: str, action_id: str | None, db: str, as_json: bool
) -> None:
    """Scar an agent for something the guard could not see."""
    with _guard(db) as guard:
        _emit(guard.scar(agent_id, severity, reason, action_id), as_json, _print_status)


@main.command()
@click.argument("agent_id")
@click.option("--reason", required=True)
@click.option("--by", required=True)
@_db_option
@_json_option
def terminate(agent_id: str, reason: str, by: str, db: str, as_json: bool) -> None:
    """Terminate an agent (and its sub-agents) for good."""
    with _guard(db) as guard:
        _emit(guard.terminate(agent_id, reason, by), as_json, _print_status)


@main.command()
@click.argument("agent_id")
@click.option("--after", type=int, default=None, help="Only records with seq > AFTER.")
@click.option("--limit", type=click.IntRange(1, 5000), default=None)
@_db_option
@_json_option
def log(agent_id: str, after: int | None, limit: int | None, db: str, as_json: bool) -> None:
    """Print an agent's ledger records."""
    with _guard(db) as guard:
        data = guard.log(agent_id, after, limit)

    def render(d: dict[str, Any]) -> None:
        from guardkit.rules import RESERVED_CODES

        for r in d["records"]:
            _say(
                f"{r['seq']:>5}  {r['timestamp']}  {r['kind']:<18} "
                f"{json.dumps(r['payload'], ensure_ascii=False)}"
            )
            payload = r["payload"] if isinstance(r["payload"], dict) else {}
            why = payload.get("reason")
            if isinstance(why, dict) and why.get("code") in (*RESERVED_CODES, "invalid_input"):
                from guardkit.decisions import describe_reason

                _say(f"{'':>7}{describe_reason(why)}")  # the rule that matched, and why
            elif r["kind"] == "action_allowed" and "rule" in payload:
                _say(f"{'':>7}allowed by rule {payload['rule']}")

    _emit(data, as_json, render)


@main.command()
@click.argument("agent_id", required=False)
@_db_option
@_public_key_option
@click.option(
    "--checkpoint",
    default=None,
    metavar="SEQ:HASH",
    help="A head published earlier (guardkit checkpoint): it must still be in the ledger, "
    "which catches a ledger cut short behind it.",
)
@click.option(
    "--file",
    "export_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Verify an exported ledger (guardkit export) offline, with no database.",
)
@click.option(
    "--witness",
    default="auto",
    metavar="PATH|none",
    help="The head witness the ledger must not be behind: <db>.witness by default, another "
    "path, or 'none' to audit a store without it.",
)
@_json_option
def verify(
    agent_id: str | None,
    db: str,
    public_key: str | None,
    checkpoint: str | None,
    export_file: str | None,
    witness: str,
    as_json: bool,
) -> None:
    """Verify an agent's hash chain and signatures, or an exported file; exit 1 if broken."""
    from guardkit.store import verify_export

    try:
        if export_file is not None:
            result = verify_export(export_file, public_key=public_key, checkpoint=checkpoint)
        elif agent_id is None:
            raise click.UsageError("name an AGENT_ID, or an exported file with --file")
        else:
            # Opened without the pin, so a ledger signed by another key is reported as broken
            # (exit 1) rather than refused at open.
            chosen = None if witness == "none" else witness
            with _guard(db, witness=chosen) as guard:
                result = guard.verify(agent_id, checkpoint, public_key=public_key)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    def render(d: dict[str, Any]) -> None:
        if d["ok"]:
            click.echo(
                f"ok: {d['records']} records, head seq {d['head']['seq']} {d['head']['hash']}"
            )
            if public_key is None and d.get("public_key"):
                click.echo(
                    "note: checked against the key the ledger names itself; pass --public-key "
                    "to pin the key it must be signed with",
                    err=True,
                )
        else:
            f = d["failure"]
            click.echo(f"BROKEN at line {f['line']} (seq {f['seq']}): {f['reason']}")

    _emit(result, as_json, render)
    if not result["ok"]:
        sys.exit(EXIT_CHECK_FAILED)


@main.command()
@click.argument("agent_id")
@_db_option
@_public_key_option
@_json_option
def checkpoint(agent_id: str, db: str, public_key: str | None, as_json: bool) -> None:
    """Print the agent's head as SEQ:HASH, to publish where this host can't rewrite it.

    Later, ``guardkit verify AGENT --checkpoint SEQ:HASH`` proves the ledger still holds that
    record: nothing was cut off behind it.
    """
    with _guard(db, public_key=public_key) as guard:
        point = guard.checkpoint(agent_id)
    seq, _, digest = point.partition(":")
    _emit(
        {"agent_id": agent_id, "checkpoint": point, "seq": int(seq), "hash": digest},
        as_json,
        lambda d: click.echo(d["checkpoint"]),
    )


@main.command()
@click.argument("agent_id")
@click.option("--output", "-o", default="-", help="File to write (default: stdout).")
@_db_option
def export(agent_id: str, output: str, db: str) -> None:
    """Export an agent's ledger as Lineage-format JSON Lines."""
    with _guard(db) as guard:
        if output == "-":
            guard.export(agent_id, sys.stdout)
        else:
            count = guard.export(agent_id, output)
            click.echo(f"wrote {count} records to {output}", err=True)
