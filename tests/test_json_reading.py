"""formats/_common.parse_json reads tokenizer.json files with orjson when it is installed, checked
against counts read from the text; the result must be json.loads' whatever the text (duplicate keys
refused and named, integers of any size, floats, escapes, deep nesting), on generated documents and
on the hostile cases orjson reads differently."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge import _core
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


def text_shape_reference(s: bytes) -> tuple[int, int, int]:
    """_core.json_text_shape as a loop over the bytes: (object members, numbers with a fraction or
    an exponent, deepest nesting) outside strings, or (-1, -1, -1) for an unterminated string."""
    members = floats = depth = deepest = 0
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == ord('"'):  # to the closing quote: one not preceded by an odd run of backslashes
            start = i
            while True:
                i = s.find(b'"', i + 1)
                if i < 0:
                    return (-1, -1, -1)
                slashes = 0
                while i - slashes - 1 > start and s[i - slashes - 1] == ord("\\"):
                    slashes += 1
                if slashes % 2 == 0:
                    break
        elif c == ord(":"):
            members += 1
        elif c in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in b"]}":
            depth -= depth > 0
        elif c == ord("-") or ord("0") <= c <= ord("9"):
            fraction = False
            while i < n and (s[i] in b"-+.eE" or ord("0") <= s[i] <= ord("9")):
                fraction = fraction or s[i] in b".eE"
                i += 1
            floats += fraction
            i -= 1
        i += 1
    return (members, floats, deepest)


@settings(max_examples=400, deadline=None)
@given(values, st.booleans(), st.booleans(), st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(
    [b'"', b"\\", b'\\"', b":", b"[", b"}", b"1.5e3", b"-", b" " * 20, "é中".encode()])), max_size=3))
def test_text_shape_counts_as_the_reference(value, ascii_only, indent, edits):
    """The counts parse_json checks orjson against, on JSON text and on text with bytes put in anywhere
    (quotes, backslashes before quotes, structure, numbers, long runs of spaces; the native scan
    looks for quotes 16 bytes at a time)."""
    data = bytearray(json.dumps(value, ensure_ascii=ascii_only, indent=2 if indent else None).encode("utf-8"))
    for pos, piece in edits:
        pos %= len(data) + 1
        data[pos:pos] = piece
    assert tuple(_core.json_text_shape(bytes(data))) == text_shape_reference(bytes(data))


@pytest.mark.parametrize("before", range(0, 40))
def test_text_shape_finds_the_closing_quote_at_every_offset(before):
    for body in (b"a" * before, b"a" * before + b'\\"' + b"b" * 5, b"\\\\" * (before // 2)):
        for data in (b'{"k' + body + b'": 1.5, "x": [2]}', b'"' + body, b'["' + body + b'"]'):
            assert tuple(_core.json_text_shape(data)) == text_shape_reference(data), data
