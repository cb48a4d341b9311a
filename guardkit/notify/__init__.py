"""Notifications: the store's outbox delivered to webhooks, Slack and commands, at least once.

``guardkit serve`` runs a ``Worker`` when a sink is configured; ``guardkit notify --store PATH``
runs the same worker beside an embedded guard. See docs/notifications.md.
"""

from __future__ import annotations

from guardkit.notify.config import NotifyConfig
from guardkit.notify.event import Delivery
from guardkit.notify.signing import signature_header, verify
from guardkit.notify.sinks import CommandSink, Sink, SlackSink, WebhookSink
from guardkit.notify.worker import DeliverySettings, Worker

__all__ = [
    "CommandSink",
    "Delivery",
    "DeliverySettings",
    "NotifyConfig",
    "Sink",
    "SlackSink",
    "WebhookSink",
    "Worker",
    "signature_header",
    "verify",
]
