"""The Tokenizer / Encoding API: special-token policy, batch, streaming, decode, errors, pickling,
threads, and the two constructors."""

import concurrent.futures
import io
import json
import pickle
import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import Tokenizer

from conftest import MULTILINGUAL


@pytest.fixture(scope="module")
def cl100k():
    return tokenforge.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def ref_cl100k(tiktoken_module):
    return tiktoken_module.get_encoding("cl100k_base")


# -- special tokens ---------------------------------------------------------------------------------

SPECIAL_TEXTS = [
    "hello <|endoftext|> world",
    "<|endoftext|><|fim_prefix|>x<|fim_suffix|>",
    "no special here",
    "<|endoftext",
    "a<|endofprompt|>b<|endoftext|>",
]
POLICIES = [
    dict(),
    dict(allowed_special="all"),
    dict(disallowed_special=()),
    dict(allowed_special={"<|endoftext|>"}),
    dict(allowed_special={"<|endoftext|>"}, disallowed_special=()),
    dict(allowed_special=set(), disallowed_special={"<|fim_prefix|>"}),
    dict(allowed_special={"<|fim_prefix|>", "<|fim_suffix|>"}, disallowed_special={"<|endoftext|>"}),
    dict(allowed_special="all", disallowed_special="all"),
]


@pytest.mark.parametrize("policy", POLICIES, ids=str)
@pytest.mark.parametrize("text", SPECIAL_TEXTS)
def test_special_token_matrix(cl100k, ref_cl100k, policy, text):
    try:
        expected = ref_cl100k.encode(text, **policy)
    except ValueError:
        with pytest.raises(ValueError, match="disallowed special token"):
            cl100k.encode(text, **policy)
        with pytest.raises(ValueError):
            cl100k.encode_batch([text], **policy)
        return
    assert cl100k.encode(text, **policy) == expected
    assert cl100k.encode_batch([text, text], **policy) == [expected, expected]
    assert cl100k.encode_to_numpy(text, **policy).tolist() == expected


