"""Stored JSON text is json.dumps(v, ensure_ascii=False, separators=(",", ":"))'s, whichever
encoder writes it: for any JSON-like value (floats, integers past 64 bits, lone surrogates,
control characters, deep nesting included)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit_core.logs.jsontext import compact_json


def _standard(v: object) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_values)
def test_the_text_is_the_standard_encoders_for_any_value(v):
    assert compact_json(v) == _standard(v)


def test_by_hand_the_cases_where_orjson_would_write_otherwise():
    assert compact_json({"text": "a\x1fb\u2028c é", "rank": 3}) == '{"text":"a\\u001fb\u2028c é","rank":3}'
    assert compact_json({"score": 1e-07}) == '{"score":1e-07}'  # orjson: 1e-7
    assert compact_json([float("nan")]) == "[NaN]"  # orjson: null
    assert compact_json(2**64) == "18446744073709551616"  # orjson refuses it
    assert compact_json("\ud800") == '"\ud800"'  # a lone surrogate: orjson refuses it
    assert compact_json({1: "a"}) == '{"1":"a"}'  # a non-string key
    deep: list = []
    for _ in range(300):  # past orjson's nesting limit (254)
        deep = [deep]
    assert compact_json(deep) == _standard(deep)
