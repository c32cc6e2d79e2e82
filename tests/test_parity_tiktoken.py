"""Id-for-id parity with the tiktoken package, for every encoding, on real and generated text."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge

from conftest import ENCODINGS

FAST = ["r50k_base", "cl100k_base", "o200k_base"]  # one per split pattern


@pytest.fixture(scope="module")
def pair(tiktoken_module):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = (tiktoken_module.get_encoding(name), tokenforge.get_encoding(name))
        return cache[name]

    return get


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@pytest.mark.parametrize("name", ENCODINGS)
def test_corpora_encode_ordinary(pair, name, corpus_texts):
    ref, enc = pair(name)
    for label, text in corpus_texts.items():
        expected, got = ref.encode_ordinary(text), enc.encode_ordinary(text)
        if expected != got:
            i = first_difference(expected, got)
            pytest.fail(f"{name} on {label}: first difference at token {i}: "
                        f"{ref.decode(expected[max(0, i - 3):i + 3])!r} vs {enc.decode(got[max(0, i - 3):i + 3])!r}")
        assert enc.decode(got) == text


@pytest.mark.parametrize("name", ENCODINGS)
def test_vocabulary_metadata(pair, name):
    ref, enc = pair(name)
    assert enc.n_vocab == ref.n_vocab
    assert enc.max_token_value == ref.max_token_value
    assert enc.eot_token == ref.eot_token
    assert enc.special_tokens_set == ref.special_tokens_set
    assert enc.token_byte_values() == ref.token_byte_values()
    assert enc.name == ref.name


@pytest.mark.parametrize("name", FAST)
def test_every_code_point(pair, name):
    # All code points in runs mixed with the characters the patterns treat specially.
    ref, enc = pair(name)
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for start in range(0, len(chars), 4096):
        block = chars[start:start + 4096]
        text = "".join(c + ("a" if i % 3 == 0 else " " if i % 3 == 1 else "'s") for i, c in enumerate(block))
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), f"block at U+{start:04X}"
        plain = "".join(block)
        assert enc.encode_ordinary(plain) == ref.encode_ordinary(plain), f"block at U+{start:04X}"


@pytest.mark.parametrize("name", FAST)
def test_contractions_after_every_letter(pair, name):
    ref, enc = pair(name)
    letters = [chr(c) for c in range(0x20, 0x3000) if not 0xD800 <= c < 0xE000]
    text = "".join(f"x'{c}" + f"'{c}{c}" + " " for c in letters)
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


# An alphabet that stresses every branch of the three patterns: spaces of several kinds, CR/LF,
# letters of each case class, marks, digits, apostrophes and contraction letters, punctuation.
TRICKY = list(" \t\n\r\u00a0\u3000\u2028\x0b\x1c'sStTdlLvVreRmM/.!,-_aAZz09\u0301\u0308ſǅʰ中あÀé١²Ⅻ😀<|>")


@pytest.mark.parametrize("name", FAST)
@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(TRICKY), max_size=60))
def test_tricky_alphabet(pair, name, text):
    ref, enc = pair(name)
    assert enc.encode_ordinary(text) == ref.encode_ordinary(text)


@pytest.mark.parametrize("name", FAST)
@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=80))
def test_arbitrary_unicode(pair, name, text):
    ref, enc = pair(name)
    ids = enc.encode_ordinary(text)
    assert ids == ref.encode_ordinary(text)
    assert enc.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())


@pytest.mark.parametrize("name", FAST)
def test_lone_surrogates(pair, name):
    ref, enc = pair(name)
    for text in ["\ud800", "a\udfffb", "\ud83d\ude00", "x\ud83d", "\udc00\ud800 z", "😀\ud800😀"]:
        assert enc.encode(text) == ref.encode(text), repr(text)
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text), repr(text)
        assert enc.encode_batch([text, "ok"]) == ref.encode_batch([text, "ok"])


@pytest.mark.parametrize("name", FAST)
def test_pathological_inputs(pair, name):
    ref, enc = pair(name)
    import random

    rng = random.Random(0)
    cases = [
        "a" * 1_000_000,
        " " * 1_000_000,
        "\n" * 100_000 + " " * 100_000,
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(300_000)),
        "😀" * 100_000,
        "1" * 100_001,
        "'s" * 100_000,
    ]
    for text in cases:
        try:
            expected = ref.encode_ordinary(text)
        except BaseException:  # tiktoken's regex engine overflows its stack on some of these
            # (o200k on a megabyte of spaces); then split with `regex` and BPE with tiktoken.
            import regex

            expected = [i for p in regex.findall(ref._pat_str, text) for i in ref._encode_single_piece(p.encode())]
        assert enc.encode_ordinary(text) == expected, repr(text[:20])


@pytest.mark.parametrize("name", ENCODINGS)
def test_golden_ids(pair, name):
    # Small golden examples, checked against tiktoken rather than typed in.
    ref, enc = pair(name)
    for text in ["hello world", "Hello, World!", " leading space", "tokenforge  is   fast\n\n", "1234567"]:
        assert enc.encode(text) == ref.encode(text)


@pytest.mark.parametrize("name", FAST)
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_decode_encode_roundtrip(pair, name, text):
    _, enc = pair(name)
    assert enc.decode(enc.encode_ordinary(text)) == text
    assert enc.decode_bytes(enc.encode(text, disallowed_special=())) == text.encode("utf-8")


@pytest.mark.parametrize("name", FAST)
def test_batches_on_two_threads_equal_tiktoken(tiktoken_module, name, corpus_texts):
    # On several threads a batch puts every piece it merges into the process's big tier at its
    # first merge (BytePairModel::BatchText), and the other thread finds it there. A fresh
    # Encoding (a model of its own, nothing of it in the tiers yet), documents of 2,000 characters
    # whose words recur from one document to the next (so each thread meets pieces the other
    # merged), both batch outputs against tiktoken per document.
    from tokenforge.registry import ENCODING_CONSTRUCTORS

    ref = tiktoken_module.get_encoding(name)
    enc = tokenforge.Encoding(name, **ENCODING_CONSTRUCTORS[name]())
    text = corpus_texts["stdlib"][:400_000] + corpus_texts["multilingual"] + corpus_texts["tinystories"][:200_000]
    docs = [text[i:i + 2000] for i in range(0, len(text), 2000)]
    expected = [ref.encode_ordinary(d) for d in docs]
    for _ in range(2):  # (the second time, the pieces are in the tiers)
        assert enc.encode_ordinary_batch(docs, num_threads=2) == expected
        ids, offsets = enc.encode_batch_to_numpy(docs, num_threads=2, disallowed_special=())
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
