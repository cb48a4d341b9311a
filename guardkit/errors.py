"""The one exception tree of guardkit, with Lineage's HTTP ``status`` and ``code`` on every error.

``str(error)`` is the sentence a person (or a model) reads; ``.status`` and ``.code`` carry the
HTTP status and the machine-readable code as attributes, never as a prefix of the text.

::

    GuardError(Exception)                 .status, .code, .message
    ├── ActionDenied                      a request was not allowed (.action_id, .reason)
    │   └── ToolDenied                    a guarded tool was not allowed; .message for the model
    ├── ApprovalTimeout(TimeoutError)     no human decided in time
    ├── PolicyError(ValueError)           a policy is malformed (.problems lists every one)
    ├── InvalidInput(ValueError)          bad arguments: costs, inputs, ids, severities
    ├── PayloadTooLarge                   a request body over the server's limit (413)
    ├── TooManyWaits                      too many long-polls held at once (429, .retry_after)
    ├── NoAgentConfigured                 a guarded tool was called with no agent guard set
    ├── Forbidden                         the caller's role may not do this (403)
    ├── NotFound                          unknown agent (404)
    │   └── UnknownAction                 unknown action id (404)
    ├── Conflict                          the ledger's state forbids the operation (409)
    │   ├── AgentExists
    │   ├── InvalidState
    │   ├── AlreadyTerminated
    │   ├── AlreadyConsumed
    │   ├── ConsumeMismatch
    │   ├── IdempotencyConflict
    │   └── IdempotencyInProgress
    ├── StoreError                        the store failed (500)
    │   ├── LedgerTampered                an agent's ledger does not verify (503 quarantined)
    │   └── GuardUnavailable              the guard could not be reached (HTTP client)
    ├── SetupError                        Lineage's setup helpers: no server, token or access
    └── DeliveryFailed                    a notification sink could not deliver (retried later)

    GuardStop(BaseException)              the agent must stop: not an error to handle or retry
    ├── NoAgentConfigured                 a guarded call site found no agent guard configured
    ├── TurnDenied                        a gated model turn was refused (.action_id, .reason)
    └── GuardFailed                       the guard could not open, read or write its store, or
                                          could not be reached: nothing ran (``__cause__`` says why)

``GuardStop`` derives from ``BaseException``, like ``KeyboardInterrupt``: ``except Exception``
handlers and retry wrappers (tenacity, backoff) let it through, so a missing configuration or a
spent turn budget stops the agent at once instead of being retried with back-off for minutes.
A guarded call site whose guard cannot record a decision raises ``GuardFailed`` for the same
reason: an agent must not go on (nor tell its model "internal error") with nothing recorded.
It carries the same ``.status``, ``.code`` and ``.message``.

Misuse found at decoration time (a bad ``cost`` type, decorating a non-callable) raises a plain
``TypeError`` or ``ValueError`` and stays outside this tree.
"""

from __future__ import annotations

from typing import Any

from guardkit.decisions import Reason, denial_text, describe_reason

__all__ = [
    "GuardError",
    "ActionDenied",
    "ToolDenied",
    "ApprovalTimeout",
    "PolicyError",
    "InvalidInput",
    "PayloadTooLarge",
    "TooManyWaits",
    "Forbidden",
    "NotFound",
    "UnknownAction",
    "Conflict",
    "AgentExists",
    "InvalidState",
    "AlreadyTerminated",
    "AlreadyConsumed",
    "ConsumeMismatch",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "StoreError",
    "LedgerTampered",
    "GuardUnavailable",
    "SetupError",
    "DeliveryFailed",
    "GuardStop",
    "NoAgentConfigured",
    "TurnDenied",
    "GuardFailed",
]


class _Coded(BaseException):
    """Lineage's error fields and pickling, shared by both roots."""

    status: int = 500
    code: str = "internal"

    def __init__(self, status: int, code: str, message: str) -> None:
        # A message may quote bad input; a lone surrogate in it would make the error itself
        # unprintable and unencodable (a 500 on the server), so it is written as an escape.
        if not message.isascii():
            message = message.encode("utf-8", "backslashreplace").decode("utf-8")
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, self.__dict__.copy()))


