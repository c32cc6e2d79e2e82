"""`_core.LiteralFinder` (added tokens found by the native Aho-Corasick matcher) finds what the
alternation of the literals, longest first, finds with `regex.finditer`, and AddedVocabulary keeps
its answers on text with lone surrogates (the finder refuses those; the alternation serves them)."""

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge import _core
from tokenforge.special import AddedToken, AddedVocabulary

ALPHABET = "ab<|>｜速 \n"
LITERALS = st.lists(st.text(ALPHABET, min_size=1, max_size=5), min_size=1, max_size=12, unique=True)


def alternation(literals, text):
    keys = sorted(literals, key=len, reverse=True)
    return [(m.start(), m.end(), m.group()) for m in regex.compile("|".join(map(regex.escape, keys))).finditer(text)]


@settings(max_examples=400, deadline=None)
@given(literals=LITERALS, text=st.text(ALPHABET, max_size=60))
def test_finds_what_the_alternation_finds(literals, text):
    found = [(s, e, literals[k]) for s, e, k in _core.LiteralFinder(literals).find_all(text)]
    assert found == alternation(literals, text)


def test_many_literals_and_offsets_in_code_points():
    literals = [f"<｜place▁holder▁no▁{i}｜>" for i in range(1500)] + ["<|EOT|>"]
    text = "速い <|EOT|> x<｜place▁holder▁no▁12｜><｜place▁holder▁no▁1｜>" * 3
    assert [(s, e, literals[k]) for s, e, k in _core.LiteralFinder(literals).find_all(text)] == alternation(literals, text)


def test_empty_literals_are_refused_and_surrogates_raise():
    with pytest.raises(ValueError):
        _core.LiteralFinder(["a", ""])
    with pytest.raises(UnicodeEncodeError):
        _core.LiteralFinder(["a"]).find_all("a\ud800a")


def test_added_vocabulary_on_text_with_lone_surrogates():
    vocab = AddedVocabulary([AddedToken("<|x|>", 5, special=True), AddedToken("ab", 6)])
    assert vocab.split("q\ud800<|x|>ab", "all") == [("q\ud800", None), ("<|x|>", 5), ("ab", 6)]
    assert vocab.split("q<|x|>ab", "all") == [("q", None), ("<|x|>", 5), ("ab", 6)]
