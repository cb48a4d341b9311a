"""Provenance labels for a call's arguments, and the ``require = "trusted"`` rule check."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardkit.checks.checkset import CheckSet
from guardkit.decisions import Denial, DenyCode, Reason, Severity
from guardkit.provenance import current_provenance

__all__ = ["label_arguments"]


def label_arguments(
    checks: CheckSet, arguments: Mapping[str, Any], record: dict[str, Any]
) -> Denial | None:
    """Label argument values by provenance; check ``require = "trusted"`` rules.

    A failed rule is a ``Denial``; with ``on_untrusted="approval"`` its reason carries
    ``"needs": "approval"`` and the pipeline asks a human instead of denying.
    """
    provenance = current_provenance()
    if provenance is None:
        if checks.provenance:
            return _untrusted(
                next(iter(checks.provenance)),
                None,
                [],
                "deny",
                "no Provenance is active, so no value can be trusted",
            )
        return None
    labels = {
        arg: provenance.labels(value)
        for arg, value in arguments.items()
        if isinstance(value, (str, int, float)) and not isinstance(value, bool)
    }
    record["provenance"] = labels
    for argument, rules in checks.provenance.items():
        value = arguments.get(argument)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if item is None or provenance.trusted(item):
                continue
            mode = "deny" if any(r.on_untrusted == "deny" for r in rules) else "approval"
            return _untrusted(
                argument,
                item,
                provenance.labels(item),
                mode,
                "it does not occur in any trusted source",
            )
    return None


def _untrusted(argument: str, value: Any, labels: list[str], mode: str, why: str) -> Denial:
    sources = [label for label in labels if "untrusted:" in label] or labels
    where = f" (found in {', '.join(sources)})" if sources else ""
    reason: Reason = {
        "code": DenyCode.UNTRUSTED_PROVENANCE.value,
        "argument": argument,
        "sources": labels,
        "message": f"{argument}={value!r}: {why}{where}",
    }
    if mode == "approval":
        # The pipeline sends the call to a human with this reason (``AsksApproval``); an agent
        # guard that can't is denied without a scar (the model was misled, not malicious).
        reason["needs"] = "approval"
    return Denial(reason=reason, severity=Severity.MINOR if mode == "deny" else None)
