"""The data-loss monitor: a separate component with the operator ``Guard``, not the agent's token.

Two jobs, by regex (AWS access keys, PEM private keys, passwords inside URLs, bearer-style tokens
``sk-``, ``agt_``, ``ghp_``, ``xoxb-``/``xoxp-``):

1. Redact secrets from every tool's output before the model sees it: ``[REDACTED:<kind>]``.
2. Block an outbound tool (``open_ticket``, ``post_status_update``) whose input carries a secret,
   after the guard allowed it and before it runs, and report the action ``harmful`` with the
   operator role. That is a severe scar (10): with ``scar_limit`` 10 the agent is terminated.

An agent must not be the judge of its own harm, so only this component, holding the operator
guard, reports it. In production run it as its own service in front of the tools.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from guardkit import Guard
from guardkit.loop import current_action_id

PATTERNS: dict[str, re.Pattern[str]] = {
    "private_key": re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S
    ),
    "aws_access_key": re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "password_in_url": re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:[^\s@/]+@"),
    "bearer_token": re.compile(
        r"\b(?:sk-[A-Za-z0-9_-]{16,}|agt_[A-Za-z0-9_-]+\.[0-9a-f]{16,}|ghp_[A-Za-z0-9]{30,}"
        r"|xox[bp]-[A-Za-z0-9-]{10,})"
    ),
}


class Blocked(Exception):
    """An outbound call carried a secret; the monitor stopped it before it ran."""


def find_secrets(text: str) -> list[str]:
    """The kinds of secret in ``text``, in ``PATTERNS`` order."""
    return [kind for kind, pattern in PATTERNS.items() if pattern.search(text)]


def redact(text: str) -> str:
    for kind, pattern in PATTERNS.items():
        text = pattern.sub(f"[REDACTED:{kind}]", text)
    return text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


@dataclass(slots=True)
class DataLossMonitor:
    guard: Guard
    agent_id: str
    outbound: frozenset[str] = frozenset({"open_ticket", "post_status_update"})
    #: ``(tool, action_id, what happened)`` for each redaction and each block.
    events: list[tuple[str, str | None, str]] = field(default_factory=list)

    def wrap(self, tools: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
        """The tools as the agent gets them: outbound ones checked, every output redacted."""
        return {name: self._wrap(name, func) for name, func in tools.items()}

    def _wrap(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def monitored(**kwargs: Any) -> str:
            if name in self.outbound:
                self.check_outbound(name, kwargs)
            text = _text(func(**kwargs))
            clean = redact(text)
            if clean != text:
                self.events.append((name, current_action_id(), f"redacted {find_secrets(text)}"))
            return clean

        return monitored

    def check_outbound(self, name: str, args: dict[str, Any]) -> None:
        kinds = find_secrets(_text(args))
        if not kinds:
            return
        action_id = current_action_id()
        detail = f"{name} input carried {', '.join(kinds)}; blocked by the data-loss monitor"
        if action_id is not None:
            self.guard.report_harm(self.agent_id, action_id, detail)
        self.events.append((name, action_id, f"blocked {kinds}"))
        raise Blocked(detail)

    def clean(self, texts: Iterable[str]) -> bool:
        """Whether none of ``texts`` holds a secret (used by tests and the approver)."""
        return not any(find_secrets(text) for text in texts)
