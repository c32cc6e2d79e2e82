"""The binding converts each str to UTF-8 itself (cpp/str_utf8.h), from CPython's 1, 2 or 4
bytes per code point, instead of asking CPython (which would keep its copy inside the str): the
ids must be those of the str's UTF-8 for every kind of str, ASCII runs crossing the 8-unit blocks
at every alignment, and the str must come back without a UTF-8 copy attached."""

import sys

import pytest

import numpy as np
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge

# One alphabet per kind of str: ASCII only, Latin-1 (1 byte per code point), UCS-2, UCS-4.
_KINDS = {
    "ascii": "ab Z.\n'1",
    "latin1": "ab Z.\n'1éÿ\u00a0×",
    "ucs2": "ab Z.\n'1é€—ДжΩ中\u3000ー\u0301",
    "ucs4": "ab Z.\n'1é中😀\U00020000\U0010ffff",
}


def _fresh(text: str) -> str:
    """A new str object equal to text: tiktoken (like any caller of PyUnicode_AsUTF8AndSize) leaves
    a UTF-8 copy inside the strs it encodes, which tokenforge would then read instead of converting."""
    return (text + "x")[:-1]


def _text(kind):
    return st.text(alphabet=st.sampled_from(list(_KINDS[kind])), max_size=80)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(_KINDS)), data=st.data())
def test_every_kind_of_str_encodes_as_its_utf8(kind, data):
    text = data.draw(_text(kind))
    name = data.draw(st.sampled_from(["cl100k_base", "o200k_base", "gpt2"]))
    expected = tiktoken.get_encoding(name).encode_ordinary(text)
    ours = tokenforge.get_encoding(name)
    assert ours.encode_ordinary(_fresh(text)) == expected
    assert ours.encode(_fresh(text), disallowed_special=()) == expected
    assert ours.encode(_fresh(text)) == expected  # (the special-token check converts too)
    assert ours.encode_to_numpy(_fresh(text)).tolist() == expected


