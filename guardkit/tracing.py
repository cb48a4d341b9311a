"""OpenTelemetry spans and log-based events for every guard decision; off (a no-op) by default.

Turn it on with per-process providers::

    from guardkit import tracing
    tracing.enable(tracer_provider=provider, logger_provider=logger_provider)

or with the standard environment (``OTEL_TRACES_EXPORTER=console|otlp``, read once at import;
``OTEL_LOGS_EXPORTER`` picks the exporter of the log events on its own). Without OpenTelemetry
installed, that environment gives one warning naming ``pip install 'guardkit[otel]'`` and tracing
stays off: importing guardkit never fails for it.
While off, every function here returns one shared no-op object after a single global check:
no span objects, and ``opentelemetry`` is never imported.

The guarded tool wrapper and the loop use it like this::

    with tracing.tool_span("search", agent_id="bot", call_id="call_1") as span:
        decision = agent.request("search", args)
        span.decision(decision)
        if decision["decision"] == "pending_approval":
            with span.approval_wait(decision["action_id"], timeout=300) as wait:
                wait.status(agent.wait_for_approval(decision["action_id"]))

Spans follow the OTel GenAI conventions (``execute_tool {tool}``, ``invoke_agent {agent}``,
``chat {model}``); the decision goes on the span as ``guardkit.*`` attributes (names in
``guardkit._semconv``). A denial sets status ERROR and ``error.type`` (one of
``_semconv.ERROR_TYPES``); an allowed call leaves the status unset. Argument and result content
is recorded only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` opts in.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from guardkit import _semconv as sc
from guardkit import _spans
from guardkit._spans import AgentSpan, ChatSpan, GuardCallSpan, ToolSpan, error_type
from guardkit._version import __version__

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from opentelemetry.trace import TracerProvider

__all__ = [
    "agent_span",
    "chat_span",
    "current_tool",
    "disable",
    "enable",
    "enable_for_cli",
    "enable_from_environment",
    "error_type",
    "guard_call_span",
    "is_enabled",
    "tool_span",
    "TracingUnavailable",
]

_OTEL_MISSING = (
    "guardkit tracing needs OpenTelemetry: pip install 'guardkit[otel]' "
    "(and opentelemetry-sdk for exporters)"
)
_CONTENT_ON = {"true", "1", "yes", "span_only", "span_and_event"}

#: Checked first by every entry point: the whole cost of tracing while it is off.
_ENABLED = False


# -- switching on and off ------------------------------------------------------------------


def enable(
    *,
    tracer_provider: TracerProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    capture_content: bool | None = None,
) -> None:
    """Start emitting spans (and ``guardkit.decision`` log events) through these providers.

    Without arguments the global providers are used. ``capture_content`` defaults to the
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` setting.
    """
    global _ENABLED  # noqa: PLW0603 - a module global is the < 1 µs off switch
    try:
        from opentelemetry import _logs, trace
    except ImportError as exc:  # pragma: no cover - exercised in the run without the otel extra
        raise ImportError(_OTEL_MISSING) from exc
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer("guardkit", __version__)
    logs = logger_provider or _logs.get_logger_provider()
    capture = _content_from_env() if capture_content is None else capture_content
    logger = logs.get_logger("guardkit", __version__)
    _spans.set_state(_spans.State(tracer, logger, capture, _spans.Otel.load()))
    _ENABLED = True


def disable() -> None:
    """Stop emitting; every entry point is a no-op again."""
    global _ENABLED  # noqa: PLW0603 - see enable()
    _ENABLED = False
    _spans.set_state(None)


def is_enabled() -> bool:
    return _ENABLED


def _content_from_env(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(sc.CAPTURE_CONTENT_ENV, "").strip().lower() in _CONTENT_ON


class TracingUnavailable(RuntimeWarning):
    """The environment asks for tracing, but OpenTelemetry (the ``otel`` extra) is missing."""


def enable_from_environment(environ: Mapping[str, str] = os.environ) -> bool:
    """Enable when ``OTEL_TRACES_EXPORTER`` names an exporter (and the SDK is not disabled).

    A global SDK provider someone already installed (``opentelemetry-instrument``) is used as
    is; otherwise a provider with the named exporter (``console`` or ``otlp``) is built, its log
    events exported as ``OTEL_LOGS_EXPORTER`` says (default: ``otlp`` for ``otlp`` traces, none
    for ``console``). Without OpenTelemetry installed it warns once (``TracingUnavailable``,
    naming the extra) and leaves tracing off. Returns whether tracing is now on. Called once when
    this module is imported.
    """
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not exporter or exporter == "none":
        return False
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    try:
        from opentelemetry import trace
    except ImportError:
        _warn_missing(f"OTEL_TRACES_EXPORTER={exporter}")
        return False

    if type(trace.get_tracer_provider()).__name__ != "ProxyTracerProvider":
        enable(capture_content=_content_from_env(environ))
        return True
    kind = exporter.split(",")[0].strip()
    default_logs = "otlp" if kind == "otlp" else "none"
    logs = environ.get("OTEL_LOGS_EXPORTER", "").strip().lower() or default_logs
    try:
        enable_for_cli(kind, logs=logs.split(",")[0].strip())
    except ImportError as exc:
        _warn_missing(f"OTEL_TRACES_EXPORTER={exporter}", str(exc))
        return False
    return True


def _warn_missing(setting: str, why: str = _OTEL_MISSING) -> None:
    text = f"{setting} asks for traces, but {why}; tracing stays off"
    try:
        warnings.warn(text, TracingUnavailable, stacklevel=2)
    except TracingUnavailable:
        # A filter turned warnings into errors (``-W error``, pytest's ``filterwarnings``):
        # importing guardkit must still work, so the same sentence goes to the log instead.
        logging.getLogger("guardkit").warning("%s: %s", TracingUnavailable.__name__, text)


def enable_for_cli(kind: str, *, logs: str | None = None) -> Callable[[], None]:
    """Enable with an SDK provider exporting to ``console`` or ``otlp`` (OTLP over HTTP).

    Used by ``guardkit demo --trace console|otlp``. ``logs`` is the exporter of the log events
    (``console``, ``otlp`` or ``none``; default: the same as ``kind``). Returns a function that
    flushes and shuts the providers down; call it before the process exits.
    """
    if kind not in ("console", "otlp"):
        raise ValueError(f"unknown trace exporter {kind!r}: use 'console' or 'otlp'")
    logs = kind if logs is None else logs
    if logs not in ("console", "otlp", "none"):
        raise ValueError(f"unknown log exporter {logs!r}: use 'console', 'otlp' or 'none'")
    try:
        from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
        from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    except ImportError as exc:
        raise ImportError(_OTEL_MISSING) from exc
    tracer_provider = SdkTracerProvider()
    logger_provider = SdkLoggerProvider()
    _EXPORTERS[kind](tracer_provider, None)
    if logs != "none":
        _EXPORTERS[logs](None, logger_provider)
    enable(tracer_provider=tracer_provider, logger_provider=logger_provider)

    def shutdown() -> None:
        disable()
        tracer_provider.shutdown()
        logger_provider.shutdown()

    return shutdown


def _console_exporters(tracer_provider: Any, logger_provider: Any) -> None:
    from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    if tracer_provider is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    if logger_provider is not None:
        logger_provider.add_log_record_processor(
            SimpleLogRecordProcessor(ConsoleLogRecordExporter())
        )


def _otlp_exporters(tracer_provider: Any, logger_provider: Any) -> None:
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ImportError(
            "--trace otlp needs the OTLP exporter: pip install 'guardkit[otel]' "
            "(opentelemetry-exporter-otlp-proto-http)"
        ) from exc
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if tracer_provider is not None:
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    if logger_provider is not None:
        logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))


#: Adds a kind's exporter to the providers given (None: that signal is not exported this way).
_EXPORTERS: dict[str, Callable[[Any, Any], None]] = {
    "console": _console_exporters,
    "otlp": _otlp_exporters,
}


# -- the no-op -------------------------------------------------------------------------------


class _NoopSpan:
    """What every entry point returns while tracing is off: one shared, stateless object."""

    __slots__ = ()

    def __enter__(self) -> _NoopSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def decision(
        self,
        decision: Mapping[str, Any],
        *,
        check: str | None = None,
        agent_id: str | None = None,
    ) -> None:
        return None

    def error(self, exc: BaseException) -> None:
        return None

    def replay(self, action_id: str | None = None) -> None:
        return None

    def fail(self, kind: str, description: str) -> None:
        return None

    def result(self, value: Any) -> None:
        return None

    def status(self, status: str) -> None:
        return None

    def turn_denied(self, decision: Mapping[str, Any]) -> None:
        return None

    def finish(self, outcome: str, turns: int) -> None:
        return None

    def reply(self, reply: Any) -> None:
        return None

    def approval_wait(self, action_id: str, timeout: float | None = None) -> _NoopSpan:
        return self


_NOOP = _NoopSpan()


# -- entry points ----------------------------------------------------------------------------


def tool_span(
    tool: str,
    *,
    agent_id: str | None = None,
    call_id: str | None = None,
    agent_name: str | None = None,
    conversation_id: str | None = None,
    arguments: Any = None,
) -> ToolSpan | _NoopSpan:
    """The ``execute_tool {tool}`` span of one guarded call; start it before asking the guard."""
    if not _ENABLED:
        return _NOOP
    return ToolSpan(tool, agent_id, call_id, agent_name, conversation_id, arguments)


def agent_span(
    agent_id: str | None,
    *,
    agent_name: str | None = None,
    provider: str | None = None,
    conversation_id: str | None = None,
) -> AgentSpan | _NoopSpan:
    """The ``invoke_agent {agent}`` span around one run of the loop."""
    if not _ENABLED:
        return _NOOP
    return AgentSpan(agent_id, agent_name, provider, conversation_id)


def chat_span(
    *, model: str | None = None, provider: str | None = None, agent_id: str | None = None
) -> ChatSpan | _NoopSpan:
    """The ``chat {model}`` span of one model turn (the ``llm_turn`` decision goes on it)."""
    if not _ENABLED:
        return _NOOP
    return ChatSpan(model, provider, agent_id)


def current_tool() -> ToolSpan | _NoopSpan:
    """The ``execute_tool`` span of the guarded call running now (the no-op when there is none)."""
    if not _ENABLED:
        return _NOOP
    return _spans.TOOL.get() or _NOOP


def guard_call_span(method: str, *, agent_id: str | None = None) -> GuardCallSpan | _NoopSpan:
    """A CLIENT span around one round trip to a guard server (``request``, ``action``...)."""
    if not _ENABLED:
        return _NOOP
    return GuardCallSpan(method, agent_id)


enable_from_environment()
