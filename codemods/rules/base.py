"""The rule base class and the example types every rule carries (Fixit style)."""

from __future__ import annotations

import abc
import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..analysis.facts import ModuleFacts
from ..findings import Finding

__all__ = ["Invalid", "Rule", "Valid"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Valid:
    """A snippet the rule must not flag."""

    code: str
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Invalid:
    """A snippet the rule must flag at ``line``/``column`` (1-based line, 0-based column).

    ``expected_fix`` is the code the rule's codemod (``FIXED_BY``) must turn it into; ``None``
    means the finding is reported as not fixable and the codemod leaves the snippet alone.
    """

    code: str
    line: int
    column: int
    note: str = ""
    expected_fix: str | None = None


class Rule(abc.ABC):
    """A static rule: a stable id, a message, an explanation, fix advice and examples.

    ``FIXED_BY`` is the one declaration of which codemod fixes the rule (the codemods read
    their ``RULES`` from it); ``USE_INSTEAD`` is code the rule accepts, shown in the docs and
    checked as a valid example; ``LIMITS`` says what the rule knowingly misses or over-reports.
    """

    ID: ClassVar[str]
    MESSAGE: ClassVar[str]
    EXPLANATION: ClassVar[str]
    FIX: ClassVar[str]
    USE_INSTEAD: ClassVar[str]
    LIMITS: ClassVar[str]
    FIXED_BY: ClassVar[str | None] = None
    VALID: ClassVar[tuple[Valid, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    @classmethod
    def name(cls) -> str:
        return cls.__name__

    @classmethod
    def title(cls) -> str:
        """``UnboundedModelLoop`` -> ``Unbounded model loop``."""
        words = re.findall(r"[A-Z][a-z]*", cls.__name__)
        return " ".join([words[0], *(w.lower() for w in words[1:])])

    @classmethod
    @abc.abstractmethod
    def check(cls, facts: ModuleFacts, path: str) -> Iterator[Finding]:
        """The rule's findings in one module; every rule defines it."""

    @classmethod
    def finding(
        cls,
        path: str,
        node: ast.AST,
        *,
        symbol: str,
        fixable: bool,
        end: tuple[int, int] | None = None,
        **fields: str,
    ) -> Finding:
        line = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0)
        if end is None:
            end = (
                getattr(node, "end_lineno", None) or line,
                getattr(node, "end_col_offset", None) or column,
            )
        return Finding(
            path=path,
            line=line,
            column=column,
            end_line=end[0],
            end_column=end[1],
            rule=cls.ID,
            symbol=symbol,
            message=cls.MESSAGE.format(symbol=symbol, **fields),
            fixable=fixable,
        )


def header_end(node: ast.AST) -> tuple[int, int]:
    """End of the first line of a compound statement's header (``while cond``, ``def name``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        prefix = "async def " if isinstance(node, ast.AsyncFunctionDef) else "def "
        return node.lineno, node.col_offset + len(prefix) + len(node.name)
    head = getattr(node, "test", None) or getattr(node, "iter", None)
    if (
        isinstance(head, ast.expr)
        and head.end_lineno is not None
        and head.end_col_offset is not None
    ):
        return head.end_lineno, head.end_col_offset
    return getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
