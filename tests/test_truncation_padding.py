"""Truncation and padding against Hugging Face `tokenizers`: every strategy, direction, length,
stride, pair and padding setting, built in `tokenizers`, saved as tokenizer.json, loaded by
tokenforge, and compared id for id on real text (encode, pairs, encode_batch); the same settings
made with tokenforge's methods and written back for `tokenizers` to read."""

from __future__ import annotations

import itertools
import json
import pickle

import pytest

import tokenforge
from tokenforge import post_processors

hf = pytest.importorskip("tokenizers")
from tokenizers import models as M  # noqa: E402
from tokenizers import normalizers as N  # noqa: E402
from tokenizers import pre_tokenizers as P  # noqa: E402
from tokenizers import processors as PP  # noqa: E402


@pytest.fixture(scope="module")
def lines(corpus_texts):
    text = corpus_texts["multilingual"] + corpus_texts["taylorswift"][:6_000]
    out = [l for l in text.splitlines() if l.strip()][:60]
    return out + ["", "a", "two words"]


@pytest.fixture(scope="module")
def bert(lines):
    """A WordPiece tokenizer of the lines' words, with BERT's pipeline and [CLS] $A [SEP]."""
    words = sorted({w for l in lines for w in l.lower().split()})[:300]
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in words:
        vocab.setdefault(w, len(vocab))
    for c in sorted(set("".join(lines).lower())):
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    t = hf.Tokenizer(M.WordPiece(vocab, unk_token="[UNK]"))
    t.normalizer = N.BertNormalizer(lowercase=True)
    t.pre_tokenizer = P.BertPreTokenizer()
    t.post_processor = PP.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    return t


