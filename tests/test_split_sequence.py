"""The native sequence of isolated splits (`_core.SplitSequence`, DeepSeek V3's pre-tokenizer) gives
the pieces the Python stages give, and a tokenizer with such a pre-tokenizer encodes through it."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import _core, decoders, patterns
from tokenforge.models import ByteBPE
from tokenforge import pre_tokenizers as P

SEQUENCES = {
    "deepseek_v3": list(patterns.DEEPSEEK_V3),
    "digits_then_gpt2": [r"\p{N}{1,3}", patterns.GPT2],
    "anchors_and_lookahead": [r"^\s+|\s+$", r"\s+(?!\S)|\p{L}+", r"(?i:'s|'t)"],
}
SAMPLES = [
    "", "Hello world", "In 2024, 速い茶色の狐 jumped 12345 times!!\n\n  ok", "ひらがなカタカナ漢字123abc",
    "  leading and trailing  ", "don't STOP it's", "\r\n\r\n\t x", "😀👍🏽 e\u0301 naïve",
]
TEXT = st.text(st.characters(codec="utf-8"), max_size=60) | st.text(" \n\r\t0123456789aZ'!,.-ー速い", max_size=40)


def python_pieces(pats, text):
    seq = P.Sequence([P.Split(p, "isolated") for p in pats])
    return [(s, e) for _, s, e in seq.pieces(text)]


@pytest.mark.parametrize("name", SEQUENCES)
def test_samples_match_the_python_stages(name):
    native = _core.SplitSequence(SEQUENCES[name])
    for text in SAMPLES:
        spans = native.spans(text)
        assert spans == python_pieces(SEQUENCES[name], text), text
        assert native.pieces(text) == [text[s:e].encode() for s, e in spans]


@pytest.mark.parametrize("name", SEQUENCES)
@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_arbitrary_text_matches_the_python_stages(name, text):
    assert _core.SplitSequence(SEQUENCES[name]).spans(text) == python_pieces(SEQUENCES[name], text)


def test_patterns_outside_the_subset_are_refused():
    with pytest.raises(ValueError):
        _core.SplitSequence([r"\p{N}", r"(a)\1"])  # a backreference
    with pytest.raises(ValueError):
        _core.SplitSequence([])


def _deepseek_like(pre):
    ranks = {bytes([i]): i for i in range(256)}
    for token in (b"He", b"llo", b"Hello", b" wor", b"ld", b"12", b"123", "速い".encode()):
        ranks.setdefault(token, len(ranks))
    return tokenforge.Tokenizer(ByteBPE(ranks), pre_tokenizer=pre, decoder=decoders.ByteLevel(),
                                special_tokens={"<|end|>": len(ranks)})


def test_a_tokenizer_with_the_sequence_encodes_through_it():
    splits = [P.Split(p, "isolated") for p in patterns.DEEPSEEK_V3]
    native = _deepseek_like(P.Sequence([*splits, P.ByteLevel(use_regex=False)]))
    assert isinstance(native._matcher, _core.SplitSequence)
    # The same stages with one that the native sequence does not take (merged_with_next) run one
    # by one in Python; on text where that stage changes nothing the ids must agree.
    python = _deepseek_like(P.Sequence([*splits, P.Split("\x00", "merged_with_next"), P.ByteLevel(use_regex=False)]))
    assert not isinstance(getattr(python, "_matcher", None), _core.SplitSequence)
    for text in SAMPLES + ["Hello world 1234567 速い<|end|>Hello"]:
        assert native.encode(text, allowed_special="all") == python.encode(text, allowed_special="all"), text
        assert native.decode(native.encode(text, allowed_special="all")) == text


_NATIVE = None


@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_pieces_encode_where_they_lie(text):
    """encode_split (the pieces encoded in place) gives the ids of the pieces as bytes, and those of
    the Python stages (text without NUL, which the extra stage there would split at)."""
    global _NATIVE
    if _NATIVE is None:
        splits = [P.Split(p, "isolated") for p in patterns.DEEPSEEK_V3]
        _NATIVE = (_deepseek_like(P.Sequence([*splits, P.ByteLevel(use_regex=False)])),
                   _deepseek_like(P.Sequence([*splits, P.Split("\x00", "merged_with_next"), P.ByteLevel(use_regex=False)])))
    native, python = _NATIVE
    engine, seq = native._engine, native._matcher
    ids = engine.encode_split(text, seq)
    assert ids == engine.encode_pieces(seq.pieces(text))
    if "\x00" not in text:
        assert ids == python.encode(text)


def test_encode_split_refuses_other_objects():
    native = _deepseek_like(P.Sequence([P.Split(p, "isolated") for p in patterns.DEEPSEEK_V3]
                                       + [P.ByteLevel(use_regex=False)]))
    with pytest.raises(TypeError):
        native._engine.encode_split("text", object())
