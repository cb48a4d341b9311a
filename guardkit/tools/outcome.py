"""The one step every way in reports an allowed action's outcome with.

``report(action_id, "failure", why, fault="caller")`` is what the decorators, the MCP proxy and
each framework integration yield to record a call's one outcome. A failure that was not the
agent's (``fault="upstream"``: a server or a model provider failed; ``"caller"``: the run or its
caller cancelled the call) is recorded with its fault and leaves no scar.
"""

from __future__ import annotations

from guardkit.decisions import FaultName
from guardkit.tools.flow import Flow, Op

__all__ = ["DETAIL_MAX", "report"]

#: The longest outcome detail reported (a tool's error text, a usage line); the rest is cut.
DETAIL_MAX = 2000


def report(action_id: str, status: str, detail: str = "", fault: FaultName = "agent") -> Flow[None]:
    """Report ``action_id``'s outcome, ``detail`` cut to ``DETAIL_MAX`` characters."""
    # ``fault`` is passed only when it is not the agent's: an agent guard of the protocol's
    # first version, which has no ``fault`` keyword, still takes every report it can record.
    options = None if fault == "agent" else {"fault": fault}
    yield Op("report", (action_id, status, detail[:DETAIL_MAX]), options=options)
