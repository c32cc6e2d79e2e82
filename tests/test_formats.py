"""Exchange formats other than tokenizer.json (see test_formats_hf.py): .tiktoken, GPT-2's
encoder.json + vocab.bpe, vocab.json + merges.txt, the .vocab listing; round trips of every format
on real text; a table of broken files; atomic saves; formats.convert."""

import base64
import json
import os
import pickle
import unicodedata

import pytest

import tokenforge
from tokenforge import _core, patterns
from tokenforge.formats import listing

ALL_FORMATS = ["tokenforge", "huggingface", "tiktoken", "gpt2", "vocab_merges"]
GPT2_SPECIAL = {"<|endoftext|>": 50256}


@pytest.fixture(scope="module")
def gpt2():
    return tokenforge.get_encoding("gpt2")


@pytest.fixture(scope="module")
def cl100k():
    return tokenforge.get_encoding("cl100k_base")


@pytest.fixture(scope="module")
def trained(corpus_texts):
    """A tokenizer with explicit merges (Hugging Face's rule), ids in merge order: tokenforge's
    reference trainer over the pre-token counts of real text."""
    from collections import Counter

    from tokenforge import reference

    counts = Counter(p.encode() for p in reference.split(corpus_texts["taylorswift"][:60_000], patterns.GPT2))
    merges = reference.train(dict(counts), 120)
    vocab = {i: bytes([i]) for i in range(256)}
    for a, b in merges:
        vocab[len(vocab)] = a + b
    return tokenforge.Tokenizer.from_vocab_merges(vocab, merges, special_tokens={"<|endoftext|>": len(vocab)}, name="trained")


def save_and_load(tok, fmt, tmp_path, **overrides):
    target = {"tokenforge": "t.json", "huggingface": "tokenizer.json", "tiktoken": "t.tiktoken",
              "gpt2": "", "vocab_merges": "vocab.json"}[fmt]
    out = tmp_path / fmt
    out.mkdir(parents=True)
    tok.save(out / target if target else out, format=fmt)
    first = {"gpt2": "encoder.json"}.get(fmt, target)
    if fmt == "tiktoken":  # the ranks only
        overrides = {"pattern": tok.pattern, "special_tokens": tok.special_tokens, **overrides}
    if fmt in ("gpt2", "vocab_merges"):  # no pattern
        overrides = {"pattern": tok.pattern, **overrides}
    return tokenforge.load(out / first, **overrides)


def assert_same_tokenizer(a, b, texts):
    assert b.vocab == a.vocab
    assert b.merges == a.merges
    assert b.special_tokens == a.special_tokens
    for label, text in texts.items():
        assert b.encode(text, allowed_special="all") == a.encode(text, allowed_special="all"), label


# --------------------------------------------------------------------------------------------------
# Round trips: save -> load gives the same vocabulary, merges and ids on real text


@pytest.mark.parametrize("fmt", ALL_FORMATS)
@pytest.mark.parametrize("which", ["gpt2", "cl100k", "trained"])
def test_round_trip(request, tmp_path, corpus_texts, fmt, which):
    tok = request.getfixturevalue(which)
    back = save_and_load(tok, fmt, tmp_path)
    texts = corpus_texts if which != "cl100k" or fmt in ("tokenforge", "tiktoken") else {
        k: v[:300_000] for k, v in corpus_texts.items()}
    assert_same_tokenizer(tok, back, texts)
    # the same pattern, or one the same native scanner runs (HF's ByteLevel regex is GPT-2's original)
    assert back.pattern == tok.pattern or _core.Pattern(back.pattern).scanner == _core.Pattern(tok.pattern).scanner is not None


def test_round_trip_keeps_pattern_rule_and_normalizer(tmp_path, trained):
    tok = tokenforge.Tokenizer(pattern=patterns.O200K, mergeable_ranks=trained._mergeable_ranks, merges=trained.merges,
                               special_tokens=trained.special_tokens, ignore_merges=True, normalizer="NFKC")
    for fmt in ("tokenforge", "huggingface"):
        back = save_and_load(tok, fmt, tmp_path)
        assert back._state() == {**tok._state(), "name": back.name}
    for fmt in ("gpt2", "vocab_merges", "tiktoken"):  # these files cannot say it: refused, not dropped
        with pytest.raises(ValueError, match="ignore_merges|NFKC|normaliz"):
            save_and_load(tok, fmt, tmp_path / "refused")


