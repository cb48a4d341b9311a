"""A guarded operations agent (Claude) with a data-loss monitor holding the operator guard.

Run offline (a scripted model plays Claude): ``python examples/guarded-agent/agent.py``.
With ``ANTHROPIC_API_KEY`` set, Claude runs it through ``client.beta.messages.create``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from guardkit.plugins.anthropic import AnthropicModel, tool_schemas
from monitor import DataLossMonitor
from ops_script import scripted_operator
from ops_systems import LOGS, Infra

from guardkit import Guard, GuardError
from guardkit.decisions import describe_reason
from guardkit.loop import SYSTEM_PROMPT, RunResult, run
from guardkit.protocols import Model

AGENT = "ops-agent"
POLICY = {
    "budget": 80,
    "scar_limit": 10,
    "rate_limit": {"max_actions": 30, "window_secs": 60},
    "tools": {
        "llm_turn": {"cost": 1},
        "read_logs": {"cost": 1},
        "read_metrics": {"cost": 1},
        "open_ticket": {"cost": 2},
        "post_status_update": {"cost": 3, "requires_approval": True},
        "restart_service": {"cost": 5, "requires_approval": True, "max_calls": 2},
    },
}
TASK = "Checkout is returning 503s. Investigate, mitigate, keep customers informed."

#: Decides one pending action: ``(approve, reason)``.
Decide = Callable[[dict[str, Any]], tuple[bool, str]]


@dataclass(slots=True)
class Approver:
    """The on-call approver: a thread with the operator guard answering pending actions."""

    guard: Guard
    decide: Decide
    poll: float = 0.02
    decisions: list[tuple[str, bool, str]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Approver:
        self._thread = threading.Thread(target=self._loop, name="ops-approver", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            for item in self.guard.pending(AGENT):
                action = item["action"]
                try:
                    ok, why = self.decide(action)
                except Exception as exc:  # noqa: BLE001 - fail closed
                    ok, why = False, f"approver failed: {exc}"
                self.decisions.append((str(action["action_id"]), ok, why))
                try:
                    if ok:
                        self.guard.approve(AGENT, action["action_id"], "on-call", why)
                    else:
                        self.guard.reject(AGENT, action["action_id"], "on-call", why)
                except GuardError:
                    continue  # decided meanwhile, or the agent is gone


def on_call_rules(monitor: DataLossMonitor) -> Decide:
    """Offline approver: restarts of known services; status updates that carry no secret."""

    def decide(action: dict[str, Any]) -> tuple[bool, str]:
        args = action["input"]
        if action["tool"] == "restart_service":
            known = args.get("service") in LOGS
            return known, "known service" if known else "unknown service"
        clean = monitor.clean([str(args)])
        return clean, "no secrets" if clean else "carries a secret"

    return decide


def terminal_rules(action: dict[str, Any]) -> tuple[bool, str]:
    print(f"\n  APPROVAL NEEDED {action['action_id']}: {action['tool']} {action['input']}")
    ok = input("  approve? [y/N] ").strip().lower() == "y"
    return ok, "approved at the terminal" if ok else "declined at the terminal"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    result: RunResult
    infra: Infra
    monitor: DataLossMonitor
    approver: Approver
    status: dict[str, Any]
    actions: dict[str, dict[str, Any]]
    #: The conversation as the model last saw it.
    messages: list[Any]


def run_ops(
    model: Model,
    *,
    guard: Guard | None = None,
    decide: Decide | None = None,
    max_turns: int = 20,
    poll: float = 0.02,
) -> Outcome:
    guard = guard or Guard()
    guard.create_agent(AGENT, POLICY)
    infra = Infra()
    monitor = DataLossMonitor(guard, AGENT)
    raw = infra.tools()
    tools = monitor.wrap(raw)
    messages: list[Any] = [{"role": "user", "content": TASK}]
    with Approver(guard, decide or on_call_rules(monitor), poll=poll) as approver:
        result = run(
            model,
            guard.agent(AGENT),
            tools,
            messages,
            max_turns,
            tool_schemas=tool_schemas(*raw.values()),
            approval_timeout=900,
            poll=poll,
        )
    actions = {aid: guard.action(AGENT, aid) for _, aid, _ in result.calls if aid is not None}
    return Outcome(
        result=result,
        infra=infra,
        monitor=monitor,
        approver=approver,
        status=guard.status(AGENT),
        actions=actions,
        messages=messages,
    )


def report(out: Outcome) -> str:
    """What happened, call by call, and why."""
    result, status = out.result, out.status
    lines = [f"Run ended: {result.outcome} after {result.turns} turns: {result.text}", ""]
    for name, action_id, verdict in result.calls:
        action = out.actions.get(action_id or "", {})
        why = f": {describe_reason(action['reason'])}" if action.get("reason") else ""
        approver = f", approved by {action['approved_by']}" if action.get("approved_by") else ""
        outcome = f", outcome {action['outcome']}" if action.get("outcome") else ""
        lines.append(f"  {action_id or '-':6} {name:19} {verdict}{why}{approver}{outcome}")
    lines.append("")
    lines += [f"  monitor: {tool} {aid}: {what}" for tool, aid, what in out.monitor.events]
    lines.append(
        f"  restarts: {out.infra.restarts}; status updates: {out.infra.status_updates}; "
        f"tickets: {len(out.infra.tickets)}"
    )
    lines.append(
        f"Spent {status['spent']} of {status['budget']}; scar score "
        f"{status['scar_score']}/{status['scar_limit']}; alive: {status['alive']}"
        + (f" ({status['termination_reason']})" if not status["alive"] else "")
    )
    lines += [f"  scar ({s['severity']}): {s['reason']}" for s in status["scars"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--human",
        choices=["prompt", "auto"],
        default="auto",
        help="who approves restarts and status updates",
    )
    parser.add_argument("--offline", action="store_true", help="ignore ANTHROPIC_API_KEY")
    args = parser.parse_args(argv)
    model: Model
    if os.environ.get("ANTHROPIC_API_KEY") and not args.offline:
        model = AnthropicModel.from_env(
            os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-5-5"),
            system=SYSTEM_PROMPT,
            cache=True,
            fallbacks="default",
        )
        print("Running with Claude.")
    else:
        model = scripted_operator()
        print("Running offline with a scripted model (set ANTHROPIC_API_KEY for Claude).")
    decide = terminal_rules if args.human == "prompt" else None
    try:
        with Guard() as guard:
            print(report(run_ops(model, guard=guard, decide=decide)))
    finally:
        if isinstance(model, AnthropicModel):
            model.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
