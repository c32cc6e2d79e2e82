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


def test_a_byte_that_may_start_a_match_at_every_offset_after_a_dead_run():
    # A stage that rarely matches (DeepSeek's digits, its CJK runs) passes over the bytes on which
    # no match can start 16 at a time; the first digit, letter of another script or newline must
    # stop it wherever it lies in those blocks (the first and last digit of a range included).
    for name, pats in SEQUENCES.items():
        native = _core.SplitSequence(pats)
        for live in ["0", "5", "9", "9999", "1234567", "速い", "ー", "é", "\n", "\r\n"]:
            for k in range(40):
                text = ("abc def, ghi! " * 4)[:k] + live + ("abc def, ghi! " * 4)[k:] + " end"
                assert native.spans(text) == python_pieces(pats, text), (name, live, k)


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


BATCH_TEXT = st.lists(st.lists(st.sampled_from(["<|end|>", "Hello", " wor", "ld", "12345", " ", "\n", "速い", "é", "ﬁ",
                                                "\ud800", "<|end", "x"]), max_size=12).map("".join), max_size=8)


def _added_token_pipelines():
    splits = [P.Split(p, "isolated") for p in patterns.DEEPSEEK_V3]
    seq = _deepseek_like(P.Sequence([*splits, P.ByteLevel(use_regex=False)]))
    from tokenforge import normalizers
    from tokenforge.special import AddedToken

    ranks = {bytes([i]): i for i in range(256)}
    for token in (b"He", b"llo", b"Hello", b" wor", b"ld", b"12", b"123", "速い".encode(), b"fi"):
        ranks.setdefault(token, len(ranks))
    plain = tokenforge.Tokenizer(ByteBPE(ranks), normalizer=normalizers.NFKC(),
                                 pre_tokenizer=P.ByteLevel(add_prefix_space=False), decoder=decoders.ByteLevel(),
                                 added_tokens=[AddedToken("<|end|>", len(ranks), special=True),
                                               AddedToken("wor", len(ranks) + 1, lstrip=True)])
    assert plain._engine is not None and plain._engine_splits and not plain._fast
    return seq, plain


_PIPELINES = None


@settings(max_examples=150, deadline=None)
@given(texts=BATCH_TEXT, threads=st.sampled_from([1, 2, 3]))
def test_batches_with_added_tokens_equal_one_by_one(texts, threads):
    """encode_batch of a pipeline with added tokens (the stretches between them batched natively:
    a split sequence, or the engine's own pattern after a normalizer) equals encode per text."""
    global _PIPELINES
    if _PIPELINES is None:
        _PIPELINES = _added_token_pipelines()
    for tok in _PIPELINES:
        assert tok.encode_batch(texts, num_threads=threads, allowed_special="all") == \
            [tok.encode(t, allowed_special="all") for t in texts]
        try:  # the default policy: the same ids, or the same error (a disallowed special token)
            expected = [tok.encode(t) for t in texts]
        except ValueError:
            with pytest.raises(ValueError):
                tok.encode_batch(texts, num_threads=threads)
        else:
            assert tok.encode_batch(texts, num_threads=threads) == expected
