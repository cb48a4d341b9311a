"""``escape_hidden``: every hidden character written as its escape, and nothing else touched."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from guardkit._visible import _escape, escape_hidden, hidden_in, is_hidden


def _one_by_one(text: str) -> str:
    return "".join(_escape(ch) if is_hidden(ch) else ch for ch in text)


#: Text that mixes the characters that matter: hidden ones of each kind, astral ones (emoji,
#: tags), controls, and anything else.
_TEXT = st.text(
    st.one_of(
        st.sampled_from("\u202e\u200b\u2066\ufeff\u034f\u3164\ufe0f\u2028\x1b\x00\t\n\r"),
        st.sampled_from("\U000e0041\U000e007f\U000e0100\U0001f600\U0001d400\U00020000"),
        st.characters(codec="utf-8"),
    )
)


@given(_TEXT)
def test_the_fast_path_escapes_exactly_what_the_character_test_says(text: str) -> None:
    assert escape_hidden(text) == _one_by_one(text)
    assert hidden_in(text) == {ch for ch in text if is_hidden(ch)}


@given(st.dictionaries(_TEXT, _TEXT, max_size=4))
def test_an_escaped_json_document_stays_valid_and_equal(document: dict[str, str]) -> None:
    text = json.dumps(document, ensure_ascii=False)
    assert json.loads(escape_hidden(text)) == document


def test_plain_text_comes_back_as_it_was() -> None:
    text = "line one\nline two\twith a tab, é and 😀\r\n"
    assert escape_hidden(text) == text
    assert escape_hidden("invoice\u202efdp.exe") == "invoice\\u202efdp.exe"
    assert escape_hidden("tag\U000e0041") == "tag\\udb40\\udc41"
