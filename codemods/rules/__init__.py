"""The registered static rules, in id order."""

from __future__ import annotations

from .base import Invalid, Rule, Valid
from .denial_escapes_loop import DenialEscapesLoop
from .model_supplied_cost import ModelSuppliedCost
from .unbounded_model_loop import UnboundedModelLoop
from .ungated_model_call import UngatedModelCall
from .unguarded_tool import UnguardedTool
from .unguarded_tool_dispatch import UnguardedToolDispatch

__all__ = ["RULES", "RULES_BY_ID", "Invalid", "Rule", "Valid"]

RULES: tuple[type[Rule], ...] = (
    UnboundedModelLoop,
    UngatedModelCall,
    UnguardedTool,
    UnguardedToolDispatch,
    ModelSuppliedCost,
    DenialEscapesLoop,
)
RULES_BY_ID: dict[str, type[Rule]] = {rule.ID: rule for rule in RULES}