def _rebuild(cls: type[_Coded], args: tuple[Any, ...], state: dict[str, Any]) -> _Coded:
    error = cls.__new__(cls)
    BaseException.__init__(error, *args)
    error.__dict__.update(state)
    return error


class GuardError(_Coded, Exception):
    """Root of every guardkit error; ``GuardError(status, code, message)`` as in Lineage's client.

    ``str(error)`` is ``.message``, the sentence to read; ``.status`` is the HTTP status the server
    answers with and ``.code`` the machine-readable error code.
    """


class GuardStop(_Coded):
    """Root of what stops an agent instead of being handled (see the module docstring)."""


class _Fixed(GuardError):
    """A GuardError whose status and code are fixed by its class."""

    def __init__(self, message: str) -> None:
        super().__init__(type(self).status, type(self).code, message)


class ActionDenied(GuardError):
    """Raised by ``authorize`` (and the decorators) when a request is denied or left pending.

    ``.reason`` is the denial's reason dict, e.g. ``{"code": "tool_not_allowed", "tool": "rm"}``.
    """

    def __init__(self, action_id: str | None, reason: Reason) -> None:
        code = str(reason.get("code", "denied"))
        super().__init__(403, code, f"action {action_id} denied: {describe_reason(reason)}")
        self.action_id = action_id
        self.reason = reason


class ToolDenied(ActionDenied):
    """Raised by a guarded tool that was not allowed to run; nothing was executed.

    ``str(denied)`` and ``.message`` are the sentence to hand back to the model as the tool's
    error result ("Denied by the policy guard: ... Do not retry; ...").
    """

    def __init__(self, action_id: str | None, reason: Reason) -> None:
        super().__init__(action_id, reason)
        self.message = denial_text(reason)
        self.args = (self.message,)


class ApprovalTimeout(GuardError, TimeoutError):
    """Raised when an action stayed ``pending_approval`` longer than the caller would wait."""

    def __init__(self, action_id: str, timeout: float) -> None:
        super().__init__(408, "approval_timeout", f"no decision on {action_id} within {timeout}s")
        self.action_id = action_id
        self.timeout = timeout


class PolicyError(GuardError, ValueError):
    """Raised when a policy is malformed; ``.problems`` holds every ``(field path, problem)``."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        lines = "; ".join(f"{path}: {problem}" for path, problem in problems)
        super().__init__(400, "bad_request", f"invalid policy: {lines}")
        self.problems = problems


class InvalidInput(_Fixed, ValueError):
    """Raised for malformed arguments: bad costs, non-JSON or oversized inputs, bad ids."""

    status = 400
    code = "bad_request"


class PayloadTooLarge(GuardError):
    """Raised by the server for a request body larger than its limit; nothing was read further."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, "payload_too_large", f"request body is larger than {limit} bytes")
        self.limit = limit


class TooManyWaits(_Fixed):
    """429: the server already holds as many long-polls as it allows (for this token, or in all).

    ``.retry_after`` is the seconds to wait before asking again (the ``Retry-After`` header);
    ``AgentClient.wait_for_approval`` does so by itself.
    """

    status = 429
    code = "too_many_waits"

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Forbidden(_Fixed):
    """Raised when the caller's role may not perform the operation (agents reporting harm)."""

    status = 403
    code = "forbidden"


class NotFound(_Fixed):
    """Raised for an unknown agent."""

    status = 404
    code = "not_found"


class UnknownAction(NotFound):
    """Raised for an action id the agent never requested."""

    code = "unknown_action"


class Conflict(_Fixed):
    """Raised when the ledger's current state forbids the operation."""

    status = 409
    code = "conflict"


class AgentExists(Conflict):
    """Raised by ``create_agent``/``spawn`` when the agent id is taken."""

    code = "agent_exists"


class InvalidState(Conflict):
    """Raised when an action is not in a state the operation accepts (approve or report twice)."""

    code = "invalid_state"


class AlreadyTerminated(Conflict):
    """Raised by ``terminate`` on an agent that is already terminated."""

    code = "already_terminated"


