"""The sinks: where events go. A webhook (signed JSON), a Slack incoming webhook, a command.

A sink's ``send`` returns normally when the event is delivered and raises ``DeliveryFailed``
(with a message that says what went wrong) when it is not; the worker retries it later. A sink
has a ``name``, the key its deliveries are recorded under: it must stay the same across
restarts, and every server sharing a store must give one sink the same name.

The HTTP sinks POST over the standard library's ``http.client`` on one kept-alive connection,
not httpx: delivery runs in the server's process, and a POST there costs about a tenth of the
CPU time (measured on loopback: ~60 us against ~550 us), which keeps notifications off the
decision path's budget. Redirects are not followed and proxy variables are not read: the
webhook's URL is where events go.
"""

from __future__ import annotations

import http.client
import json
import os
import shlex
import subprocess
import time
from typing import Any, Protocol
from urllib.parse import urlsplit

from guardkit._version import __version__
from guardkit.errors import DeliveryFailed
from guardkit.notify.event import Delivery
from guardkit.notify.signing import HEADER, signature_header

__all__ = ["CommandSink", "DeliveryFailed", "Sink", "SlackSink", "WebhookSink"]

_USER_AGENT = f"guardkit/{__version__}"


class Sink(Protocol):
    name: str
    #: Where it delivers, for messages (never a secret: no token, no URL path).
    target: str

    def send(self, delivery: Delivery) -> None: ...

    def close(self) -> None: ...


class _Poster:
    """POSTs to one URL over one kept-alive connection, reconnecting when the peer closed it."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {parts.scheme}://{parts.hostname or ''}")
        self.kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.address = (parts.hostname, parts.port)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        port = f":{parts.port}" if parts.port else ""
        #: Scheme, host and port only: the path of a Slack URL is its secret.
        self.target = f"{parts.scheme}://{parts.hostname}{port}"
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def post(self, body: bytes, headers: dict[str, str]) -> None:
        for first in (True, False):
            fresh = self._conn is None
            if self._conn is None:
                self._conn = self.kind(*self.address, timeout=self.timeout)
            try:
                self._conn.request("POST", self.path, body=body, headers=headers)
                response = self._conn.getresponse()
                text = response.read(4096)
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                stale = isinstance(exc, (http.client.RemoteDisconnected, ConnectionError))
                if first and not fresh and stale:
                    continue  # the receiver closed an idle connection: once more, anew
                raise DeliveryFailed(f"{self.target}: {type(exc).__name__}: {exc}") from None
            if response.will_close:
                self.close()
            if not 200 <= response.status < 300:
                shown = text[:200].decode(errors="replace").strip()
                raise DeliveryFailed(f"{self.target} answered HTTP {response.status}: {shown}")
            return

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class WebhookSink:
    """POST the event's JSON to ``url``, signed with ``secret`` (``Guardkit-Signature``).

    Every delivery carries the event's id in ``Guardkit-Event-Id`` (and in the body): a receiver
    drops a delivery whose id it has seen. Any 2xx answer is a delivery; anything else is retried.
    """

    def __init__(
        self, url: str, secret: str | None, *, name: str = "webhook", timeout: float = 10.0
    ) -> None:
        self.secret = secret
        self.name = name
        self._poster = _Poster(url, timeout)
        self.target = self._poster.target

    def send(self, delivery: Delivery) -> None:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": _USER_AGENT,
            "Guardkit-Event-Id": delivery.event["id"],
            "Guardkit-Event-Type": delivery.event["type"],
            "Guardkit-Delivery-Attempt": str(delivery.attempt),
        }
        if self.secret:
            headers[HEADER] = signature_header(self.secret, int(time.time()), delivery.body)
        self._poster.post(delivery.body, headers)

    def close(self) -> None:
        self._poster.close()


def slack_message(delivery: Delivery) -> dict[str, Any]:
    """A Slack incoming-webhook message: the tool, the agent, the exact input, why it waits."""
    event = delivery.event
    action = event["action"]
    title = {
        "approval.pending": "Approval needed",
        "approval.approved": "Approved",
        "approval.rejected": "Rejected",
        "approval.expired": "Approval expired",
        "agent.terminated": "Agent terminated",
    }[event["type"]]
    where = f"agent `{event['agent_id']}`"
    if action is not None:
        where = f"`{action['tool']}` ({event['action_id']}, cost {action['cost']}) by {where}"
    lines = [f"*{title}*: {where}"]
    if action is not None:
        text = json.dumps(action["input"], indent=2, ensure_ascii=False, sort_keys=True)
        lines.append(f"Input (sha256 {action['input_sha256'][:12]}):\n```{text[:2500]}```")
        why = action["waits_because"]
        lines.append(f"Why it waits: {why.get('reason') or why.get('code')}")
    decision = event["decision"]
    if decision:
        shown = ", ".join(f"{k}: {v}" for k, v in decision.items() if v is not None)
        lines.append(f"Decision: {shown}")
    if delivery.link and "&link=" in delivery.link:
        lines.append(f"<{delivery.link}|Approve or reject (a signed link, for this action, once)>")
    elif delivery.link:
        lines.append(f"<{delivery.link}|Open in the guardkit console>")
    text = "\n".join(lines)
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


class SlackSink:
    """POST a message to a Slack-compatible incoming webhook (its URL is its secret)."""

    def __init__(self, url: str, *, name: str = "slack", timeout: float = 10.0) -> None:
        self.name = name
        self._poster = _Poster(url, timeout)
        self.target = self._poster.target

    def send(self, delivery: Delivery) -> None:
        body = json.dumps(slack_message(delivery)).encode()
        self._poster.post(body, {"Content-Type": "application/json", "User-Agent": _USER_AGENT})

    def close(self) -> None:
        self._poster.close()


class CommandSink:
    """Run ``command`` (a shell-style word list, run without a shell) with the event's JSON
    on stdin; exit status 0 is a delivery. ``GUARDKIT_EVENT_ID`` and ``GUARDKIT_EVENT_TYPE``
    are in its environment."""

    def __init__(self, command: str, *, name: str = "command", timeout: float = 30.0) -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("the notification command is empty")
        self.name = name
        self.target = self.argv[0]
        self.timeout = timeout

    def send(self, delivery: Delivery) -> None:
        env = {
            **os.environ,
            "GUARDKIT_EVENT_ID": delivery.event["id"],
            "GUARDKIT_EVENT_TYPE": delivery.event["type"],
        }
        try:
            done = subprocess.run(
                self.argv,
                input=delivery.body,
                env=env,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeliveryFailed(f"{self.target}: {exc}") from None
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace")[-300:].strip()
            raise DeliveryFailed(f"{self.target} exited {done.returncode}: {tail}")

    def close(self) -> None:
        """Nothing held between deliveries."""
