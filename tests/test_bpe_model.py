"""Hugging Face's BPE model with plain-text tokens (models/bpe.py): Llama-2-style tokenizer.json
files (byte fallback, fused unknown tokens, no pre-tokenizer: the whole text is one piece).

- A real vocabulary in that shape: Mistral's first sentencepiece model (fetched by
  tools/fetch_real_tokenizers.py) written as transformers' converter writes Llama 2's
  tokenizer.json, read by Hugging Face's tokenizers and by tokenforge: the same ids on the
  battery's documents (single, batch), the same texts back.
- The native merge loop (cpp/char_bpe.h) against the pure-Python rule (`encode_word_reference`),
  hypothesis over vocabularies with byte tokens, unknown tokens fused or not, an end-of-word suffix.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge.models import BPE

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from fetch_real_tokenizers import cache_dir  # noqa: E402
from llama2_style_json import llama2_style_json  # noqa: E402


def test_a_llama2_style_file_equals_tokenizers_on_real_text(tmp_path):
    hf = pytest.importorskip("tokenizers")
    pytest.importorskip("sentencepiece")
    model_file = cache_dir() / "mistral-common" / "tokenizer.model.v1"
    if not model_file.is_file():
        pytest.skip(f"not downloaded: {model_file} (run tools/fetch_real_tokenizers.py)")
    text = llama2_style_json(model_file)
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    reference = hf.Tokenizer.from_str(text)
    tok = tokenforge.load(path)
    assert isinstance(tok.model, BPE) and tok.model._native is not None and len(tok.model.merges) > 50_000
    from test_real_files import documents

    docs = documents() + ["\x00\x01 tabs\tand\u3000ideographic space", "😀🫶 \U000e0067 unknown-free: bytes"]
    want = [reference.encode(d, add_special_tokens=False).ids for d in docs]
    assert [tok.encode(d, add_special_tokens=False) for d in docs] == want
    assert tok.encode_batch(docs, add_special_tokens=False, num_threads=2) == want
    assert [tok.decode(ids) for ids in want[:40]] == [reference.decode(ids) for ids in want[:40]]
    # saved and read back: tokenforge's file and tokenizer.json
    tok.save(tmp_path / "own.json")
    tok.save(tmp_path / "again.json", format="huggingface")
    for again in (tokenforge.load(tmp_path / "own.json"), tokenforge.load(tmp_path / "again.json")):
        assert [again.encode(d, add_special_tokens=False) for d in docs[:30]] == want[:30]
    assert [hf.Tokenizer.from_file(str(tmp_path / "again.json")).encode(d, add_special_tokens=False).ids
            for d in docs[:30]] == want[:30]


_symbols = ["a", "b", "c", "é", "▁", "ab", "bc", "abc", "▁a", "cé", "▁▁"]


@settings(max_examples=400, deadline=None)
@given(merge_list=st.lists(st.tuples(st.sampled_from(_symbols), st.sampled_from(_symbols)), max_size=12),
       byte_fallback=st.booleans(), fuse_unk=st.booleans(), unk=st.booleans(), suffix=st.booleans(),
       ignore_merges=st.booleans(), space_inside=st.booleans(),
       words=st.lists(st.text(alphabet="abcé▁x😀", max_size=16), max_size=4))
def test_native_merge_loop_equals_the_python_rule(merge_list, byte_fallback, fuse_unk, unk, suffix, ignore_merges,
                                                  space_inside, words):
    # (space_inside: a token with "▁" after "a", which forbids cutting texts before a "▁" after "a")
    vocab = {"<unk>": 0} if unk else {}
    for s in _symbols + (["a▁"] if space_inside else []):
        vocab.setdefault(s, len(vocab))
    if suffix:
        for s in list(vocab):
            vocab.setdefault(s + "</w>", len(vocab))
    if byte_fallback:
        for b in "x".encode() + "😀".encode()[:2]:  # some characters' bytes only: others stay unknown
            vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    merges = [(a, b) for a, b in merge_list + [("a", "▁")] if a + b in vocab]
    if suffix:
        merges += [(a, b + "</w>") for a, b in merge_list if a + b + "</w>" in vocab and b + "</w>" in vocab]
    model = BPE(vocab, merges, unk_token="<unk>" if unk else None, end_of_word_suffix="</w>" if suffix else None,
                byte_fallback=byte_fallback and not suffix, fuse_unk=fuse_unk, ignore_merges=ignore_merges)
    assert model._native is not None
    assert model._cut_at_spaces == (not (suffix or ignore_merges))
    if model._cut_at_spaces:
        assert model._native.before_space == sorted(["▁"] + (["a"] if space_inside else []))
    assert model.encode_words(words) == model.encode_words_reference(words)
    assert model.encode_batch_texts(words, 2) == [model.encode_words_reference([w]) for w in words]


def _gemma_shaped_json(raw: list[str], normalized: list[str]) -> str:
    """A tokenizer.json shaped like Gemma's: plain-text BPE with byte fallback, the normalizer
    Replace(' ', '▁'), added tokens matched as written (`raw`) and normalized ones."""
    from tokenizers import AddedToken, Tokenizer, normalizers
    from tokenizers.models import BPE as HFBPE

    vocab = {"<unk>": 0, "<s>": 1, **{f"<0x{b:02X}>": 2 + b for b in range(256)}}
    for t in ["a", "b", "é", "▁", "▁a", "ab", "▁ab", "b▁", *raw, *normalized]:
        vocab.setdefault(t, len(vocab))
    hf = Tokenizer(HFBPE(vocab, [("▁", "a"), ("a", "b"), ("▁a", "b"), ("b", "▁")], unk_token="<unk>",
                         byte_fallback=True, fuse_unk=True))
    hf.normalizer = normalizers.Replace(" ", "▁")
    hf.add_tokens([AddedToken(t, normalized=False) for t in raw] + [AddedToken(t, normalized=True) for t in normalized])
    hf.add_special_tokens(["<s>"])
    return hf.to_str()


_GEMMA_SHAPES = {
    # Gemma's: newlines and tags as written, runs of '▁' normalized: the text is normalized once
    "disjoint": (["\n", "\n\n", "\t", "<h1>", "</h1>"], ["▁▁", "▁▁▁"]),
    # a token as written starting with a space ('▁a' once normalized) shares '▁' with the
    # normalized ones, which could straddle it ("  a": '▁▁' over its space): the stretch-by-stretch way
    "shared": (["\n", " a", "<h1>"], ["▁▁", "▁▁▁"]),
}


@pytest.mark.parametrize("shape", sorted(_GEMMA_SHAPES))
@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(["a", "b", "é", " ", "  ", "   ", "\n", "\n\n", "\t", "<h1>", "</h1>", "▁",
                                        "a b", " a", "<s>", "x", "😀", "ab", "\u3000"]), max_size=30))
def test_added_tokens_found_in_place_equal_tokenizers(shape, pieces):
    # Tokenizer._in_place (the text normalized once, both kinds of added tokens found in one pass
    # each, natively) against tokenizers' stretch-by-stretch AddedVocabulary, in encode and
    # encode_batch
    hf = pytest.importorskip("tokenizers")
    text = "".join(pieces)
    reference, tok = _GEMMA_TOKENIZERS.get(shape) or _GEMMA_TOKENIZERS.setdefault(shape, _both(*_GEMMA_SHAPES[shape], hf))
    assert (tok._char_map is not None) == (shape == "disjoint")
    want = reference.encode(text, add_special_tokens=False).ids
    assert tok.encode(text, add_special_tokens=False) == want
    long = text * (1 + 3000 // (len(text) + 1))  # (a long text takes the batch-of-one path)
    assert tok.encode(long, add_special_tokens=False) == reference.encode(long, add_special_tokens=False).ids
    assert tok.encode_batch([text, long], add_special_tokens=False, num_threads=2) == \
        [want, reference.encode(long, add_special_tokens=False).ids]
    # encode_ordinary: the same ids as encode without special tokens (<s> left as text)
    assert tok.encode_ordinary(text) == tok.encode(text, allowed_special=set(), disallowed_special=(),
                                                   add_special_tokens=False)


_GEMMA_TOKENIZERS: dict = {}


def _both(raw, normalized, hf):
    import tempfile

    text = _gemma_shaped_json(raw, normalized)
    path = Path(tempfile.mkdtemp()) / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    return hf.Tokenizer.from_str(text), tokenforge.load(path)