class AlreadyConsumed(Conflict):
    """Raised by ``consume`` when the action was consumed before (a replay)."""

    code = "already_consumed"


class ConsumeMismatch(Conflict):
    """Raised by ``consume`` when tool, input or cost differ from the recorded action."""

    code = "consume_mismatch"


class IdempotencyConflict(Conflict):
    """Raised when an idempotency key is reused with a different payload."""

    code = "idempotency_conflict"


class IdempotencyInProgress(Conflict):
    """Raised when a call with the same idempotency key is still running elsewhere."""

    code = "idempotency_in_progress"


class StoreError(_Fixed):
    """Raised when the store fails (I/O, locking, corruption)."""

    status = 500
    code = "internal"


class LedgerTampered(StoreError):
    """Raised for an agent whose ledger failed verification; it is quarantined, others go on."""

    status = 503
    code = "quarantined"


class GuardUnavailable(StoreError):
    """Raised by the HTTP clients when the guard server cannot be reached."""

    status = 503
    code = "unavailable"


class SetupError(_Fixed):
    """Raised by ``connect_admin`` and ``find_admin_token`` (as Lineage's client does).

    ``.message`` is the sentence that says how to fix the setup.
    """

    status = 503
    code = "setup"


class DeliveryFailed(_Fixed):
    """Raised by a notification sink (``guardkit.notify``) that could not deliver an event;
    the delivery worker records ``.message`` and tries again later."""

    status = 502
    code = "delivery_failed"


class NoAgentConfigured(GuardStop):
    """Raised at a guarded call site (a tool, a gated model turn) when no agent guard is set.

    It fails closed: with no guard to ask, nothing runs. ``for_site`` words the remedies.
    """

    def __init__(self, message: str) -> None:
        super().__init__(500, "no_agent", message)

    @classmethod
    def for_site(cls, site: str, problem: str = "") -> NoAgentConfigured:
        """The error for ``site`` (``"tool call"``, ``"model turn"``) with every way to fix it."""
        why = f" ({problem})" if problem else ""
        return cls(
            f"no agent guard is configured for this {site}{why}, so nothing was run. Configure "
            "one: set GUARDKIT_AGENT (with GUARDKIT_DB and optionally GUARDKIT_POLICY for an "
            "embedded guard, or GUARDKIT_URL and GUARDKIT_TOKEN for a guard server) in the "
            "environment; or call guardkit.use_agent(agent) first; or pass guard= to "
            "guardkit.tool / decorate with agent.tool(...); in pytest, request the guard_agent "
            "fixture of guardkit's plugin"
        )


class TurnDenied(GuardStop):
    """Raised by ``guardkit.model_turn()`` when the guard refuses a model turn (``llm_turn``).

    The agent must stop: its turns are spent, it is terminated, or it is rate limited.
    ``.message`` is the sentence for a log or the user.
    """

    def __init__(self, action_id: str | None, reason: Reason) -> None:
        code = str(reason.get("code", "denied"))
        super().__init__(403, code, f"model turn refused: {describe_reason(reason)}")
        self.action_id = action_id
        self.reason = reason


class GuardFailed(GuardStop):
    """Raised at a guarded call site when the guard itself failed, so nothing was run.

    Its store could not be opened, read or written, its ledger does not verify, or its server
    could not be reached. The agent must stop: an ``except Exception`` around a tool call lets it
    through, so no model is told "internal error" as a tool's result and goes on unrecorded.
    ``.status`` and ``.code`` are those of the failure (``__cause__``, a ``StoreError``).
    """

    def __init__(self, message: str, *, status: int = 500, code: str = "internal") -> None:
        super().__init__(status, code, message)

    @classmethod
    def at(cls, site: str, failure: StoreError) -> GuardFailed:
        """The error for ``site`` (``"tool call 'pay'"``, ``"model turn"``) the store failed."""
        return cls(
            f"the guard failed during this {site}, so the agent must stop (nothing runs without "
            f"a recorded decision): {failure.message}",
            status=failure.status,
            code=failure.code,
        )
