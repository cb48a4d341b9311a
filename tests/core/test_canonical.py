"""Canonical JSON: the C encoder built once gives the bytes ``json.dumps`` gives (LINEAGE §14)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardkit._canonical import canonical_json, check_json_value

#: What the guard accepts: Unicode text (no lone surrogates) and integers Lineage can hold.
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)))
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=25,
)


@given(values)
def test_canonical_json_is_sorted_compact_raw_utf8(value: Any) -> None:
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(value) == expected
    assert check_json_value(value) is None


@pytest.mark.parametrize("bad", [math.nan, {"a": [math.inf]}, -math.inf])
def test_non_finite_numbers_are_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        canonical_json(bad)
    assert "non-finite" in (check_json_value(bad) or "")


@pytest.mark.parametrize(
    ("bad", "words"),
    [({1: "x"}, "non-string key"), ({"a": {1, 2}}, "set"), ([b"x"], "bytes")],
)
def test_what_is_not_json_is_named(bad: Any, words: str) -> None:
    assert words in (check_json_value(bad) or "")
