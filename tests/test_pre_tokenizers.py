"""Pre-tokenizers: the same pieces as Hugging Face's on every code point and on the corpora; the
native splitter against the regex definition."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge import pre_tokenizers as P

hp = pytest.importorskip("tokenizers.pre_tokenizers")

ALL = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
PAIRS = [
    (P.Whitespace(), hp.Whitespace()),
    (P.WhitespaceSplit(), hp.WhitespaceSplit()),
    (P.BertPreTokenizer(), hp.BertPreTokenizer()),
    (P.Punctuation(), hp.Punctuation()),
]


def hf_pieces(pre, text):
    return [p for p, _ in pre.pre_tokenize_str(text)]


@pytest.mark.parametrize("ours,theirs", PAIRS, ids=lambda p: type(p).__name__)
def test_equal_to_hf_on_every_code_point(ours, theirs):
    text = "".join("a" + c for c in ALL)
    assert ours.split(text) == hf_pieces(theirs, text)


@pytest.mark.parametrize("ours,theirs", PAIRS, ids=lambda p: type(p).__name__)
def test_equal_to_hf_on_the_corpora(corpus_texts, ours, theirs):
    for name, text in corpus_texts.items():
        if name == "stdlib":
            text = text[:300_000]
        assert ours.split(text) == hf_pieces(theirs, text), name


@pytest.mark.parametrize("pre", [p for p, _ in PAIRS], ids=lambda p: type(p).__name__)
def test_native_equals_regex_on_the_corpora(corpus_texts, pre):
    for name, text in corpus_texts.items():
        assert pre.split(text) == pre.split_reference(text), name


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",))))
def test_native_equals_regex(text):
    for pre, _ in PAIRS:
        assert pre.split(text) == pre.split_reference(text)


def test_examples_and_edges():
    assert P.Whitespace().split("Hello, world!! it's") == ["Hello", ",", "world", "!!", "it", "'", "s"]
    assert P.BertPreTokenizer().split("Hello, world!!") == ["Hello", ",", "world", "!", "!"]
    assert P.Punctuation().split("a, b") == ["a", ",", " b"]
    assert P.WhitespaceSplit().split(" a\u3000b\n") == ["a", "b"]
    for pre, _ in PAIRS:
        assert pre.split("") == [] and pre.split(" \t\n") == ([" \t\n"] if isinstance(pre, P.Punctuation) else [])
    assert P.NoPreTokenizer().split("a b") == ["a b"] and P.NoPreTokenizer().split("") == []
    assert P.Whitespace().split("a\ud800b") == ["a", "\ufffd", "b"]  # lone surrogate -> U+FFFD


def test_regex_patterns():
    text = "Hello world's  123456 \n\n x"
    assert P.Regex("gpt2").split(text) == ["Hello", " world", "'s", " ", " 123456", " \n\n", " x"]
    assert P.Regex("cl100k").split("123456") == ["123", "456"]
    assert "".join(P.Regex("o200k").split(text)) == text
    assert P.Regex(r"\S+").split(" a  b ") == ["a", "b"]


def test_descriptions():
    for pre in [p for p, _ in PAIRS] + [P.Regex("gpt2"), P.NoPreTokenizer()]:
        assert P.from_dict(pre.to_dict()) == pre
    assert isinstance(P.resolve("bert"), P.BertPreTokenizer) and isinstance(P.resolve(None), P.NoPreTokenizer)
    assert isinstance(P.resolve("cl100k"), P.Regex)
    with pytest.raises(ValueError, match="Regex"):
        P.resolve("bert_pre")  # a typo is an error, not a regex that matches the typo
    with pytest.raises(ValueError):
        P.from_dict({"type": "Nope"})


def test_sequence_refuses_chained_byte_levels():
    # Each ByteLevel maps the bytes to characters again, doubling non-ASCII text each time: a
    # hostile tokenizer.json with 20 of them never finished encoding (tests/regressions/fuzz_load).
    from tokenforge import pre_tokenizers as P
    from tokenforge.stage import StageError

    P.Sequence([P.Split(r"\s+", "isolated"), P.ByteLevel(use_regex=False)])  # one: fine
    for stages in ([P.ByteLevel(use_regex=False), P.ByteLevel(use_regex=False)],
                   [P.ByteLevel(use_regex=False), P.Sequence([P.ByteLevel(use_regex=False)])]):
        with pytest.raises(StageError, match="2 ByteLevel"):
            P.Sequence(stages)
