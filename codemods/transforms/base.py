"""The base of guardkit's codemods: a libcst ``VisitorBasedCodemodCommand`` driven by findings.

Each codemod scans the module with the stdlib-``ast`` analysis for the one rule it fixes, keeps
the fixable findings' start positions as targets, and raises ``SkipFile`` when there are none, so
an already-fixed file is skipped (and a second run changes nothing). Imports are scheduled with
``AddImportsVisitor`` and added after the transform, by libcst's deferred mechanism.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from typing import ClassVar

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand
from libcst.metadata import PositionProvider
from libcst.metadata.base_provider import ProviderT

from ..analysis.env import Env
from ..config import Config
from ..rules import RULES as RULE_CLASSES
from ..scanner import analyse_source

__all__ = ["FindingCodemod", "rules_fixed_by"]


def rules_fixed_by(codemod: str) -> tuple[str, ...]:
    """The ids of the rules whose ``FIXED_BY`` names ``codemod`` (the one declaration)."""
    return tuple(rule.ID for rule in RULE_CLASSES if codemod == rule.FIXED_BY)


class FindingCodemod(VisitorBasedCodemodCommand):
    """Fix the fixable findings of ``RULES`` at their start positions.

    ``RULES`` is derived from the rules' ``FIXED_BY`` when a subclass is defined (unless the
    subclass lists them itself).
    """

    RULES: ClassVar[tuple[str, ...]] = ()
    #: rules whose findings it mends where it recognises the code, even those the scan reports
    #: as not fixable (``fix`` runs it when one is found)
    MENDS: ClassVar[tuple[str, ...]] = ()
    METADATA_DEPENDENCIES: ClassVar[Collection[ProviderT]] = (PositionProvider,)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.RULES = cls.__dict__.get("RULES") or rules_fixed_by(cls.__name__)

    def __init__(
        self,
        context: CodemodContext,
        max_turns: int = 25,
        config: Config | None = None,
        env: Env | None = None,
        module_name: str = "",
    ) -> None:
        super().__init__(context)
        self.config = config or Config(max_turns=max_turns)
        #: the module's environment in the project (``None``: analysed on its own)
        self.env = env
        self.module_name = module_name
        self.is_package = (context.filename or "").endswith("__init__.py")
        self.targets: set[tuple[int, int]] = set()
        #: names of the tools the codemod put under the guard, when it can tell (for the
        #: policy skeleton)
        self.gated: set[str] = set()

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--max-turns", type=int, default=25, help="turn limit for BoundModelLoops"
        )

    def finding_targets(self, code: str) -> set[tuple[int, int]]:
        """Start positions of the fixable findings of ``RULES`` in ``code``."""
        path = self.context.filename or "<module>"
        config = Config(
            select=self.RULES, max_turns=self.config.max_turns, catalog=self.config.catalog
        )
        result, _, _ = analyse_source(
            code.encode(), path, config, name=self.module_name, env=self.env, force=True
        )
        return {(f.line, f.column) for f in result.findings if f.fixable}

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        self.targets = self.finding_targets(tree.code)
        if not self.targets:
            raise SkipFile("nothing to fix")
        return tree.visit(self)

    def is_target(self, node: cst.CSTNode) -> bool:
        start = self.get_metadata(PositionProvider, node).start
        return (start.line, start.column) in self.targets
