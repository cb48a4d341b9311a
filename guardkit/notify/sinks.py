"""The sinks: where events go. A webhook (signed JSON), a Slack incoming webhook, a command.

A sink's ``send`` returns normally when the event is delivered and raises ``DeliveryFailed``
(with a message that says what went wrong) when it is not; the worker retries it later. A sink
has a ``name``, the key its deliveries are recorded under: it must stay the same across
restarts, and every server sharing a store must give one sink the same name.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from typing import Any, Protocol

import httpx

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


def _host(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}" + (f":{parsed.port}" if parsed.port else "")


def _post(client: httpx.Client, url: str, body: bytes, headers: dict[str, str]) -> None:
    try:
        response = client.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise DeliveryFailed(f"{_host(url)}: {type(exc).__name__}: {exc}") from None
    if not response.is_success:
        text = response.text[:200].strip()
        raise DeliveryFailed(f"{_host(url)} answered HTTP {response.status_code}: {text}")


class WebhookSink:
    """POST the event's JSON to ``url``, signed with ``secret`` (``Guardkit-Signature``).

    Every delivery carries the event's id in ``Guardkit-Event-Id`` (and in the body): a receiver
    drops a delivery whose id it has seen. Any 2xx answer is a delivery; anything else is retried.
    """

    def __init__(
        self, url: str, secret: str | None, *, name: str = "webhook", timeout: float = 10.0
    ) -> None:
        self.url = url
        self.secret = secret
        self.name = name
        self.target = _host(url)
        self._client = httpx.Client(timeout=timeout, follow_redirects=False)

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
        _post(self._client, self.url, delivery.body, headers)

    def close(self) -> None:
        self._client.close()


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
    if delivery.link:
        lines.append(f"<{delivery.link}|Open in the guardkit console>")
    text = "\n".join(lines)
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


class SlackSink:
    """POST a message to a Slack-compatible incoming webhook (its URL is its secret)."""

    def __init__(self, url: str, *, name: str = "slack", timeout: float = 10.0) -> None:
        self.url = url
        self.name = name
        self.target = _host(url)
        self._client = httpx.Client(timeout=timeout, follow_redirects=False)

    def send(self, delivery: Delivery) -> None:
        body = json.dumps(slack_message(delivery)).encode()
        headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT}
        _post(self._client, self.url, body, headers)

    def close(self) -> None:
        self._client.close()


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