@pytest.mark.parametrize("policy", POLICIES[:4], ids=str)
@pytest.mark.parametrize("size", [1000, 1023, 1024, 1025, 1030, 5000])
def test_special_tokens_either_side_of_the_short_text_path(cl100k, ref_cl100k, policy, size):
    # Texts up to 1,024 bytes are encoded without releasing the GIL (bindings/encoder.cpp): the
    # same answers on both sides of that length, a special token straddling it included.
    for text in ("é" * (size // 2) + " <|endoftext|> x", "y" * (size - 6) + "<|endoftext|>", "z" * size):
        try:
            expected = ref_cl100k.encode(text, **policy)
        except ValueError:
            with pytest.raises(ValueError, match="disallowed special token"):
                cl100k.encode(text, **policy)
            continue
        assert cl100k.encode(text, **policy) == expected
        assert cl100k.encode_to_numpy(text, **policy).tolist() == expected


def test_find_special_with_nothing_selected(cl100k):
    engine = cl100k._engine
    assert engine.find_special("a <|endoftext|>", b"") == -1
    assert engine.find_special("a <|endoftext|>", bytes(len(cl100k.special_tokens_set))) == -1
    assert engine.find_special("a <|endoftext|>", b"\x01" * len(cl100k.special_tokens_set)) >= 0


def test_disallowed_message_says_how_to_allow(cl100k):
    with pytest.raises(ValueError) as e:
        cl100k.encode("x <|endoftext|>")
    assert "allowed_special" in str(e.value) and "disallowed_special=()" in str(e.value)


def test_overlapping_special_tokens_longest_first():
    ranks = {bytes([i]): i for i in range(256)}
    tok = Tokenizer.from_ranks(ranks, pattern="cl100k",
                               special_tokens={"<|endoftext|>": 300, "<|endoftext|><|endoftext|>": 301, "<|e": 302})
    assert tok.encode("a<|endoftext|><|endoftext|>b", allowed_special="all") == [97, 301, 98]
    assert tok.encode("<|endoftext|><|endoftext|><|endoftext|>", allowed_special="all") == [301, 300]
    assert tok.encode("<|endoftext|>", allowed_special={"<|e"}, disallowed_special=()) == [302] + tok.encode_ordinary("ndoftext|>")



@pytest.mark.parametrize("special, error, message", [
    ({"": 300}, TypeError, "non-empty str"),
    ({b"<|x|>": 300}, TypeError, "non-empty str"),
    ({"<|x|>": True}, ValueError, "invalid id True"),
    ({"<|x|>": -1}, ValueError, "invalid id -1"),
    ({"<|x|>": 2**32 - 1}, ValueError, "invalid id"),
    ({"<|x|>": 300.0}, ValueError, "invalid id 300.0"),
    ({"<|a|>": 300, "<|b|>": "301"}, ValueError, "'<|b|>' has an invalid id '301'"),
])
def test_bad_special_tokens_are_named(special, error, message):
    # The checks run per column first (_plain_specials); any failure falls to the loop that names it.
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(error, match=re.escape(message)):
        Tokenizer.from_ranks(ranks, pattern="cl100k", special_tokens=special)
    tok = Tokenizer.from_ranks(ranks, pattern="cl100k", special_tokens={"<|a|>": 300, "<|b|>": 2**32 - 2})
    assert tok.encode("<|b|>", allowed_special="all") == [2**32 - 2]


def test_added_token_given_twice_is_named():
    ranks = {bytes([i]): i for i in range(256)}
    added = [tokenforge.AddedToken("<|a|>", 300, special=False)]
    with pytest.raises(ValueError, match=re.escape("the added token '<|a|>' appears twice")):
        Tokenizer(pattern="cl100k", mergeable_ranks=ranks, added_tokens=added, special_tokens={"<|a|>": 301})

# -- batch, numpy, streaming ------------------------------------------------------------------------

def test_batch_equals_one_by_one(cl100k, corpus_texts):
    docs = [t[i:i + 4000] for t in corpus_texts.values() for i in range(0, min(len(t), 40000), 4000)]
    expected = [cl100k.encode_ordinary(d) for d in docs]
    assert cl100k.encode_ordinary_batch(docs) == expected
    assert cl100k.encode_ordinary_batch(docs, num_threads=1) == expected
    assert cl100k.encode_batch(docs, num_threads=3, disallowed_special=()) == expected
    assert cl100k.decode_batch(expected) == docs
    assert cl100k.decode_bytes_batch(expected) == [d.encode() for d in docs]


def test_batch_to_numpy_appends_texts_in_order_as_they_finish(cl100k, tiktoken_module):
    # The threads append finished texts to the flat array while others are still encoding
    # (bindings/encoder.cpp, encode_flat): texts of very different lengths, so that they finish out
    # of order, and texts of rare characters (three ids per character), so that the array outgrows
    # the room first reserved for it (a third of an id per character).
    ref = tiktoken_module.get_encoding("cl100k_base")
    rare = "".join(chr(c) for c in range(0x4DC0, 0x4E00))  # the hexagram symbols: 3 byte tokens each
    words = "The quick brown fox jumps over the lazy dog; déjà vu, 東京 and Ελληνικά. "
    docs = []
    for k in range(120):
        size = (k * 7919) % 5000
        docs.append((rare if k % 3 == 0 else words) * (size // 60 + 1))
    docs[50] = ""
    expected = [ref.encode_ordinary(d) for d in docs]
    assert sum(map(len, expected)) > sum(map(len, docs)) / 3  # beyond the first reservation
    for threads in (2, 3, 4):
        for _ in range(3):
            ids, offsets = cl100k.encode_batch_to_numpy(docs, num_threads=threads)
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


def test_batches_with_long_texts_taken_first_equal_tiktoken(cl100k, tiktoken_module, corpus_texts):
    # A text much longer than the others is taken first by the batch's threads (long_items_first,
    # cpp/parallel.h), the others in order after it: every output kind still in the texts' order.
    ref = tiktoken_module.get_encoding("cl100k_base")
    text = "".join(corpus_texts.values())
    short = [text[i:i + 1000] for i in range(0, 60000, 1000)]
    long_a, long_b = text[:100000], text[50000:130000]
    docs = short[:30] + [long_a] + short[30:] + [long_b]
    expected = [ref.encode_ordinary(d) for d in docs]
    for threads in (2, 3):
        assert cl100k.encode_ordinary_batch(docs, num_threads=threads) == expected
        assert cl100k.encode_batch(docs, num_threads=threads, disallowed_special=()) == expected
        ids, offsets = cl100k.encode_batch_to_numpy(docs, num_threads=threads, disallowed_special=())
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected


def test_batches_cut_their_long_texts_and_equal_tiktoken(tiktoken_module, corpus_texts, monkeypatch):
    # A text longer than half a thread's share of its batch is encoded in parts cut at safe cuts
    # (streaming.cut_long_texts), read in place by the native batch: every output kind equal to
    # tiktoken, with special tokens inside (allowed, or raising as disallowed), a lone surrogate,
    # texts of 1, 2 and 4 bytes per code point, and a long text without any safe cut.
    from tokenforge import streaming

    monkeypatch.setattr(streaming, "MIN_PART", 4096)  # (parts of 4,096 characters: small texts suffice)
    seen = []
    real_cut = streaming.cut_long_texts
    monkeypatch.setattr(tokenforge.tokenizer, "cut_long_texts",
                        lambda *a: seen.append(r := real_cut(*a)) or r)
    monkeypatch.setattr(streaming, "usable_cpus", lambda: 4)
    text = "".join(corpus_texts.values())
    long_texts = [text[:60000], text[100000:150000] + "<|endoftext|>" + text[:20000],
                  "Привет, мир. 中文，标点。" * 2000, "emoji 😀 and words, " * 3000, "a" * 40000,
                  "hello<|endoftext|>" * 3000]  # (a cut between "t" and "|" would split the token)
    for name in ("cl100k_base", "o200k_base"):
        ref, enc = tiktoken_module.get_encoding(name), tokenforge.get_encoding(name)
        for long_text in long_texts:  # each with short texts beside it, in the middle of the batch
            docs = [text[i:i + 500] for i in range(0, 5000, 500)]
            docs.insert(4, long_text)
            expected = [ref.encode(d, allowed_special="all") for d in docs]
            seen.clear()
            assert enc.encode_batch(docs, num_threads=2, allowed_special="all") == expected
            ids, offsets = enc.encode_batch_to_numpy(docs, num_threads=3, allowed_special="all")
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
            assert enc.encode_ordinary_batch(docs, num_threads=2) == [ref.encode_ordinary(d) for d in docs]
            cut = long_text != "a" * 40000  # (no safe cut in it: encoded whole)
            assert all((r is not None and len(r[0]) > len(docs)) == cut for r in seen), seen
            if "<|endoftext|>" in long_text:
                with pytest.raises(ValueError, match="disallowed special token"):
                    enc.encode_batch(docs, num_threads=2)
        surrogate = [text[:500], text[:30000] + "\ud800" + text[:30000]]
        assert enc.encode_batch(surrogate, num_threads=2) == ref.encode_batch(surrogate, num_threads=2)
    custom = tokenforge.Encoding("custom", pat_str=r"\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+|\s+",
                                 mergeable_ranks=tokenforge.get_encoding("gpt2")._mergeable_ranks, special_tokens={})
    assert not custom._engine.named_split  # (its cuts are not proven: its batches are not cut)


def test_batch_to_numpy_equals_encode_batch(cl100k, corpus_texts):
    # One flat array and offsets: the engine's threads for byte-level BPE, encode_batch's rows
    # flattened for any other pipeline (here a post-processor adds tokens around every row).
    from tokenforge import post_processors

    docs = [t[i:i + 3000] for t in corpus_texts.values() for i in range(0, min(len(t), 30000), 3000)] + ["", "a"]
    for policy in ({"disallowed_special": ()}, {"allowed_special": "all"}):  # (TinyStories has <|endoftext|>)
        expected = cl100k.encode_batch(docs, **policy)
        for threads in (1, 2, 8):
            ids, offsets = cl100k.encode_batch_to_numpy(docs, num_threads=threads, **policy)
            assert len(offsets) == len(docs) + 1 and offsets.dtype == np.int64 and ids.dtype == np.uint32
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    with pytest.raises(ValueError, match="disallowed special token"):
        cl100k.encode_batch_to_numpy(docs, num_threads=2)
    bert = Tokenizer(tokenforge.models.WordPiece({t: i for i, t in enumerate(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s"])}),
        pre_tokenizer=tokenforge.pre_tokenizers.BertPreTokenizer(), post_processor=post_processors.cls_sep())
    texts = ["hello worlds", "", "world hello hello"]
    ids, offsets = bert.encode_batch_to_numpy(texts, num_threads=2)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == bert.encode_batch(texts)
    with pytest.raises(TypeError):
        cl100k.encode_batch_to_numpy("one str")
    with pytest.raises(ValueError):
        cl100k.encode_batch_to_numpy(["a"], num_threads=0)


def test_encode_to_numpy(cl100k):
    arr = cl100k.encode_to_numpy(MULTILINGUAL)
    assert arr.dtype == np.uint32 and arr.tolist() == cl100k.encode(MULTILINGUAL)


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_encode_iterable_equals_whole(name, corpus_texts):
    enc = tokenforge.get_encoding(name)
    text = corpus_texts["shakespeare"][:300_000] + MULTILINGUAL + corpus_texts["stdlib"][:200_000]
    rng = random.Random(1)
    chunks, i = [], 0
    while i < len(text):
        n = rng.choice([1, 7, 100, 5000, 70000])
        chunks.append(text[i:i + n])
        i += n
    assert list(enc.encode_iterable(iter(chunks))) == enc.encode_ordinary(text)
    assert list(enc.encode_iterable(io.StringIO(text))) == enc.encode_ordinary(text)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.text(alphabet=st.sampled_from(list("ab AB\n\t's1.<|>é中 ")), max_size=40), max_size=30),
       name=st.sampled_from(["r50k_base", "cl100k_base", "o200k_base"]))
def test_encode_iterable_property(parts, name):
    enc = tokenforge.get_encoding(name)
    # Repeat to pass the buffering threshold so that cuts actually happen.
    chunks = parts * (1 + 70000 // max(1, sum(map(len, parts))))
    assert list(enc.encode_iterable(chunks)) == enc.encode_ordinary("".join(chunks))


# -- decoding -----------------------------------------------------------------------------------------

def test_decode_roundtrip_and_errors(cl100k, ref_cl100k):
    ids = cl100k.encode(MULTILINGUAL)
    assert cl100k.decode(ids) == MULTILINGUAL
    assert cl100k.decode_bytes(ids) == MULTILINGUAL.encode()
    partial = cl100k.encode("😀")[:1]
    assert cl100k.decode(partial) == ref_cl100k.decode(partial)
    with pytest.raises(UnicodeDecodeError):
        cl100k.decode(partial, errors="strict")
    for bad in ([10**9], [-1], [cl100k.n_vocab + 5], [100261]):  # 100261 is a hole in cl100k
        with pytest.raises(ValueError, match=str(bad[0])):
            cl100k.decode([1, 2] + bad)
    with pytest.raises(TypeError):
        cl100k.decode(["a"])
    with pytest.raises(KeyError):
        cl100k.decode_single_token_bytes(10**9)


def test_decode_with_offsets(cl100k, ref_cl100k):
    for text in [MULTILINGUAL, "我非常渴望与人工智能一起工作", "hello world", "e\u0301😀x"]:
        ids = cl100k.encode(text)
        assert cl100k.decode_with_offsets(ids) == ref_cl100k.decode_with_offsets(ids)


def test_single_tokens(cl100k, ref_cl100k):
    for t in ["hello", " world", b"\xff", "<|endoftext|>"]:
        assert cl100k.encode_single_token(t) == ref_cl100k.encode_single_token(t)
    with pytest.raises(KeyError):
        cl100k.encode_single_token("not one token at all")
    ids = cl100k.encode("hello world")
    assert cl100k.decode_tokens_bytes(ids) == ref_cl100k.decode_tokens_bytes(ids)
    assert cl100k.decode_single_token_bytes(ids[0]) == ref_cl100k.decode_single_token_bytes(ids[0])


def test_bad_input_types(cl100k):
    for bad in (b"bytes", None, 3, ["list"]):
        with pytest.raises(TypeError):
            cl100k.encode(bad)
        with pytest.raises(TypeError):
            cl100k.encode_ordinary(bad)
    with pytest.raises(TypeError):
        cl100k.encode_batch("a str, not a list")
    with pytest.raises(TypeError):
        cl100k.encode("x", allowed_special="<|endoftext|>")
    with pytest.raises(ValueError):
        cl100k.encode_batch(["x"], num_threads=0)


def test_empty_and_nul(cl100k, ref_cl100k):
    for text in ["", "\x00", "a\x00b", "\x00" * 1000]:
        assert cl100k.encode(text) == ref_cl100k.encode(text)


# -- pickling, threads --------------------------------------------------------------------------------

def test_pickle_named_and_custom(cl100k):
    again = pickle.loads(pickle.dumps(cl100k))
    assert again is cl100k  # a named encoding pickles by name
    custom = tokenforge.Encoding("tiny", pat_str="gpt2", mergeable_ranks={bytes([i]): i for i in range(256)} | {b"ab": 256},
                                 special_tokens={"<|x|>": 257})
    copy = pickle.loads(pickle.dumps(custom))
    assert copy is not custom and copy.encode("abab<|x|>", allowed_special="all") == [256, 256, 257]


def test_threads_share_one_tokenizer(cl100k, corpus_texts):
    docs = [corpus_texts["stdlib"][i:i + 20000] for i in range(0, 400000, 20000)]
    expected = [cl100k.encode_ordinary(d) for d in docs]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(cl100k.encode_ordinary, docs)) == expected


# -- constructors ---------------------------------------------------------------------------------------

def test_from_vocab_merges_gpt2_matches_tiktoken(shared_dir, tiktoken_module, corpus_texts):
    from tokenforge.byte_alphabet import bytes_to_unicode

    decoder = {c: b for b, c in bytes_to_unicode().items()}
    enc_json = json.loads((shared_dir / "vocab" / "gpt2_vocab.json").read_text())
    vocab = {i: bytes(decoder[c] for c in tok) for tok, i in enc_json.items() if tok != "<|endoftext|>"}
    merges = []
    for line in (shared_dir / "vocab" / "gpt2_merges.txt").read_text().split("\n"):
        if line and not line.startswith("#version"):  # "# #" is a real merge
            a, b = line.split()
            merges.append((bytes(decoder[c] for c in a), bytes(decoder[c] for c in b)))
    tok = Tokenizer.from_vocab_merges(vocab, merges, special_tokens={"<|endoftext|>": 50256}, pattern="gpt2")
    ref = tiktoken_module.get_encoding("gpt2")
    for text in (corpus_texts["shakespeare"][:200_000], corpus_texts["stdlib"][:200_000], MULTILINGUAL):
        assert tok.encode_ordinary(text) == ref.encode_ordinary(text)
    assert tok.merges[:5] == merges[:5] and tok.vocab[50256] == b"<|endoftext|>"


def test_custom_pattern_uses_regex_fallback(tiktoken_module, corpus_texts):
    ranks = tokenforge.get_encoding("cl100k_base")._mergeable_ranks
    pat = r"""\w+|\s+|[^\w\s]+"""
    ours = tokenforge.Encoding("x", pat_str=pat, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 100257})
    theirs = tiktoken_module.Encoding("x", pat_str=pat, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 100257})
    for text in (corpus_texts["taylorswift"], MULTILINGUAL, "a<|endoftext|>b"):
        assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
        assert ours.encode_ordinary_batch([text, text]) == theirs.encode_ordinary_batch([text, text])


def test_recovered_merges_rebuild_the_encoding(corpus_texts):
    r50k = tokenforge.get_encoding("r50k_base")
    merges = r50k.merges
    assert len(merges) == 50000
    rebuilt = Tokenizer.from_vocab_merges({i: b for b, i in r50k._mergeable_ranks.items()}, merges, pattern="gpt2")
    text = corpus_texts["shakespeare"][:100_000]
    assert rebuilt.encode_ordinary(text) == r50k.encode_ordinary(text)


def test_encoding_constructor_validation():
    ranks = {bytes([i]): i for i in range(256)}
    with pytest.raises(ValueError):
        tokenforge.Encoding("x", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={}, explicit_n_vocab=300)
    enc = tokenforge.Encoding("x", pat_str="gpt2", mergeable_ranks=ranks, special_tokens={"<|e|>": 256}, explicit_n_vocab=257)
    assert enc.n_vocab == 257
    with pytest.raises(ValueError, match="byte 7"):
        Tokenizer.from_ranks({bytes([i]): i for i in range(256) if i != 7}, pattern="gpt2")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        Tokenizer.from_vocab_merges({i: bytes([i]) for i in range(256)}, [(b"a", b"zz")])


def test_streaming_never_cuts_inside_an_added_token(monkeypatch):
    # encode_iterable cuts its buffer at safe places; an added token matched in any text (MPT's runs
    # of spaces are not special) must not be cut in two there.
    import tokenforge.tokenizer

    monkeypatch.setattr(tokenforge.tokenizer, "STREAM_BUFFER", 50)  # (a cut every few lines)
    gpt2 = tokenforge.get_encoding("gpt2")
    tok = tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=gpt2._mergeable_ranks, special_tokens={"<|endoftext|>": 50256},
                               added_tokens=[tokenforge.AddedToken("    ", 50257, special=False),
                                             tokenforge.AddedToken("return x", 50258, special=False)])
    text = "".join(f"def f{k}(x):\n    return x  +  {k}\n" + " " * (k % 9) + "\n" for k in range(300))
    assert 50258 in tok.encode(text)
    chunks = [text[i:i + 7] for i in range(0, len(text), 7)]
    assert list(tok.encode_iterable(chunks)) == tok.encode(text)


def test_added_tokens_before_a_special_one_do_not_shift_the_special_masks():
    # The engine's token list puts the special tokens first, in the policy's order: with a plain
    # added token listed before a special one, disallowing the special token must not disallow the
    # plain one (the masks index the engine's list), and allowing it must match it.
    gpt2 = tokenforge.get_encoding("gpt2")
    tok = tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=gpt2._mergeable_ranks,
                               added_tokens=[tokenforge.AddedToken("xq", 50257, special=False),
                                             tokenforge.AddedToken("<|endoftext|>", 50256)])
    assert tok.encode("a xq") == [64, 220, 50257]
    with pytest.raises(ValueError, match="disallowed special token '<\\|endoftext\\|>'"):
        tok.encode("a xq<|endoftext|>")
    assert tok.encode("a xq<|endoftext|>", allowed_special="all") == [64, 220, 50257, 50256]
    assert tok.encode_ordinary("xq<|endoftext|>")[:1] == [50257] and 50256 not in tok.encode_ordinary("<|endoftext|>")
    assert tok.encode_batch(["a xq", "xq<|endoftext|>"], allowed_special="all", num_threads=2) == \
        [[64, 220, 50257], [50257, 50256]]


_SPECIAL_SETS = {
    "one start, a space": ["  ", "   ", "    "],  # MPT's runs of spaces
    "several starts": ["  ", "<|x|>", "||a", "\n\n"],  # GPT-NeoX's shape: the two-byte filter
    "a token of one byte": ["|", "  ", "<|x|>"],  # any byte may follow '|'
    "more pairs than the filter holds": ["ab", "ac", "ad", "ae", "af", "  "],
    "one start, '<'": ["<|x|>", "<|yy|>"],  # tiktoken's shape: memchr
}


@pytest.mark.parametrize("shape", sorted(_SPECIAL_SETS))
@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from([" ", "  ", "a", "b", "|", "<", "\n", "x", "||a", "<|x|>", "é", "ab", "af",
                                        "<|yy|>", "\t", "   "]), max_size=40))
def test_special_tokens_found_where_they_start(shape, pieces):
    # the engine's skip to where a special token can start (cpp/special.cc: one byte, several
    # bytes, or the first two bytes of every token) against a regex of the tokens, longest first
    import regex

    gpt2 = tokenforge.get_encoding("gpt2")
    specials = {s: 50300 + k for k, s in enumerate(_SPECIAL_SETS[shape])}
    tok = tokenforge.Tokenizer.from_ranks(gpt2._mergeable_ranks, pattern=gpt2.pattern, special_tokens=specials)
    text = "".join(pieces) * 3  # (longer than the 16-byte blocks)
    alternation = regex.compile("|".join(map(regex.escape, sorted(specials, key=len, reverse=True))))
    want, at = [], 0
    for m in alternation.finditer(text):
        want += gpt2.encode_ordinary(text[at:m.start()]) + [specials[m.group()]]
        at = m.end()
    want += gpt2.encode_ordinary(text[at:])
    assert tok.encode(text, allowed_special="all") == want
