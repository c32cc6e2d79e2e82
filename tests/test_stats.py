"""Corpus statistics (tokenforge.stats): numbers against a direct computation, and the report."""

from __future__ import annotations

import collections
import json
import pathlib

import numpy as np
import pytest

import tokenforge
from tokenforge import stats


def direct(enc, texts, *, allowed_special=frozenset()):
    """The statistics computed the obvious way, token by token."""
    ids = [i for t in texts for i in enc.encode(t, allowed_special=allowed_special, disallowed_special=())]
    counts = collections.Counter(ids)
    lengths = collections.Counter()
    for i, c in counts.items():
        lengths[len(enc.decode_single_token_bytes(i))] += c
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    return ids, counts, lengths, n_bytes


@pytest.fixture(scope="module")
def sample(corpus_texts):
    return [corpus_texts["shakespeare"][:40_000], corpus_texts["multilingual"], corpus_texts["stdlib"][:30_000]]


@pytest.mark.parametrize("name", ["cl100k_base", "gpt2"])
def test_numbers_match_a_direct_computation(sample, name):
    enc = tokenforge.get_encoding(name)
    s = stats.corpus_stats(enc, sample, top_k=15)
    ids, counts, lengths, n_bytes = direct(enc, sample)

    assert s["tokenizer"] == name
    assert s["tokens"] == len(ids)
    assert s["bytes"] == n_bytes
    assert s["chars"] == sum(map(len, sample))
    assert s["texts"] == 3 and s["files"] == []
    assert s["bytes_per_token"] == pytest.approx(n_bytes / len(ids))
    assert s["compression_ratio"] == s["bytes_per_token"]
    assert s["chars_per_token"] == pytest.approx(s["chars"] / len(ids))
    assert s["token_length_histogram"] == sorted([n, c] for n, c in lengths.items())
    assert sum(c for _, c in s["token_length_histogram"]) == len(ids)

    expected_top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:15]
    assert [(t["id"], t["count"]) for t in s["top_tokens"]] == expected_top
    for t in s["top_tokens"]:
        assert bytes.fromhex(t["bytes"]) == enc.decode_single_token_bytes(t["id"])
        assert t["share"] == pytest.approx(t["count"] / len(ids))

    vocab_size = len(enc.vocab)
    assert s["vocab_size"] == vocab_size
    assert s["n_vocab"] == enc.n_vocab
    assert s["distinct_tokens"] == len(counts)
    assert s["vocab_used_share"] == pytest.approx(len(counts) / vocab_size)
    assert s["rank_frequency"] == sorted(counts.values(), reverse=True)
    vocab_lengths = collections.Counter(len(b) for b in enc.vocab.values())
    assert s["vocab_length_histogram"] == sorted([n, c] for n, c in vocab_lengths.items())

    ranked = sorted(counts.values(), reverse=True)
    for key, level in (("50%", 0.5), ("90%", 0.9), ("99%", 0.99)):
        n = s["coverage"][key]
        assert sum(ranked[:n]) >= level * len(ids) > sum(ranked[: n - 1])


def test_files_equal_texts_and_stream(tmp_path, corpus_texts):
    enc = tokenforge.get_encoding("o200k_base")
    # Over one READ_CHARS chunk and one encode_iterable buffer, with \r\n kept as it is.
    big = corpus_texts["shakespeare"][:1_200_000].replace("\n\n", "\r\n\r\n")
    small = corpus_texts["multilingual"]
    paths = [tmp_path / "big.txt", tmp_path / "small.txt"]
    paths[0].write_bytes(big.encode())
    paths[1].write_bytes(small.encode())
    from_files = stats.corpus_stats(enc, paths)
    from_texts = stats.corpus_stats(enc, [big, small])
    assert from_files["files"] == [str(p) for p in paths] and from_files["texts"] == 0
    for key in ("tokens", "bytes", "chars", "token_length_histogram", "top_tokens", "rank_frequency", "coverage"):
        assert from_files[key] == from_texts[key], key
    assert from_files["bytes"] == sum(p.stat().st_size for p in paths)
    assert from_files["tokens"] == len(enc.encode(big)) + len(enc.encode(small))
    # A single path or a single text is one input, not an iterable of characters.
    assert stats.corpus_stats(enc, paths[1])["tokens"] == stats.corpus_stats(enc, small)["tokens"] == len(enc.encode(small))


