"""formats/_common.parse_json reads tokenizer.json files with orjson when it is installed, checked
against counts read from the text; the result must be json.loads' whatever the text (duplicate keys
refused and named, integers of any size, floats, escapes, deep nesting), on generated documents and
on the hostile cases orjson reads differently."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge.formats import _common

orjson = pytest.importorskip("orjson")

scalars = st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
                      max_leaves=40)


@settings(max_examples=300)
@given(values, st.booleans(), st.booleans())
def test_parse_json_is_json_loads(value, ascii_only, indent):
    data = json.dumps(value, ensure_ascii=ascii_only, indent=2 if indent else None).encode("utf-8")
    assert repr(_common.parse_json(data, "f.json")) == repr(json.loads(data))


@pytest.mark.parametrize("text", [
    '{"vocab": {"a": 1, "b": 2, "a": 3}}',            # orjson keeps the last "a"
    '{"x": [{"k": 1, "k": 1}]}',
    '{"a\\u0062": 1, "ab": 2}',                         # equal once unescaped
])
def test_duplicate_keys_are_named(text):
    with pytest.raises(ValueError, match="f.json: the key .* appears twice"):
        _common.parse_json(text.encode(), "f.json")


@pytest.mark.parametrize("text", [
    '{"id": 18446744073709551616}',                    # orjson: a float
    '{"id": -18446744073709551617, "s": "1e5 : ["}',   # number-like text and a colon inside a string
    '{"x": NaN, "y": Infinity}',                        # json alone accepts these
    '\ufeff{"a": 1}',                                   # a byte order mark
    '{"a": "\\ud800"}',                                 # a lone surrogate
    '{"a": "q\\"\\\\", "b": [1.5e3, -0, 2E-2]}',
    "[" * 150 + "]" * 150,                              # deeper than the fast path takes
])
def test_what_orjson_reads_differently_is_read_by_json(text):
    data = text.encode("utf-8")
    assert repr(_common.parse_json(data, "f.json")) == repr(json.loads(data))


def test_deep_nesting_is_a_value_error_not_a_crash():
    with pytest.raises(ValueError, match="f.json"):  # orjson 3.8 overflows the stack on this
        _common.parse_json(b'{"a":' * 100000 + b"1" + b"}" * 100000, "f.json")