# --------------------------------------------------------------------------------------------------
# tiktoken


def test_tiktoken_file_is_tiktokens(tmp_path, tiktoken_module, shared_dir, cl100k):
    path = tmp_path / "cl100k_base.tiktoken"
    cl100k.save(path, format="tiktoken")
    assert path.read_bytes() == (shared_dir / "vocab" / "cl100k_base.tiktoken").read_bytes()
    from tiktoken.load import load_tiktoken_bpe

    assert load_tiktoken_bpe(str(path)) == cl100k._mergeable_ranks
    tok = tokenforge.load(shared_dir / "vocab" / "cl100k_base.tiktoken", pattern="cl100k", special_tokens=cl100k.special_tokens)
    assert tok.name == "cl100k_base" and tok.encode("hello <|endoftext|>", allowed_special="all") == [15339, 220, 100257]


def test_tiktoken_needs_pattern_and_special_tokens(shared_dir, tmp_path):
    # r50k_base's own file is known by content (formats/rank_families.py); one line more makes it unknown
    path = tmp_path / "r50k_base.tiktoken"
    path.write_bytes((shared_dir / "vocab" / "r50k_base.tiktoken").read_bytes() + b"IHh5enp6 50256\n")
    with pytest.raises(ValueError, match=r"r50k_base\.tiktoken: a tiktoken rank file holds only the ranks, and this "
                                         r"one is not a known model's; pass pattern= and special_tokens= .*'llama3'"):
        tokenforge.load(path)
    with pytest.raises(ValueError, match=r"pass special_tokens= \("):
        tokenforge.load(path, pattern="gpt2")
    assert tokenforge.load(path, pattern="gpt2", special_tokens={}).special_tokens == {}


@pytest.mark.parametrize("which", ["gpt2", "cl100k", "trained"])
def test_to_tiktoken(request, tiktoken_module, corpus_texts, which):
    tok = request.getfixturevalue(which)
    enc = tok.to_tiktoken()
    assert isinstance(enc, tiktoken_module.Encoding)
    for label, text in corpus_texts.items():
        text = text[:200_000]
        assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all"), label
    # loaded from GPT-2's files, where the merges are explicit, it is still tiktoken's gpt2
    if which == "gpt2":
        assert enc._mergeable_ranks == tiktoken_module.get_encoding("gpt2")._mergeable_ranks


def test_to_tiktoken_refuses_merges_ranks_cannot_express():
    # "abc" is merged from "ab" + "c", but tiktoken's rule would make it from "a" + "bc"
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"bc", 257: b"ab", 258: b"abc"}
    tok = tokenforge.Tokenizer.from_vocab_merges(vocab, [(b"b", b"c"), (b"a", b"b"), (b"ab", b"c")])
    assert tok.encode("abc") == [97, 256]  # the listed merges never make "abc" from "a" + "bc"
    with pytest.raises(ValueError, match=r"ranks imply merge 2 = \(b'a', b'bc'\), but its merge 2 is \(b'ab', b'c'\)"):
        tok.to_tiktoken()
    with pytest.raises(ValueError, match="tiktoken's rule cannot reproduce"):
        tok.save("/nonexistent/never-written.tiktoken", format="tiktoken")


# --------------------------------------------------------------------------------------------------
# GPT-2's encoder.json + vocab.bpe, and vocab.json + merges.txt