def test_ascii_runs_at_every_alignment():
    enc, ref = tokenforge.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    for wide in ["é", "€", "😀"]:
        for before in range(20):
            for after in range(20):
                text = "a" * before + wide + " word" * (after // 5) + "b" * after
                assert enc.encode_ordinary(_fresh(text)) == ref.encode_ordinary(text), (wide, before, after)


# Byte for byte: byte-level BPE decodes to exactly the bytes it encoded, so the converter's output
# comes back whole. Code points of every UTF-8 length, placed at every position of the converter's
# 8-unit blocks (ASCII blocks are narrowed at once, any other block one code point at a time),
# in strs of every kind.
@pytest.mark.parametrize("widest", ["\u00ff", "\uffff", "\U0010ffff"], ids=["latin1", "ucs2", "ucs4"])
def test_conversion_is_the_utf8_of_the_str_byte_for_byte(widest):
    enc = tokenforge.get_encoding("cl100k_base")
    wide = [c for c in ["\u0080", "é", "\u07ff", "\u0800", "中", "\ud7ff", "\ue000", "\uffff", "😀",
                        "\U0010ffff"] if c <= widest]
    base = "ab cd ef gh ij kl mn op qr st"
    for length in range(26):
        for at in range(length + 1):
            for c in wide:
                text = _fresh(base[:at] + c + base[at:length] + widest)  # (widest: the str's kind)
                assert enc.decode_bytes(enc.encode_ordinary(text)) == text.encode(), (text, at)


# Blocks of 8 code points below U+0800, ASCII and two-byte mixed, are converted in one step
# (cpp/str_utf8.h, two_byte8): every mix of the two in a block (256), at every offset of the
# blocks, in Latin-1 and UCS-2 strs, with the two-byte code points at both ends of their range.
@pytest.mark.parametrize("two_byte", ["\u0080\u00e9\u00ff", "\u0100\u0416\u07ff"], ids=["latin1", "ucs2"])
def test_blocks_of_one_and_two_byte_code_points(two_byte):
    enc = tokenforge.get_encoding("o200k_base")
    for mix in range(256):
        block = "".join(two_byte[k % 3] if mix >> k & 1 else "az .0\n'x"[k] for k in range(8))
        for offset in range(8):
            text = _fresh("b" * offset + block * 3 + "\u0800"[:mix % 2] + block[:offset])
            assert enc.decode_bytes(enc.encode_ordinary(text)) == text.encode(), (mix, offset)


# Blocks of 8 code points of any UTF-8 length up to 3 (CJK with ASCII and others) are converted 4
# at a time (cpp/str_utf8.h, bmp8): 3,000 blocks of code points drawn from the three lengths (all
# 81 mixes of a half occur), at every offset, with the ends of each range, and a block with a
# lone surrogate (replaced, as tiktoken does).
def test_blocks_of_code_points_of_every_length_below_four():
    import random

    enc, ref = tokenforge.get_encoding("o200k_base"), tiktoken.get_encoding("o200k_base")
    lengths = [["a", " ", "\x7f"], ["\u0080", "\u0416", "\u07ff"], ["\u0800", "中", "\ud7ff", "\ue000", "\uffff"]]
    rng = random.Random(22)
    for k in range(3000):
        block = "".join(rng.choice(lengths[(k // 3 ** (j % 4)) % 3 if j < 4 else rng.randrange(3)])
                        for j in range(8))
        offset = k % 8
        text = _fresh("b" * offset + block * 3 + block[:offset])
        assert enc.decode_bytes(enc.encode_ordinary(text)) == text.encode(), (block, offset)
    text = "中文 and 한국어 " * 3 + "\ud800" + " 日本語のテキスト" * 3
    assert enc.encode_ordinary(_fresh(text)) == ref.encode_ordinary(text)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_conversion_of_any_text_is_its_utf8(text):
    enc = tokenforge.get_encoding("o200k_base")
    assert enc.decode_bytes(enc.encode_ordinary(_fresh(text))) == text.encode()
    assert enc.decode_bytes(enc.encode_to_numpy(_fresh(text)).tolist()) == text.encode()


def test_no_utf8_copy_is_left_in_the_str():
    enc = tokenforge.get_encoding("cl100k_base")
    for make in [lambda: "café au lait " * 20, lambda: "Режим списку — 中文 " * 20, lambda: "😀 emoji " * 20]:
        for call in [enc.encode_ordinary, enc.encode, enc.encode_to_numpy, lambda t: enc.encode_batch([t, t]),
                     lambda t: enc.encode_ordinary_batch([t], num_threads=1)]:
            text = make()[:-1]  # a new str object
            size = sys.getsizeof(text)
            call(text)
            assert sys.getsizeof(text) == size


def test_lone_surrogates_are_replaced_as_tiktoken_does():
    enc, ref = tokenforge.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    for text in ["\ud800", "a\udfffb", "é\ud83d", "中\ud800文 " * 3, "😀\udc00"]:
        assert enc.encode_ordinary(_fresh(text)) == ref.encode_ordinary(text)
        assert enc.encode(_fresh(text)) == ref.encode(text)
        assert np.array_equal(enc.encode_to_numpy(_fresh(text)), ref.encode_ordinary(text))


# Batches convert each str in the thread that encodes it.
@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(*[_text(kind) for kind in sorted(_KINDS)]), max_size=12),
       threads=st.sampled_from([1, 2, 8]))
def test_batches_of_every_kind_of_str(texts, threads):
    enc, ref = tokenforge.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    expected = [ref.encode_ordinary(t) for t in texts]
    assert enc.encode_ordinary_batch([_fresh(t) for t in texts], num_threads=threads) == expected
    assert enc.encode_batch([_fresh(t) for t in texts], num_threads=threads) == expected
    ids, offsets = enc._engine.encode_batch_to_numpy([_fresh(t) for t in texts], b"", threads)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    flat, counts = enc._engine.encode_ordinary_batch_flat([_fresh(t) for t in texts], [-1] * len(texts), threads)
    assert flat.tolist() == [i for row in expected for i in row] and list(counts) == [len(r) for r in expected]


def test_numpy_arrays_are_plain_writable_arrays_that_own_their_ids():
    """The arrays come from numpy's C API (bindings/numpy_arrays.cpp): each is a 1-D uint32
    array, writable, C-contiguous, with ids of its own: the next call, which reuses the engine's
    buffer, and the tokenizer's going away change nothing in an array already returned."""
    import gc

    enc, ref = tokenforge.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    texts = ["hello world, twice over", "", "中文 and Ελληνικά " * 50]
    first = enc.encode_to_numpy(_fresh(texts[0]))
    arrays = [enc.encode_to_numpy(_fresh(t)) for t in texts]
    ids, offsets = enc._engine.encode_batch_to_numpy([_fresh(t) for t in texts], b"", 2)
    flat, _ = enc._engine.encode_ordinary_batch_flat([_fresh(t) for t in texts], [-1] * len(texts), 2)
    del enc
    gc.collect()
    for array in (first, *arrays, ids, flat):
        assert array.dtype == np.uint32 and array.ndim == 1
        assert array.flags.writeable and array.flags.c_contiguous
    assert offsets.dtype == np.int64 and offsets.tolist()[0] == 0
    assert first.tolist() == ref.encode_ordinary(texts[0])
    assert [a.tolist() for a in arrays] == [ref.encode_ordinary(t) for t in texts]
    assert ids.tolist() == flat.tolist() == [i for t in texts for i in ref.encode_ordinary(t)]
    arrays[2][:] = 7  # its own memory: the others are untouched
    assert arrays[2].tolist() == [7] * len(arrays[2]) and ids.tolist() == flat.tolist()


def test_batches_with_lone_surrogates():
    enc, ref = tokenforge.get_encoding("cl100k_base"), tiktoken.get_encoding("cl100k_base")
    texts = ["ok", "é\ud800x", "中文", "\udfff", "😀"] * 3
    expected = [ref.encode_ordinary(t) for t in texts]
    for threads in (1, 2, 8):
        assert enc.encode_ordinary_batch([_fresh(t) for t in texts], num_threads=threads) == expected
        assert enc.encode_batch([_fresh(t) for t in texts], num_threads=threads) == expected
        for call in (enc._engine.encode_batch_to_numpy, lambda t, m, n: enc._engine.encode_ordinary_batch_flat(
                t, [-1] * len(t), n)):
            try:
                call([_fresh(t) for t in texts], b"", threads)
                raise AssertionError("no UnicodeEncodeError")
            except UnicodeEncodeError:
                pass


def _outcome(fn):
    try:
        return list(fn())
    except ValueError as e:
        return ("ValueError", str(e))


# encode and encode_to_numpy look for disallowed special tokens in the same native call that
# encodes (one UTF-8 conversion): the outcome must be tiktoken's for every kind of str, whether
# the special token is there, only its first character, or a lone surrogate too.
@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(_KINDS)), data=st.data())
def test_disallowed_special_check_in_every_kind_of_str(kind, data):
    parts = data.draw(st.lists(st.one_of(_text(kind), st.sampled_from(["<|endoftext|>", "<|fim_prefix|>", "<", "<|",
                                                                          "\ud800"])), max_size=6))
    text = "".join(parts)
    name = data.draw(st.sampled_from(["cl100k_base", "o200k_base"]))
    allowed = data.draw(st.sampled_from([set(), {"<|endoftext|>"}, "all"]))
    ref, ours = tiktoken.get_encoding(name), tokenforge.get_encoding(name)
    expected = _outcome(lambda: ref.encode(text, allowed_special=allowed))
    assert _outcome(lambda: ours.encode(_fresh(text), allowed_special=allowed)) == expected
    assert _outcome(lambda: ours.encode_to_numpy(_fresh(text), allowed_special=allowed).tolist()) == expected