def test_special_tokens_are_text_unless_allowed(corpus_texts):
    enc = tokenforge.get_encoding("cl100k_base")
    text = corpus_texts["tinystories"][:20_000]
    assert "<|endoftext|>" in text
    plain = stats.corpus_stats(enc, [text])
    allowed = stats.corpus_stats(enc, [text], allowed_special="all")
    assert plain["tokens"] == len(enc.encode_ordinary(text))
    assert allowed["tokens"] == len(enc.encode(text, allowed_special="all"))
    assert allowed["tokens"] < plain["tokens"]
    ids, counts, lengths, _ = direct(enc, [text], allowed_special="all")
    assert allowed["token_length_histogram"] == sorted([n, c] for n, c in lengths.items())


def test_errors(tmp_path):
    enc = tokenforge.get_encoding("gpt2")
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\u00e9 ".encode("latin-1") * 10)
    with pytest.raises(ValueError, match="latin1.txt: not UTF-8"):
        stats.corpus_stats(enc, [bad])
    with pytest.raises(ValueError, match="is a directory"):
        stats.corpus_stats(enc, [tmp_path])
    with pytest.raises(TypeError, match="each input must be a str"):
        stats.corpus_stats(enc, [b"bytes"])
    with pytest.raises(TypeError, match="Tokenizer or an encoding name"):
        stats.corpus_stats(object(), ["x"])
    with pytest.raises(ValueError, match="no statistics"):
        stats.write_report([], tmp_path / "r")


def test_encoding_name_and_empty_input():
    s = stats.corpus_stats("gpt2", [])
    assert s["tokens"] == s["bytes"] == s["distinct_tokens"] == 0
    assert s["bytes_per_token"] is None and s["vocab_used_share"] == 0.0
    assert s["coverage"] == {"50%": 0, "90%": 0, "99%": 0}
    assert s["top_tokens"] == [] and s["token_length_histogram"] == []


def _check_png(path: pathlib.Path, min_size=(400, 900)):
    image = pytest.importorskip("matplotlib.image")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(path)
    height, width = pixels.shape[:2]
    assert height >= min_size[0] and width >= min_size[1]
    # Something is drawn: many distinct colours, not a blank canvas.
    rgb = (pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    assert len(np.unique(rgb, axis=0)) > 20


def test_report_files(tmp_path, sample):
    pytest.importorskip("matplotlib")
    runs = [stats.corpus_stats(name, sample) for name in ("gpt2", "cl100k_base", "o200k_base")]
    paths = stats.write_report(runs, tmp_path / "report")
    assert set(paths) == {"json", "markdown", "token_lengths", "vocab_use"}
    assert json.loads(paths["json"].read_text()) == runs
    md = paths["markdown"].read_text()
    assert "| | gpt2 | cl100k_base | o200k_base |" in md
    assert f"| tokens | {runs[0]['tokens']:,} | {runs[1]['tokens']:,} | {runs[2]['tokens']:,} |" in md
    assert f"{runs[1]['bytes_per_token']:.3f}" in md
    assert "![token length distribution](token_lengths.png)" in md
    assert "## Most frequent tokens: o200k_base" in md
    _check_png(paths["token_lengths"])
    _check_png(paths["vocab_use"])
    assert not list(paths["json"].parent.glob(".*.tmp"))  # atomic writes leave nothing behind

    one = stats.write_report(runs[1], tmp_path / "one")
    assert json.loads(one["json"].read_text()) == runs[1]
    _check_png(one["vocab_use"])


def test_report_of_nothing_and_odd_tokens(tmp_path):
    pytest.importorskip("matplotlib")
    empty = stats.write_report(stats.corpus_stats("gpt2", []), tmp_path / "empty")
    _check_png(empty["token_lengths"], min_size=(100, 100))
    # Tokens with newlines, pipes and backticks stay inside their Markdown table cell.
    s = stats.corpus_stats("cl100k_base", ["a|b ``` x\n\n\n" * 50], top_k=10)
    md = stats.write_report(s, tmp_path / "odd")["markdown"].read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert len(rows) >= len(s["top_tokens"])
    for row in rows[-len(s["top_tokens"]):]:
        assert row.count("|") - row.count("\\|") == 6, row


def test_markdown_code_span():
    assert stats._md_code("a|b") == "`a\\|b`"
    assert stats._md_code("``") == "``` `` ```"
    assert stats._md_code("\n") == "`\\n`"
    assert stats._md_code(" ") == "`   `"


def test_ties_are_broken_by_id(corpus_texts):
    # Many tokens share small counts: the order among them must be by id, as documented.
    enc = tokenforge.get_encoding("cl100k_base")
    text = corpus_texts["multilingual"] + corpus_texts["taylorswift"][:5_000]
    s = stats.corpus_stats(enc, [text], top_k=10_000)
    counts = collections.Counter(enc.encode_ordinary(text))
    assert len(counts) > 500 and list(counts.values()).count(1) > 100
    expected = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    assert [(t["id"], t["count"]) for t in s["top_tokens"]] == expected