def test_gpt2_files_are_gpt2s(tmp_path, tiktoken_module, shared_dir, gpt2):
    gpt2.save(tmp_path, format="gpt2")
    assert json.loads((tmp_path / "encoder.json").read_text()) == json.loads((shared_dir / "vocab" / "gpt2_vocab.json").read_text())
    # GPT-2's vocab.bpe line for line, but the first line also names the vocabulary it belongs to
    # (readers skip that line; tokenforge refuses a merges file beside another vocabulary)
    from tokenforge.formats.pair_files import merges_header

    vocab = json.loads((tmp_path / "encoder.json").read_text())
    merges = (tmp_path / "vocab.bpe").read_text()
    assert merges == merges_header(vocab) + "\n" + (shared_dir / "vocab" / "gpt2_merges.txt").read_text()
    assert merges_header(vocab).startswith("#version: 0.2 ")
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    ranks = data_gym_to_mergeable_bpe_ranks(str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"))
    assert ranks == gpt2._mergeable_ranks
    # the folder those files are in loads too (it was "a folder without a tokenizer file")
    again = tokenforge.load(tmp_path)
    assert again.encode_ordinary("Hello world, 1234!") == gpt2.encode_ordinary("Hello world, 1234!")


def test_gpt2_files_from_shared(shared_dir, gpt2, corpus_texts):
    # gpt2_vocab.json names its companion gpt2_merges.txt; <|endoftext|> is recognised as special
    tok = tokenforge.load(shared_dir / "vocab" / "gpt2_vocab.json")
    assert tok.special_tokens == GPT2_SPECIAL and tok.vocab == gpt2.vocab and tok.name == "gpt2"
    text = corpus_texts["stdlib"]
    assert tok.encode_ordinary(text) == gpt2.encode_ordinary(text)
    same = tokenforge.load(shared_dir / "vocab" / "gpt2_merges.txt")
    assert same.vocab == tok.vocab and same.merges == tok.merges


def test_two_file_addressing(tmp_path, trained):
    trained.save(tmp_path / "a" / "my-vocab.json", format="vocab_merges")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["my-merges.txt", "my-vocab.json"]
    trained.save(tmp_path / "b", format="vocab_merges")
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["merges.txt", "vocab.json"]
    os.rename(tmp_path / "b" / "merges.txt", tmp_path / "b" / "m.txt")
    with pytest.raises(ValueError, match=r"vocab\.json: one half of a BPE vocabulary \+ merges pair: .*merges\.txt does not exist; pass merges_file=PATH"):
        tokenforge.load(tmp_path / "b" / "vocab.json")
    assert tokenforge.load(tmp_path / "b" / "vocab.json", merges_file=tmp_path / "b" / "m.txt").vocab == trained.vocab
    assert tokenforge.load(tmp_path / "b" / "m.txt", vocab_file=tmp_path / "b" / "vocab.json").merges == trained.merges
    with pytest.raises(ValueError, match=r"m\.txt: one half .* its name does not say where the other half is"):
        tokenforge.load(tmp_path / "b" / "m.txt")
    with pytest.raises(ValueError, match=r"name the vocabulary file"):
        trained.save(tmp_path / "c" / "tok.txt", format="gpt2")


def test_vocab_merges_read_by_tokenizers(tmp_path, trained, corpus_texts):
    tokenizers = pytest.importorskip("tokenizers")
    trained.save(tmp_path, format="vocab_merges")
    bpe = tokenizers.models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    ref = tokenizers.Tokenizer(bpe)
    ref.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    for label, text in corpus_texts.items():
        text = text[:100_000]
        assert ref.encode(text).ids == trained.encode_ordinary(text), label


def test_vocab_merges_without_some_byte_tokens_equal_tokenizers(tmp_path, trained, corpus_texts):
    # tokenizers reads a vocab.json + merges.txt that lacks tokens for bytes text can hold (no merge
    # uses them) and drops such a character; tokenforge refused the pair (the byte-level engine
    # needs every byte) and now takes it as it takes such a tokenizer.json (ByteBPE's droppable)
    import json

    tokenizers = pytest.importorskip("tokenizers")
    from tokenforge.byte_alphabet import BYTE_TO_CHAR

    trained.save(tmp_path, format="vocab_merges")
    vocab = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    merged = "".join(line.replace(" ", "") for line in (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()[1:])
    dropped = [b for b in (1, 2, 7, 0x1B, 0x7F) if BYTE_TO_CHAR[b] not in merged]
    assert dropped
    for b in dropped:
        del vocab[BYTE_TO_CHAR[b]]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "merges.txt").write_text("\n".join(["#version: 0.2", *lines[1:]]) + "\n", encoding="utf-8")  # (as another tool writes it: no pair fingerprint)
    ref = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt")))
    ref.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok = tokenforge.load(tmp_path / "vocab.json")
    texts = [corpus_texts["shakespeare"][:20_000], corpus_texts["multilingual"], "bell\x07 and\x01 escape\x1b[0m del\x7f end", "\x01\x02\x07", "a\x01b"]
    for text in texts:
        assert tok.encode_ordinary(text) == ref.encode(text).ids, text[:40]
    # a continuation byte missing: refused with the byte named (no UTF-8 text lacks them all)
    del vocab[BYTE_TO_CHAR[0x80]]
    (tmp_path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    merges = (tmp_path / "merges.txt").read_text(encoding="utf-8")
    if BYTE_TO_CHAR[0x80] not in merges:
        with pytest.raises(ValueError, match="0x80"):
            tokenforge.load(tmp_path / "vocab.json")


# --------------------------------------------------------------------------------------------------
# The .vocab listing


def test_listing(tmp_path, gpt2):
    path = tmp_path / "gpt2.vocab"
    gpt2.save(path, format="listing")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# tokenforge vocabulary listing: gpt2, 50257 tokens"
    assert len(lines) == 1 + 50257
    by_id = {int(line.split("\t")[0]): line for line in lines[1:]}
    assert by_id[198] == "198\t[\\n]"
    assert by_id[262] == "262\t[ the]\t[ t] + [he]"
    assert by_id[50256] == "50256\t[<|endoftext|>]\tspecial"
    assert by_id[188] == "188\t[\\x00]"
    assert by_id[187] == "187\t[\\xff]"  # not UTF-8 on its own
    assert by_id[255] == "255\t[\\xad]"
    with pytest.raises(ValueError, match=r"gpt2\.vocab: a \.vocab listing is for people and cannot be loaded"):
        tokenforge.load(path)


@pytest.mark.parametrize("b,shown", [
    (b"a b", "a b"), (b"\t\r\n", "\\t\\r\\n"), (b"\\x41", "\\\\x41"), (b"\x7f\x1b", "\\x7f\\x1b"),
    ("é日😀".encode(), "é日😀"), (b"\xe6\x97", "\\xe6\\x97"), ("\u200b\u00a0\u2028".encode(), "\\u200b\\xa0\\u2028"),
    ("a\u0301".encode(), "a\u0301"),
])
def test_listing_render(b, shown):
    assert listing.render(b) == shown


# --------------------------------------------------------------------------------------------------
# Broken files: each a ValueError naming the file and the problem


def _tiktoken_lines(lines):
    return "".join(f"{base64.b64encode(bytes([i])).decode()} {i}\n" for i in range(256)) + "".join(lines)


def _tf(**changes):
    vocab = [[i, base64.b64encode(bytes([i])).decode()] for i in range(256)]
    obj = {"format": "tokenforge", "version": 1, "model": "byte_bpe", "name": "t", "pattern": "gpt2",
           "special_tokens": {}, "ignore_merges": False, "vocab": vocab + [[256, "YWI="]], "merges": [[97, 98]]}
    obj.update(changes)
    return json.dumps(obj)


def _hf(gpt2_small, change):
    obj = json.loads(gpt2_small)
    change(obj)
    return json.dumps(obj)


@pytest.fixture(scope="module")
def gpt2_small(tmp_path_factory, gpt2):
    """A small tokenizer.json (GPT-2's bytes and first 50 merges)."""
    vocab = {i: b for i, b in gpt2.vocab.items() if i < 306}
    tok = tokenforge.Tokenizer.from_vocab_merges(vocab, gpt2.merges[:50], special_tokens={"<|endoftext|>": 306})
    path = tmp_path_factory.mktemp("small") / "tokenizer.json"
    tok.save(path, format="huggingface")
    return path.read_text()


BROKEN = [
    # (file name, content (str, bytes, or a function of the small tokenizer.json), overrides, [words of the message])
    ("empty.json", "", {}, ["the file is empty"]),
    ("blank.tiktoken", "\n  \n", {}, ["the file is empty"]),
    ("tokenizer.json", lambda s: s[: len(s) // 2], {}, ["not valid JSON", "line"]),
    ("t.json", '{"format": "tokenforge", "version": 1, "vocab": [', {}, ["not valid JSON"]),
    ("t.json", _tf(version=99), {}, ["version: unsupported format version 99"]),
    ("tokenizer.json", lambda s: _hf(s, lambda o: o.update(version="2.0")), {}, ["version: unsupported tokenizer.json version '2.0'"]),
    ("t.json", _tf(format="tokenforge2"), {}, ["format: unknown format 'tokenforge2'"]),
    ("x.tiktoken", _tiktoken_lines(["YWI= 256\n", "!!!! 257\n"]), {"pattern": "gpt2", "special_tokens": {}},
     ["line 258", "'!!!!' is not valid base64"]),
    ("x.tiktoken", _tiktoken_lines(["YWI= 256\n", "YWJj 256\n"]), {"pattern": "gpt2", "special_tokens": {}},
     ["line 258", "duplicate rank 256 (also on line 257)"]),
    ("x.tiktoken", _tiktoken_lines(["YWI= 256\n", "YWI= 257\n"]), {"pattern": "gpt2", "special_tokens": {}},
     ["line 258", "token b'ab' appears twice"]),
    ("x.tiktoken", _tiktoken_lines(["YWI= x\n"]), {"pattern": "gpt2", "special_tokens": {}},
     ["line 257", "the rank 'x' is not a non-negative integer"]),
    ("x.tiktoken", _tiktoken_lines(["YWI=\n"]), {"pattern": "gpt2", "special_tokens": {}}, ["line 257", "expected 'base64-token rank'"]),
    ("x.tiktoken", "YWI= 256\n", {"pattern": "gpt2", "special_tokens": {}}, ["ranks: no token for 256 of the 256 bytes"]),
    ("t.json", _tf(vocab=[[i, base64.b64encode(bytes([i])).decode()] for i in range(256)] + [[255, "YWI="]]), {},
     ["vocab[256]: duplicate id 255"]),
    ("t.json", _tf(vocab=[[i, "not base64!"] for i in range(2)]), {}, ["vocab[0]: expected [id, base64 bytes]"]),
    ("t.json", _tf(merges=[[97, 9999]]), {}, ["merges[0]: id 9999 is not in the vocabulary"]),
    ("tokenizer.json", lambda s: _hf(s, lambda o: o["model"]["vocab"].update({"Ġt": 5})), {}, ["model.vocab['Ġt']: duplicate id 5"]),
    ("tokenizer.json", lambda s: s.replace('"Ġt": 256', '"Ġt": 256, "Ġt": 257'), {}, ["the key 'Ġt' appears twice"]),
    ("tokenizer.json", lambda s: _hf(s, lambda o: o["model"]["merges"].append("Ġ zz")), {}, ["model.merges[50]: 'zz' is not in model.vocab"]),
    ("tokenizer.json", lambda s: _hf(s, lambda o: o["model"]["merges"].append("Ġ t x")), {}, ["model.merges[50]: expected 'left right'"]),
    ("tokenizer.json", lambda s: _hf(s, lambda o: o["model"]["merges"].append("Ġ t")), {}, ["model.merges[50]: the merge 'Ġ' + 't' appears twice"]),
    ("tokenizer.json", lambda s: _hf(s, lambda o: o["model"]["vocab"].pop("Ā")), {}, ["model.vocab: no token for 1 of the 256 bytes (first: 0x00"]),
    ("vocab.json", '{"a": 0, "b": 1, "ab": 2}', {"merges_file": "SIBLING"},
     ["vocab.json: no token for 254 of the 256 bytes", "not a byte-level BPE vocabulary"]),
    ("merges.txt", "#version: 0.2\nĠ t\nĠ t x\n", {"vocab_file": "GPT2"}, ["merges.txt: line 3: expected 'left right'"]),
    ("merges.txt", "#version: 0.2\nĠ t\nĠ qqq\n", {"vocab_file": "GPT2"}, ["merges.txt: line 3: 'qqq' is not a token"]),
    ("merges.txt", "#version: 0.2\nĠ t\nĠ t\n", {"vocab_file": "GPT2"}, ["merges.txt: line 3: the merge 'Ġ' + 't' appears twice"]),
    ("vocab.json", '{"!": 0, "\\"": 0}', {"merges_file": "SIBLING"}, ["vocab.json: [\'\"\']: duplicate id 0 (also '!')"]),
    ("notes.txt", "hello there, this is prose\n", {}, ["notes.txt: line 1: not a tokenizer file in any known format"]),
    ("data.json", "[1, 2, 3]", {}, ["a JSON list, not a tokenizer"]),
    ("data.json", '{"name": "x", "items": [1]}', {}, ["neither a tokenforge file, a Hugging Face tokenizer.json, nor a vocabulary"]),
    ("blob.bin", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", {}, ["not JSON, and not UTF-8 text"]),
]


@pytest.mark.parametrize("name,content,overrides,words", BROKEN, ids=[f"{b[0]}:{b[3][0][:30]}" for b in BROKEN])
def test_broken_file(tmp_path, shared_dir, gpt2_small, name, content, overrides, words):
    if callable(content):
        content = content(gpt2_small)
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    overrides = dict(overrides)
    for key, value in overrides.items():
        if value == "SIBLING":
            overrides[key] = tmp_path / "merges.txt"
            (tmp_path / "merges.txt").write_text("#version: 0.2\na b\n")
        elif value == "GPT2":
            overrides[key] = shared_dir / "vocab" / "gpt2_vocab.json"
    with pytest.raises(ValueError) as e:
        tokenforge.load(path, **overrides)
    message = str(e.value)
    assert message.startswith(str(path)), message
    for w in words:
        assert w in message, message


def test_directory(tmp_path):
    # a directory is read as a transformers model folder (formats/model_folder.py)
    with pytest.raises(ValueError, match=r"a folder without a tokenizer file \(looked for tokenizer.json"):
        tokenforge.load(tmp_path)


def test_unknown_override_and_format(tmp_path, trained):
    trained.save(tmp_path / "t.json")
    with pytest.raises(ValueError, match=r"t\.json: .*unexpected keyword"):
        tokenforge.load(tmp_path / "t.json", nonsense=1)
    trained.save(tmp_path / "tokenizer.json", format="hf")
    with pytest.raises(ValueError, match=r"tokenizer\.json: .*unexpected keyword"):
        tokenforge.load(tmp_path / "tokenizer.json", nonsense=1)
    with pytest.raises(ValueError, match=r"unknown format 'bogus'; known: 'tokenforge', 'huggingface', 'tiktoken'"):
        trained.save(tmp_path / "x", format="bogus")


# --------------------------------------------------------------------------------------------------
# Saves are atomic


@pytest.mark.parametrize("fmt,target", [
    ("tokenforge", "t.json"), ("huggingface", "tokenizer.json"), ("tiktoken", "t.tiktoken"),
    ("gpt2", "encoder.json"), ("vocab_merges", "vocab.json"), ("listing", "t.vocab"),
])
def test_interrupted_save_leaves_old_files(tmp_path, monkeypatch, trained, gpt2, fmt, target):
    trained.save(tmp_path / target, format=fmt)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        gpt2.save(tmp_path / target, format=fmt)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temporary file left either


# --------------------------------------------------------------------------------------------------
# convert, and the normalizer stage


def test_convert(tmp_path, shared_dir, corpus_texts):
    tok = tokenforge.io.convert(shared_dir / "vocab" / "o200k_base.tiktoken", tmp_path / "tokenizer.json", "hf",
                          pattern="o200k", special_tokens={"<|endoftext|>": 199999})
    back = tokenforge.io.convert(tmp_path / "tokenizer.json", tmp_path / "o200k.json", "tokenforge")
    again = tokenforge.load(tmp_path / "o200k.json")
    text = corpus_texts["multilingual"]
    assert tok.encode_ordinary(text) == back.encode_ordinary(text) == again.encode_ordinary(text)
    assert again.pattern == patterns.O200K and again.special_tokens == {"<|endoftext|>": 199999}


def test_normalizer_stage(tmp_path, gpt2, corpus_texts):
    tok = tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=gpt2._mergeable_ranks, special_tokens=GPT2_SPECIAL, normalizer="NFKC")
    text = corpus_texts["multilingual"]
    assert unicodedata.normalize("NFKC", text) != text
    assert tok.encode_ordinary(text) == gpt2.encode_ordinary(unicodedata.normalize("NFKC", text))
    assert tok.encode_batch([text, "ﬁ"]) == [tok.encode(text), gpt2.encode("fi")]
    assert tok.encode_to_numpy(text).tolist() == tok.encode(text)
    # special tokens are found before normalizing: a combining mark after one does not eat its ">"
    assert tok.encode("<|endoftext|>\u0338", allowed_special="all")[0] == 50256
    assert tok.encode_batch(["<|endoftext|>\u0338"], allowed_special="all")[0][0] == 50256
    assert tok.encode_ordinary("<|endoftext|>\u0338") == gpt2.encode_ordinary("<|endoftext|\u226f")
    assert tok.encode("a\ud800b ﬁ") == gpt2.encode("a\ufffdb fi")  # lone surrogates as elsewhere
    chunks = [text[i:i + 100] for i in range(0, len(text), 100)]
    assert list(tok.encode_iterable(chunks * 40)) == tok.encode(text * 40)
    assert pickle.loads(pickle.dumps(tok)).encode(text) == tok.encode(text)
    with pytest.raises(ValueError, match="normalizer must be None or one of"):
        tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=gpt2._mergeable_ranks, normalizer="lowercase")
    tok.save(tmp_path / "n.json")
    assert tokenforge.load(tmp_path / "n.json").normalizer == "NFKC"