# encode_batch makes the same check in the threads that encode: the outcome is tiktoken's
# encode_batch's (the first text in order that holds a disallowed special token names the error).
@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.sampled_from(sorted(_KINDS)), min_size=1, max_size=5), data=st.data())
def test_disallowed_special_check_in_batches(kinds, data):
    pieces = st.sampled_from(["<|endoftext|>", "<|fim_prefix|>", "<|fim_suffix|>", "<", "\ud800"])
    texts = ["".join(data.draw(st.lists(st.one_of(_text(k), pieces), max_size=4))) for k in kinds]
    name = data.draw(st.sampled_from(["cl100k_base", "o200k_base"]))
    allowed = data.draw(st.sampled_from([set(), {"<|endoftext|>"}, "all"]))
    threads = data.draw(st.sampled_from([1, 2, 4]))
    ref, ours = tiktoken.get_encoding(name), tokenforge.get_encoding(name)
    expected = _outcome(lambda: ref.encode_batch(texts, allowed_special=allowed))
    assert _outcome(lambda: ours.encode_batch([_fresh(t) for t in texts], allowed_special=allowed,
                                              num_threads=threads)) == expected
    assert _outcome(lambda: _rows(*ours.encode_batch_to_numpy([_fresh(t) for t in texts], allowed_special=allowed,
                                                              num_threads=threads))) == expected


