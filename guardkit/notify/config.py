"""Which sinks a server or ``guardkit notify`` delivers to, from options or the environment.

``GUARD_NOTIFY_WEBHOOK`` and ``GUARD_NOTIFY_SECRET`` are the simplest setup; a Slack incoming
webhook (``GUARD_NOTIFY_SLACK``) and a command (``GUARD_NOTIFY_COMMAND``) may be added. Each
option of ``guardkit serve`` and ``guardkit notify`` has the same name in lower case
(``--notify-webhook``...) and wins over its variable. ``GUARD_NOTIFY_EVENTS`` (a comma-separated
list of event types) says which events every sink takes; ``GUARD_NOTIFY_WEBHOOK_EVENTS``,
``..._SLACK_EVENTS`` and ``..._COMMAND_EVENTS`` say it for one sink, over it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from guardkit.notify.links import link_key
from guardkit.notify.sinks import CommandSink, Sink, SlackSink, WebhookSink
from guardkit.notify.worker import DeliverySettings, Worker
from guardkit.store.base import Store
from guardkit.store.outbox import EVENT_TYPES

__all__ = ["MIN_SECRET", "NotifyConfig", "event_types", "from_options", "notify_options"]

F = TypeVar("F", bound=Callable[..., Any])

#: The shortest webhook secret accepted.
MIN_SECRET = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class NotifyConfig:
    webhook: str | None = None
    secret: str | None = None
    slack: str | None = None
    command: str | None = None
    #: The console's public base URL, linked from every notification.
    console_url: str | None = None
    #: Seconds a signed approval link lasts at most (0: messages carry no link to decide).
    link_ttl: float = 3600.0
    #: Sink name (``webhook``, ``slack``, ``command``) -> the event types it takes; a sink not
    #: named takes every type.
    events: Mapping[str, frozenset[str]] = field(default_factory=dict)
    settings: DeliverySettings = field(default_factory=DeliverySettings)

    def __post_init__(self) -> None:
        if self.webhook and (not self.secret or len(self.secret) < MIN_SECRET):
            raise ValueError(
                "GUARD_NOTIFY_WEBHOOK (--notify-webhook) needs GUARD_NOTIFY_SECRET "
                f"(--notify-secret) of at least {MIN_SECRET} characters: without it a receiver "
                "can't tell the guard's deliveries from anyone else's"
            )
        if self.link_ttl < 0:
            raise ValueError("GUARD_LINK_TTL (--link-ttl) must be >= 0 seconds")
        for name in ("webhook", "slack"):
            url = getattr(self, name)
            if url and not url.startswith(("https://", "http://")):
                raise ValueError(f"the notification {name} URL must be http(s)://..., not {url!r}")

    @property
    def enabled(self) -> bool:
        return bool(self.webhook or self.slack or self.command)

    def sinks(self) -> list[Sink]:
        """The configured sinks, named ``webhook``, ``slack`` and ``command``."""
        found: list[Sink] = []
        if self.webhook:
            found.append(WebhookSink(self.webhook, self.secret))
        if self.slack:
            found.append(SlackSink(self.slack))
        if self.command:
            found.append(CommandSink(self.command))
        return found

    def worker(self, store: Store, console_url: str | None) -> Worker:
        """The delivery worker for ``store``; links to ``console_url`` unless one is set."""
        return Worker(
            store,
            self.sinks(),
            settings=self.settings,
            console_url=self.console_url or console_url,
            link_key=link_key(store) if self.link_ttl > 0 else None,
            link_ttl=self.link_ttl,
            events=self.events,
        )


_OPTIONS: list[tuple[str, str, type, Any, str]] = [
    ("--notify-webhook", "GUARD_NOTIFY_WEBHOOK", str, None, "POST signed event JSON here."),
    ("--notify-secret", "GUARD_NOTIFY_SECRET", str, None, "HMAC key of the webhook signature."),
    ("--notify-slack", "GUARD_NOTIFY_SLACK", str, None, "A Slack incoming-webhook URL."),
    ("--notify-command", "GUARD_NOTIFY_COMMAND", str, None, "Run this with each event on stdin."),
    ("--notify-backoff", "GUARD_NOTIFY_BACKOFF", float, 2.0, "Seconds before the first retry."),
    ("--notify-max-backoff", "GUARD_NOTIFY_MAX_BACKOFF", float, 600.0, "Longest retry wait."),
    ("--notify-lease", "GUARD_NOTIFY_LEASE", float, 60.0, "Seconds a claimed delivery is held."),
    ("--notify-poll", "GUARD_NOTIFY_POLL", float, 1.0, "Seconds between looks for new events."),
    ("--console-url", "GUARD_PUBLIC_URL", str, None, "The console's URL, linked from messages."),
    ("--link-ttl", "GUARD_LINK_TTL", float, 3600.0, "Longest life of a signed approval link."),
    ("--notify-events", "GUARD_NOTIFY_EVENTS", str, None, "Event types every sink takes (a,b)."),
    ("--notify-webhook-events", "GUARD_NOTIFY_WEBHOOK_EVENTS", str, None, "The webhook's types."),
    ("--notify-slack-events", "GUARD_NOTIFY_SLACK_EVENTS", str, None, "The Slack sink's types."),
    ("--notify-command-events", "GUARD_NOTIFY_COMMAND_EVENTS", str, None, "The command's types."),
    (
        "--notify-retention",
        "GUARD_NOTIFY_RETENTION",
        float,
        30 * 86400.0,
        "Seconds delivered events are kept (0: forever).",
    ),
]


def event_types(text: str | None, option: str) -> frozenset[str] | None:
    """The event types a comma-separated ``text`` names (None: every type)."""
    if text is None or not text.strip():
        return None
    names = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(names - set(EVENT_TYPES))
    if unknown:
        raise ValueError(
            f"{option}: unknown event type {unknown[0]!r}; the types are {', '.join(EVENT_TYPES)}"
        )
    return names


def notify_options(command: F) -> F:
    """Add the notification options to a click command (as ``notify_*`` and ``console_url``)."""
    for flag, env, kind, default, text in reversed(_OPTIONS):
        show = f"${env}" + (f" or {default}" if default is not None else "")
        command = click.option(
            flag, envvar=env, type=kind, default=default, show_default=show, help=text
        )(command)
    return command


def from_options(values: dict[str, Any]) -> NotifyConfig:
    """The config from ``notify_options``' values; ``ValueError`` says what is wrong."""
    settings = DeliverySettings(
        backoff=values["notify_backoff"],
        max_backoff=values["notify_max_backoff"],
        lease=values["notify_lease"],
        poll=values["notify_poll"],
        retention=values["notify_retention"],
    )
    default = event_types(values["notify_events"], "GUARD_NOTIFY_EVENTS (--notify-events)")
    events: dict[str, frozenset[str]] = {}
    for sink in ("webhook", "slack", "command"):
        option = f"GUARD_NOTIFY_{sink.upper()}_EVENTS (--notify-{sink}-events)"
        types = event_types(values[f"notify_{sink}_events"], option)
        if types is None:
            types = default
        if types is not None:
            events[sink] = types
    return NotifyConfig(
        webhook=values["notify_webhook"],
        secret=values["notify_secret"],
        slack=values["notify_slack"],
        command=values["notify_command"],
        console_url=values["console_url"],
        link_ttl=values["link_ttl"],
        events=events,
        settings=settings,
    )