def _load(t, tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(t.to_str(), encoding="utf-8")
    return tokenforge.load(path)


TRUNCATIONS = [None, *(dict(max_length=m, strategy=s, direction=d, stride=st)
                       for m, s, d, st in itertools.product((0, 1, 3, 7, 16), ("longest_first", "only_first", "only_second"),
                                                            ("right", "left"), (0, 1))
                       if st <= max(m - 2, 0))]
PADDINGS = [None, dict(), dict(length=24, direction="left", pad_id=0), dict(pad_to_multiple_of=5, pad_id=0, pad_type_id=1),
            dict(length=3, pad_to_multiple_of=4, direction="left", pad_id=7, pad_token="[X]")]


def _hf_ids(fn):
    try:
        return fn()
    except BaseException as e:  # tokenizers raises a bare Exception, or panics, on truncation errors
        if isinstance(e, KeyboardInterrupt):
            raise
        return "error"


def _ours(fn):
    try:
        return fn()
    except ValueError:
        return "error"


@pytest.mark.parametrize("padding", PADDINGS, ids=lambda p: "nopad" if p is None else "pad" + json.dumps(p, sort_keys=True))
def test_file_settings_match_tokenizers(tmp_path, bert, lines, padding):
    pairs = list(zip(lines[::2], lines[1::2]))
    for truncation in TRUNCATIONS:
        t = hf.Tokenizer.from_str(bert.to_str())
        if truncation is not None:
            t.enable_truncation(**truncation)
        if padding is not None:
            t.enable_padding(**padding)
        tok = _load(t, tmp_path)
        assert tok.truncation == t.truncation and tok.padding == t.padding
        what = f"truncation={truncation} padding={padding}"
        for special in (True, False):
            for line in lines[:20]:
                assert _ours(lambda: tok.encode(line, add_special_tokens=special)) == \
                    _hf_ids(lambda: t.encode(line, add_special_tokens=special).ids), (what, line)
            for a, b in pairs[:12]:
                assert _ours(lambda: tok.encode(a, pair=b, add_special_tokens=special)) == \
                    _hf_ids(lambda: t.encode(a, b, add_special_tokens=special).ids), (what, a, b)
            for batch in (lines, pairs):
                assert _ours(lambda: tok.encode_batch(batch, add_special_tokens=special)) == \
                    _hf_ids(lambda: [e.ids for e in t.encode_batch(batch, add_special_tokens=special)]), what


def test_methods_write_what_tokenizers_reads(tmp_path, bert, lines):
    tok = _load(bert, tmp_path)
    assert tok.truncation is None and tok.padding is None
    tok.enable_truncation(9, stride=2, strategy="only_first", direction="left")
    tok.enable_padding(direction="left", pad_id=0, pad_token="[PAD]", length=12, pad_to_multiple_of=8)
    out = tmp_path / "out" / "tokenizer.json"
    out.parent.mkdir()
    tok.save(out, format="huggingface")
    t = hf.Tokenizer.from_file(str(out))
    assert t.truncation == tok.truncation == {"max_length": 9, "stride": 2, "strategy": "only_first", "direction": "left"}
    assert t.padding == tok.padding
    assert tok.encode_batch(lines) == [e.ids for e in t.encode_batch(lines)]
    assert all(len(r) == 16 for r in tok.encode_batch(lines))
    # tokenforge's own file and pickling keep them
    own = tmp_path / "own.json"
    tok.save(own)
    again = tokenforge.load(own)
    assert again.truncation == tok.truncation and again.padding == tok.padding
    assert pickle.loads(pickle.dumps(tok)).encode(lines[0]) == tok.encode(lines[0])
    tok.no_truncation()
    tok.no_padding()
    assert tok.truncation is None and tok.padding is None
    assert tok.encode(lines[0]) == bert.encode(lines[0]).ids
    # encode_ordinary is tiktoken's: never truncated nor padded
    tok.enable_truncation(2)
    assert len(tok.encode_ordinary(lines[0])) > 2 and len(tok.encode(lines[0])) == 2


def test_byte_level_fast_path_truncates_and_pads(shared_dir):
    """The tiktoken-style fast path (one native call) goes through the same truncation and padding."""
    enc = tokenforge.Tokenizer.from_ranks({bytes([i]): i for i in range(256)} | {b"ab": 256}, pattern="gpt2")
    enc.enable_truncation(3, direction="left")
    enc.enable_padding(pad_id=0, length=5)
    assert enc.encode("abcabx") == [99, 256, 120, 0, 0] and enc.encode("x") == [120, 0, 0, 0, 0]
    assert enc.encode_batch(["abcabx", "x"]) == [[99, 256, 120, 0, 0], [120, 0, 0, 0, 0]]
    assert enc.encode_to_numpy("abcabx").tolist() == [99, 256, 120, 0, 0]
    assert enc.encode_ordinary("abcabx") == [256, 99, 256, 120]
    ids, mask = enc.encode_batch(["abcabx", "x"], padding=True)  # transformers' keywords: numpy, the same cut
    assert ids.tolist() == [[99, 256, 120], [120, 0, 0]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]


def test_settings_made_after_direct_calls_apply_to_the_next_call():
    """encode and encode_to_numpy call the engine directly once the first call has made the default
    masks (_refresh_direct); every later setting (truncation, padding, a post-processor) and its
    removal must end or restore that shortcut, in either order."""
    enc = tokenforge.Tokenizer.from_ranks({bytes([i]): i for i in range(256)} | {b"ab": 256}, pattern="gpt2",
                                          special_tokens={"<|end|>": 257})
    plain = [256, 99, 256, 120]
    for _ in range(2):  # (the second call runs the shortcut)
        assert enc.encode("abcabx") == plain and enc.encode_to_numpy("abcabx").tolist() == plain
    enc.enable_truncation(3)
    assert enc.encode("abcabx") == [256, 99, 256] and enc.encode_to_numpy("abcabx").tolist() == [256, 99, 256]
    enc.enable_padding(pad_id=0, length=5)
    assert enc.encode("abcabx") == [256, 99, 256, 0, 0] and enc.encode_to_numpy("abcabx").tolist() == [256, 99, 256, 0, 0]
    enc.no_truncation()
    assert enc.encode("abcabx") == plain + [0] and enc.encode_to_numpy("abcabx").tolist() == plain + [0]
    enc.no_padding()
    assert enc.encode("abcabx") == plain and enc.encode_to_numpy("abcabx").tolist() == plain
    enc.post_processor = post_processors.TemplateProcessing(single="$A <|end|>", special_tokens=[("<|end|>", 257)])
    assert enc.encode("abcabx") == plain + [257] and enc.encode_to_numpy("abcabx").tolist() == plain + [257]
    assert enc.encode("abcabx", add_special_tokens=False) == plain
    enc.post_processor = None
    assert enc.encode("abcabx") == plain and enc.encode_to_numpy("abcabx").tolist() == plain
    with pytest.raises(ValueError, match="disallowed special token"):
        enc.encode("ab<|end|>")  # (the shortcut's error takes the long way, tiktoken's message)
    assert enc.encode("ab<|end|>", allowed_special="all") == [256, 257]
    assert enc.encode("ab\ud800") == enc.encode("ab\ufffd")  # (a lone surrogate: the long way too)


PAD = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0, "pad_type_id": 0,
       "pad_token": "[PAD]"}


