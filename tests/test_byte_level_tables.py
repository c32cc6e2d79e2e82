"""The native readers of byte-level vocabularies and merges (bindings/byte_level_files.cpp) against
their Python meaning: same tables when the input is plain, None (the Python loops then name the
problem) for anything else; and the files they read load with the same ids as before."""

import json
import pathlib

import pytest

import tokenforge
from tokenforge import _core
from tokenforge.byte_alphabet import from_chars, to_chars
from tokenforge.models.byte_bpe import ByteBPE, Merges

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="module")
def gpt2():
    vocab = json.loads((SHARED / "vocab" / "gpt2_vocab.json").read_text(encoding="utf-8"))
    lines = (SHARED / "vocab" / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [line for line in lines if line and not line.startswith("#")]
    return vocab, merges


def _python_vocab(vocab):
    return {from_chars(s): i for s, i in vocab.items()}, {s: from_chars(s) for s in vocab}


def test_vocab_as_python_reads_it(gpt2):
    vocab, _ = gpt2
    ranks = _core.byte_level_vocab(vocab, {})
    want_ranks, _ = _python_vocab(vocab)
    assert ranks == want_ranks and list(ranks) == list(want_ranks)


@pytest.mark.parametrize("change", [
    {"a b": 7},                # a space is not in the alphabet
    {"\u0144": 8},             # the first character after it
    {"x\u00ad": 9},            # the soft hyphen is not in it either
    {"ok": True},              # a bool is not an id
    {"ok": -1},
    {"ok": 1.0},
    {"ok": 2**70},
])
def test_vocab_refuses_what_the_loop_must_name(change):
    vocab = {to_chars(bytes([b])): b for b in range(256)} | change
    assert _core.byte_level_vocab(vocab, {}) is None


def test_vocab_added_tokens():
    vocab = {to_chars(bytes([b])): b for b in range(256)}
    assert _core.byte_level_vocab({**vocab, "<|end|>": 256}, {"<|end|>": 256}) == _python_vocab(vocab)[0]
    assert _core.byte_level_vocab({**vocab, "<|end|>": 256}, {"<|end|>": 257}) is None  # another id
    assert _core.byte_level_vocab(vocab, {"<|end|>": 65}) is None  # a model token holds its id


def test_merges_as_python_reads_them(gpt2):
    vocab, merges = gpt2
    ranks = _core.byte_level_vocab(vocab, {})
    token_bytes = _python_vocab(vocab)[1]
    rules = _core.byte_level_merges(merges, ranks)
    want = [(token_bytes[a], token_bytes[b]) for a, b in (m.split(" ") for m in merges)]
    assert isinstance(rules, bytes)  # packed uint32 triples
    assert list(Merges(rules)) == [(ranks[a], ranks[b], ranks[a + b]) for a, b in want]
    as_lists = [m.split(" ") for m in merges]
    assert _core.byte_level_merges(as_lists, ranks) == rules
    model, plain = ByteBPE(ranks, Merges(rules)), ByteBPE(ranks, want)
    assert list(model._rules) == plain._rules and len(model._rules) == len(plain._rules)
    assert model.to_dict() == plain.to_dict() and repr(model) == repr(plain)
    assert model.merges_given == want and model.merges == want  # the pairs, made from the ids on first use


def test_merges_of_long_tokens():
    """Tokens past 16 bytes are kept in the second table (by pointer, not inline)."""
    vocab = {to_chars(bytes([b])): b for b in range(256)}
    merges, word = [], "a"
    for n in range(2, 40):  # "aa", "aaa", ... up to 39 bytes, each the previous one + "a"
        vocab[word + "a"] = 254 + n
        merges.append(f"{word} a")
        word += "a"
    ranks = _core.byte_level_vocab(vocab, {})
    rules = _core.byte_level_merges(merges, ranks)
    assert list(Merges(rules)) == [(ranks[b"a" * (n - 1)], ranks[b"a"], ranks[b"a" * n]) for n in range(2, 40)]
    longer = _core.byte_level_merges(merges + [f"{'a' * 30} {'a' * 9}"], ranks)
    assert list(Merges(longer))[-1] == (ranks[b"a" * 30], ranks[b"a" * 9], ranks[b"a" * 39])
    assert _core.byte_level_merges(merges + [f"{'a' * 39} a"], ranks) is None  # 40 bytes: no token
    assert _core.byte_level_merges(merges + [f"{'a' * 17} a"], ranks) is None  # the pair twice


@pytest.mark.parametrize("bad", ["a", "a b c", " a", "a ", "a  b", "Ġ zzzz", "q \u0144", ["a"], ["a", 1], 5, "Ġt he"])
def test_merges_refuse_what_the_loop_must_name(gpt2, bad):
    vocab, merges = gpt2
    ranks = _core.byte_level_vocab(vocab, {})
    assert _core.byte_level_merges(merges[:100] + [bad], ranks) is None


def test_duplicate_merge_is_named(tmp_path, gpt2):
    vocab, merges = gpt2
    obj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None,
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           "model": {"type": "BPE", "vocab": vocab, "merges": merges[:500] + [merges[3]]}}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tokenizer\.json.*appears twice"):
        tokenforge.load(path)
    obj["model"]["merges"] = merges
    path.write_text(json.dumps(obj), encoding="utf-8")
    tok = tokenforge.load(path)
    tokenizers = pytest.importorskip("tokenizers")
    text = (SHARED / "corpora" / "taylorswift.txt").read_text(encoding="utf-8")[:20000]
    assert tok.encode(text) == tokenizers.Tokenizer.from_file(str(path)).encode(text).ids
    assert tok.merges == [(from_chars(a), from_chars(b)) for a, b in (m.split(" ") for m in merges)]


def test_vocab_by_id():
    vocab = {"a": 0, "b": 1, "##c": 7}
    assert _core.vocab_by_id(vocab) == {0: "a", 1: "b", 7: "##c"}
    assert _core.vocab_by_id({}) == {}
    for bad in ({"": 2}, {"d": True}, {"d": -1}, {"d": 2**32 - 1}, {"d": 2**70}, {"d": 1.0}, {"d": 0}, {5: 3}):
        assert _core.vocab_by_id({**vocab, **bad}) is None, bad
    assert _core.vocab_by_id([("a", 0)]) is None


def test_engine_takes_packed_or_listed_rules(gpt2):
    # The engine reads the rules as byte_level_merges packs them (native uint32 triples) or as a
    # list of tuples; both make the same encoder. Packed bytes of a broken length are refused.
    from tokenforge.models.byte_bpe import native_encoder
    from tokenforge.patterns import GPT2

    vocab, merges = gpt2
    ranks = _core.byte_level_vocab(vocab, {})
    packed = _core.byte_level_merges(merges, ranks)
    tokens = list(zip(ranks.values(), ranks.keys()))
    text = "Hello world, the quick brown fox's 12345 jumps   over naïve 東京 😀\n\n"
    a, _ = native_encoder(tokens, packed, False, GPT2, [])
    b, _ = native_encoder(tokens, list(Merges(packed)), False, GPT2, [])
    assert a.encode(text, b"") == b.encode(text, b"") and len(a.encode(text, b"")) > 10
    with pytest.raises(ValueError, match="uint32 triples"):
        native_encoder(tokens, packed[:-1], False, GPT2, [])
    with pytest.raises(ValueError, match="uint32 triples"):
        Merges(packed[:-4])
