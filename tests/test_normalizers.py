"""Normalizers: the same strings as Hugging Face's on every code point and on the corpora; the
checked-in Unicode classes; composition; the file description."""

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge import normalizers as N

hn = pytest.importorskip("tokenizers.normalizers")

ALL = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
# Code points that are unassigned in this Python's Unicode tables: HF's Rust tables may be newer.
ASSIGNED = "".join(c for c in ALL if unicodedata.category(c) != "Cn")


def interleaved(chars: str) -> list[str]:
    """Each character alone between letters, in chunks (HF's alignments are quadratic in the
    number of insertions within one string)."""
    text = "".join("a" + c for c in chars)
    return [text[i : i + 4096] for i in range(0, len(text), 4096)]


@pytest.mark.parametrize("clean_text,chinese,strip,lower", [
    (True, True, None, True), (True, True, None, False), (False, False, True, False), (True, False, False, True),
])
def test_bert_normalizer_equals_hf_on_every_code_point(clean_text, chinese, strip, lower):
    ours = N.BertNormalizer(clean_text=clean_text, handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower)
    theirs = hn.BertNormalizer(clean_text=clean_text, handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower)
    for text in interleaved(ASSIGNED):
        assert ours(text) == theirs.normalize_str(text)


@pytest.mark.parametrize("ours,theirs,nfd_first", [
    (N.StripAccents(), hn.StripAccents(), True),
    (N.StripAccents(), hn.StripAccents(), False),
    (N.Lowercase(), hn.Lowercase(), False),
    (N.NFC(), hn.NFC(), False),
])
def test_simple_normalizers_equal_hf_on_every_code_point(ours, theirs, nfd_first):
    # U+11938: Python's NFD decomposes it, HF's tables do not (documented in normalizers.py)
    for text in interleaved(ASSIGNED.replace("\U00011938", "")):
        if nfd_first:
            text = unicodedata.normalize("NFD", text)
        assert ours(text) == theirs.normalize_str(text)


def test_nfd_and_compatibility_forms_equal_hf_on_the_corpora(corpus_texts):
    for ours, theirs in ((N.NFD(), hn.NFD()), (N.NFKC(), hn.NFKC()), (N.NFKD(), hn.NFKD())):
        for name, text in corpus_texts.items():
            assert ours(text) == theirs.normalize_str(text), (ours, name)


def test_sequences_equal_hf_on_the_corpora(corpus_texts):
    ours = N.Sequence([N.NFD(), N.StripAccents(), N.Lowercase(), N.Strip(), N.Replace(r"\d+", "<num>")])
    theirs = hn.Sequence([hn.NFD(), hn.StripAccents(), hn.Lowercase(), hn.Strip(), hn.Replace(hn_regex(r"\d+"), "<num>")])
    for name, text in corpus_texts.items():
        assert ours(text) == theirs.normalize_str(text), name


def hn_regex(pattern):
    from tokenizers import Regex

    return Regex(pattern)


def test_collapse_whitespace_and_strip():
    text = " \t a \n\n b\u00a0\u3000c\r\n  "
    assert N.CollapseWhitespace()(text) == " a b c "
    assert N.Sequence([N.CollapseWhitespace(), N.Strip()])(text) == "a b c"
    assert N.Strip(left=False)(text) == " \t a \n\n b\u00a0\u3000c"
    assert N.Strip()("   ") == "" and N.CollapseWhitespace()("") == ""


def test_lowercase_is_per_character():
    # str.lower() would give a final sigma; HF (and tokenforge) map each character alone
    assert N.Lowercase()("ΟΔΟΣ ΟΔΟΣ.") == "οδοσ οδοσ."
    assert N.Lowercase()("İ") == "i\u0307"


def test_replace_is_literal_and_checked():
    assert N.Replace(r"(a)", r"\1x")("aba") == r"\1xb\1x"
    with pytest.raises(ValueError):
        N.Replace("", "x")
    with pytest.raises(TypeError):
        N.Replace("a", None)


def test_strip_accents_decompose():
    assert N.StripAccents(decompose=True)("café naïve Å") == "cafe naive A"
    assert N.StripAccents()("café") == "café"  # composed é is not a mark: decompose first (as HF)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_descriptions_round_trip(text):
    seq = N.Sequence([N.NFKC(), N.BertNormalizer(strip_accents=False), N.Replace("x+", "y"), N.Strip(right=False),
                      N.CollapseWhitespace(), N.StripAccents(decompose=True)])
    back = N.from_dict(seq.to_dict())
    assert back == seq and back(text) == seq(text)


def test_unknown_description():
    with pytest.raises(ValueError):
        N.from_dict({"type": "Nope"})
    assert N.from_dict(None) is None
    with pytest.raises(TypeError):
        N.resolve("lowercase")


# Line breaks of every kind, combining marks that compose or reorder across them, compatibility
# characters, Hangul jamo: normalizing line by line must give what one call gives.
_LINE_TEXT = st.text(st.sampled_from(list("ae \n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
                                     + ["\u0301", "\u0323", "\u0308", "\u0345", "\u1161", "\u11a8", "\u1100",
                                        "ﬁ", "…", "，", "Ａ", "①", "ｶ", "\u3099", "か", "é", "\u212b"]), max_size=80)


@settings(max_examples=500, deadline=None)
@given(text=_LINE_TEXT, form=st.sampled_from(["NFC", "NFD", "NFKC", "NFKD"]))
def test_normalizing_line_by_line_equals_one_call(text, form):
    from tokenforge.normalizers.unicode import normalize_lines

    assert normalize_lines(form, text, min_length=0) == unicodedata.normalize(form, text)