def _rows(ids, offsets) -> list[list[int]]:
    """encode_batch_to_numpy's (ids, offsets) as encode_batch's rows."""
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == len(ids)
    return [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


@pytest.fixture(scope="module")
def other_families(tmp_path_factory, corpus_texts):
    """A sentencepiece unigram model and a Hugging Face WordPiece (BERT-style) tokenizer.json,
    each with its own library beside tokenforge's."""
    import io

    import sentencepiece as spm
    import tokenizers as hf

    lines = (corpus_texts["multilingual"] * 2).splitlines()
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, minloglevel=2, num_threads=1,
                                   vocab_size=580, hard_vocab_limit=False, character_coverage=1.0,
                                   byte_fallback=True)
    sp = spm.SentencePieceProcessor(model_proto=out.getvalue())
    ours_sp = tokenforge.SentencePieceTokenizer.from_bytes(out.getvalue())
    wp = hf.Tokenizer(hf.models.WordPiece(unk_token="[UNK]"))
    wp.normalizer = hf.normalizers.BertNormalizer(lowercase=False)
    wp.pre_tokenizer = hf.pre_tokenizers.BertPreTokenizer()
    wp.train_from_iterator(lines, hf.trainers.WordPieceTrainer(vocab_size=800, special_tokens=["[UNK]"]))
    path = tmp_path_factory.mktemp("wp") / "tokenizer.json"
    wp.save(str(path))
    return [(ours_sp, sp.encode), (tokenforge.load(path), lambda t: wp.encode(t, add_special_tokens=False).ids)]


# The sentencepiece and word-level models convert strs the same way as byte-level BPE (single
# texts into the thread's buffer, batches in their worker threads): ids equal to their own
# library's for every kind of str, and no UTF-8 copy left in the str.
@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(_KINDS)), data=st.data())
def test_other_families_every_kind_of_str(other_families, kind, data):
    texts = [data.draw(_text(kind)) for _ in range(3)]
    for ours, theirs in other_families:
        expected = [theirs(t) for t in texts]
        fresh = [_fresh(t) for t in texts]
        sizes = [sys.getsizeof(t) for t in fresh]
        assert [ours.encode(t, add_special_tokens=False) for t in fresh] == expected
        assert ours.encode_batch(fresh, add_special_tokens=False, num_threads=2) == expected
        assert [sys.getsizeof(t) for t in fresh] == sizes


# has_surrogates reads the str in place (8 code units at a time): it must agree with CPython's
# encoder for every kind of str, a surrogate at any position of the blocks or none.
@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(_KINDS)), data=st.data())
def test_has_surrogates_agrees_with_cpython(kind, data):
    from tokenforge.stage import has_surrogates

    text = data.draw(st.lists(st.one_of(_text(kind), st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff",
                                                                        "\ud7ff", "\ue000"])), max_size=5))
    text = "".join(text)
    try:
        text.encode("utf-8")
        expected = False
    except UnicodeEncodeError:
        expected = True
    assert has_surrogates(_fresh(text)) == expected
