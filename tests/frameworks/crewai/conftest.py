"""The CrewAI tests run in their own virtualenv (``make test-crewai``): crewai pins ``mcp<2`` and
OpenTelemetry >= 1.45.1, which the dev extras (``mcp>=2.3``, google-adk's OpenTelemetry <= 1.44)
exclude. There ``GUARDKIT_TEST_CREWAI=1`` is set and a missing crewai fails the run; in the main
suite the tests that need crewai are skipped.

CrewAI's telemetry and trace uploads are switched off before crewai is first imported: the tests
run offline. Only CrewAI's own switches: this conftest is loaded by the main suite too, where
``OTEL_SDK_DISABLED`` would switch the tracing tests' OpenTelemetry SDK off.
"""

from __future__ import annotations

import os

for _name, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("CREWAI_DISABLE_TRACKING", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
):
    os.environ.setdefault(_name, _value)
