"""What a sink delivers: the stored event, plus the console link of this server."""

from __future__ import annotations

import json
from typing import Any

from guardkit.store.outbox import Event

__all__ = ["Delivery", "console_link"]


def console_link(console_url: str | None, event: Event) -> str | None:
    """The console page of the event's agent and action, or None without a console URL."""
    if not console_url:
        return None
    base = console_url.rstrip("/")
    if event["action_id"] is None:
        return f"{base}/#agent={event['agent_id']}"
    return f"{base}/#agent={event['agent_id']}&action={event['action_id']}"


class Delivery:
    """One event on its way to one sink: the event, its attempt number, its console link."""

    __slots__ = ("attempt", "body", "event", "link")

    def __init__(self, body: str, attempt: int, console_url: str | None) -> None:
        self.event: Event = json.loads(body)
        self.attempt = attempt
        self.link = console_link(console_url, self.event)
        #: The JSON the webhook and command sinks send: the event and its link.
        payload: dict[str, Any] = dict(self.event)
        payload["console_url"] = self.link
        self.body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
