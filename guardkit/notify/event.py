"""What a sink delivers: the stored event, plus the console link of this server."""

from __future__ import annotations

import json
from typing import Any

from guardkit.store.outbox import Event

__all__ = ["Delivery", "console_link"]


def console_link(console_url: str | None, event: Event, token: str | None = None) -> str | None:
    """The console page of the event's agent and action, or None without a console URL;
    ``token`` (a signed link, ``guardkit.notify.links``) goes in the fragment, which browsers
    never send to a server."""
    if not console_url:
        return None
    base = console_url.rstrip("/")
    if event["action_id"] is None:
        return f"{base}/#agent={event['agent_id']}"
    link = f"{base}/#agent={event['agent_id']}&action={event['action_id']}"
    return link if token is None else f"{link}&link={token}"


class Delivery:
    """One event on its way to one sink: the event, its attempt number, its console link (with
    a signed approval link's token for a pending approval, when the worker mints links)."""

    __slots__ = ("attempt", "body", "event", "link")

    def __init__(
        self, body: str, attempt: int, console_url: str | None, token: str | None = None
    ) -> None:
        self.event: Event = json.loads(body)
        self.attempt = attempt
        self.link = console_link(console_url, self.event, token)
        #: The JSON the webhook and command sinks send: the event and its link.
        payload: dict[str, Any] = dict(self.event)
        payload["console_url"] = self.link
        self.body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
