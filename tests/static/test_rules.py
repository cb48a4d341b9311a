"""Every rule's VALID and INVALID examples, collected from the registered rules (Fixit style)."""

from __future__ import annotations

from pathlib import Path

import pytest
from guardkit.codemods.docs import render_rules
from guardkit.codemods.rules import RULES, Invalid, Rule, Valid
from guardkit.codemods.testing import check_example, codemod_for
from guardkit.codemods.transforms import TRANSFORMS

CASES = [
    pytest.param(rule, example, id=f"{rule.ID}-{type(example).__name__.lower()}-{n}")
    for rule in RULES
    for n, example in enumerate((*rule.VALID, *rule.INVALID))
] + [
    pytest.param(rule, Valid(code=rule.USE_INSTEAD), id=f"{rule.ID}-use-instead") for rule in RULES
]


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_example(rule: type[Rule], example: Valid | Invalid) -> None:
    check_example(rule, example)


def test_enough_examples_of_each_kind() -> None:
    assert len(CASES) >= 60
    for rule in RULES:
        assert rule.VALID, rule.ID
        assert rule.INVALID, rule.ID


def test_ids_are_stable_and_unique() -> None:
    ids = [rule.ID for rule in RULES]
    assert ids == ["GK101", "GK102", "GK201", "GK202", "GK301", "GK302"]
    assert len({rule.name() for rule in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.ID)
def test_rule_module_is_named_for_its_class(rule: type[Rule]) -> None:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in rule.__name__).lstrip("_")
    assert rule.__module__.rsplit(".", 1)[1] == snake
    assert rule.EXPLANATION.strip()
    assert rule.FIX.strip()
    assert rule.LIMITS.strip()
    assert "{symbol}" in rule.MESSAGE


def test_one_declaration_of_which_codemod_fixes_which_rule() -> None:
    by_name = {t.__name__: t for t in TRANSFORMS}
    for rule in RULES:
        transform = codemod_for(rule)
        if transform is None:
            assert not any(e.expected_fix for e in rule.INVALID), rule.ID
            continue
        assert rule.ID in transform.RULES
        assert any(e.expected_fix for e in rule.INVALID), f"{rule.ID}: no example of its fix"
    for name, transform in by_name.items():
        fixed = {r.ID for r in RULES if name == r.FIXED_BY}
        if not fixed:
            # an alternative fix applied first where it fits (a framework's integration instead
            # of per-tool decorators): each rule it removes still has its own codemod
            primary = {r.ID: r.FIXED_BY for r in RULES}
            assert transform.RULES, f"{name} fixes no rule"
            assert all(primary.get(rule) not in (None, name) for rule in transform.RULES), name
            continue
        assert set(transform.RULES) == fixed, name


def test_docs_rules_md_is_current() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    assert docs.read_text() == render_rules(), (
        "docs/rules.md is stale: python -m guardkit.codemods.docs > docs/rules.md"
    )