def test_bad_settings_are_value_errors(tmp_path, bert):
    tok = _load(bert, tmp_path)
    with pytest.raises(ValueError, match="strategy"):
        tok.enable_truncation(5, strategy="middle")
    with pytest.raises(ValueError, match="direction"):
        tok.enable_truncation(5, direction="up")
    with pytest.raises(ValueError, match="stride"):
        tok.enable_truncation(5, stride=4)  # 5 - 2 template tokens leave 3
    with pytest.raises(ValueError, match="non-negative"):
        tok.enable_truncation(-1)
    with pytest.raises(ValueError, match="direction"):
        tok.enable_padding(direction="middle")
    with pytest.raises(TypeError):
        tok.enable_padding(pad_token=3)
    tok.enable_truncation(4, strategy="only_second")
    with pytest.raises(ValueError, match="pair"):
        tok.encode("many words here to cut")
    tok.enable_truncation(5, strategy="only_first")
    with pytest.raises(ValueError, match="too few"):
        tok.encode("a", pair="many words here to cut")
    obj = json.loads(bert.to_str())
    for key, value, where in (("truncation", {"max_length": "9", "strategy": "LongestFirst", "stride": 0}, "truncation.max_length"),
                              ("truncation", {"max_length": 9, "strategy": "Longest", "stride": 0}, "truncation.strategy"),
                              ("truncation", {"max_length": 9, "strategy": "LongestFirst", "stride": 0, "x": 1}, "truncation.x"),
                              ("truncation", {"max_length": 9}, "truncation.strategy: missing"),
                              ("padding", {**PAD, "strategy": {"Fixed": "8"}}, "padding.strategy"),
                              ("padding", {**PAD, "direction": "Up"}, "padding.direction"),
                              ("padding", {**PAD, "pad_id": -1}, "padding"),
                              ("padding", {"strategy": "BatchLongest"}, "padding.direction: missing")):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**obj, key: value}), encoding="utf-8")
        with pytest.raises(ValueError, match=f"bad.json.*{where}"):
            tokenforge.load(path)


def test_transformers_folder_leaves_them_out(tmp_path, bert):
    """transformers turns a tokenizer.json's truncation and padding off unless a call asks: a model
    folder loads without them, a bare tokenizer.json with them, ignore= leaves them out."""
    t = hf.Tokenizer.from_str(bert.to_str())
    t.enable_truncation(4)
    t.enable_padding(length=6)
    (tmp_path / "tokenizer.json").write_text(t.to_str(), encoding="utf-8")
    assert tokenforge.load(tmp_path / "tokenizer.json").truncation is not None
    assert tokenforge.load(tmp_path / "tokenizer.json", ignore={"truncation"}).truncation is None
    folder = tokenforge.load(tmp_path)
    assert folder.truncation is None and folder.padding is None


def test_pad_and_truncate_by_hand():
    cut = post_processors.Truncation(5, strategy="longest_first")
    assert cut.truncate([1, 2, 3, 4, 5, 6, 7, 8], [9, 10]) == ([1, 2, 3], [9, 10])
    assert cut.truncate([1] * 8, [2] * 8) == ([1, 1], [2, 2, 2])
    assert post_processors.Truncation(3, direction="left").truncate([1, 2, 3, 4]) == ([2, 3, 4], None)
    pad = post_processors.Padding(pad_to_multiple_of=4, pad_id=9)
    assert pad.pad([[1], [1, 2, 3, 4, 5]]) == [[1, 9, 9, 9, 9, 9, 9, 9], [1, 2, 3, 4, 5, 9, 9, 9]]
