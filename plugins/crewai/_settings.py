"""What a ``guard`` call decided for the agents it took, and how the hooks find it again."""

from __future__ import annotations

from typing import Any

from .._settings import CostFn, GuardSettings

__all__ = ["SETTINGS", "CostFn", "GuardSettings", "settings_of"]

#: On a guarded agent: the settings of the latest ``guard`` call that took it.
SETTINGS = "_guardkit_settings"


def settings_of(agent: Any) -> GuardSettings | None:
    """The settings of a guarded agent (or of the agent a ``LiteAgent`` runs for)."""
    for candidate in (agent, getattr(agent, "original_agent", None)):
        settings = getattr(candidate, SETTINGS, None)
        if isinstance(settings, GuardSettings):
            return settings
    return None
