"""Test helpers for guardkit's rules and codemods (importable from any test folder).

``assert_codemod`` checks a before/after pair plus the fix-time invariants: a second run changes
nothing, and a scan of the result reports none of the fixable findings of the rules it fixes.
``check_example`` turns one of a rule's VALID/INVALID snippets into assertions; an INVALID
snippet's ``expected_fix`` is proven through ``assert_codemod`` with the rule's ``FIXED_BY``.
"""

from __future__ import annotations

import textwrap
from typing import Any

from libcst.codemod import (
    CodemodContext,
    TransformFailure,
    TransformSkip,
    TransformSuccess,
    transform_module,
)

from .config import Config
from .findings import Finding
from .rules import Invalid, Rule, Valid
from .scanner import scan_source
from .transforms import TRANSFORMS, FindingCodemod

__all__ = ["assert_codemod", "check_example", "codemod_for", "dedent", "findings_of"]


def dedent(code: str) -> str:
    """Dedent a triple-quoted snippet and drop its leading newline."""
    return textwrap.dedent(code).lstrip("\n")


def findings_of(code: str, rule: str | None = None, config: Config | None = None) -> list[Finding]:
    result = scan_source(dedent(code), "snippet.py", config)
    assert result.error is None, result.error
    return [f for f in result.findings if rule is None or f.rule == rule]


def _run(transform: type[FindingCodemod], code: str, **kwargs: Any) -> str | None:
    result = transform_module(transform(CodemodContext(filename="snippet.py"), **kwargs), code)
    if isinstance(result, TransformFailure):
        raise AssertionError(f"{transform.__name__} failed: {result.error}")
    if isinstance(result, TransformSkip):
        return None
    assert isinstance(result, TransformSuccess)
    return result.code


def assert_codemod(
    transform: type[FindingCodemod], before: str, after: str | None, **kwargs: Any
) -> None:
    """``after=None`` means the codemod must skip the file (nothing to do)."""
    before = dedent(before)
    produced = _run(transform, before, **kwargs)
    if after is None:
        assert produced is None, f"expected a skip, got:\n{produced}"
        return
    after = dedent(after)
    assert produced == after, f"--- expected\n{after}\n--- got\n{produced}"
    again = _run(transform, produced, **kwargs)
    assert again is None, f"second run changed the code:\n{again}"
    left = [f for f in findings_of(produced) if f.rule in transform.RULES and f.fixable]
    assert not left, f"scan still reports fixed rules: {left}"


def codemod_for(rule: type[Rule]) -> type[FindingCodemod] | None:
    """The codemod named by ``rule.FIXED_BY`` (``None`` for a rule without one)."""
    if rule.FIXED_BY is None:
        return None
    by_name = {t.__name__: t for t in TRANSFORMS}
    assert rule.FIXED_BY in by_name, f"{rule.ID}.FIXED_BY names no codemod: {rule.FIXED_BY}"
    return by_name[rule.FIXED_BY]


def check_example(rule: type[Rule], example: Valid | Invalid) -> None:
    """Assert one VALID (no finding of ``rule``) or INVALID (a finding at line/column) example.

    An INVALID example with ``expected_fix`` must be fixable and its codemod must produce that
    code (with ``assert_codemod``'s invariants); one without must be reported as not fixable.
    """
    found = findings_of(example.code, rule.ID)
    if isinstance(example, Valid):
        assert not found, f"{rule.ID} flagged a valid example: {found}"
        return
    at = [f for f in found if (f.line, f.column) == (example.line, example.column)]
    assert at, f"{rule.ID} expected at {example.line}:{example.column}, got {found}"
    transform = codemod_for(rule)
    if example.expected_fix is None:
        assert not any(f.fixable for f in at), f"{rule.ID} example is fixable: give expected_fix"
        return
    assert transform is not None, f"{rule.ID} has an expected_fix but no FIXED_BY"
    assert all(f.fixable for f in at), f"{rule.ID} finding not fixable: {at}"
    assert_codemod(transform, example.code, example.expected_fix)
