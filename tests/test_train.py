"""BPE training (tokenforge.train): the native counter and merge loop against the pure-Python
reference, the documented semantics, determinism across threads and chunk sizes, and bad input."""

from __future__ import annotations

import io
import sys
from collections import Counter

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import _core, patterns, reference

EOT = "<|endoftext|>"


def ref_counts(text: str, pattern: str = patterns.CL100K, specials=()) -> Counter:
    """The pre-token count the tutorials compute: split on special tokens, then regex.findall."""
    stretches = regex.split("|".join(map(regex.escape, sorted(specials, key=len, reverse=True))), text) if specials else [text]
    counts: Counter = Counter()
    for s in stretches:
        counts.update(p.encode("utf-8") for p in regex.findall(pattern, s))
    return counts


def merges_of(tok) -> list[tuple[bytes, bytes]]:
    return tok.merges


def write(tmp_path, name: str, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


# --------------------------------------------------------------------------------------------------
# Golden examples, small enough to check by hand


def test_hand_checked_example():
    # pairs: ug 20, hu 15, pu 5, gs 5 -> "ug"; then h+ug 15, p+ug 5, ug+s 5 -> "hug"
    tok = tokenforge.train_bpe_from_counts({"hug": 10, "pug": 5, "hugs": 5}, 258, verbose=False)
    assert merges_of(tok) == [(b"u", b"g"), (b"h", b"ug")]
    assert tok.decode_single_token_bytes(256) == b"ug"
    assert tok.decode_single_token_bytes(257) == b"hug"


def test_cs336_handout_example():
    # The worked example of the Stanford CS336 assignment 1 handout (whitespace pre-tokenization),
    # whose tie rule ("the lexicographically greater pair") this trainer follows.
    counts = {"low": 5, "lower": 2, "widest": 3, "newest": 6}
    tok = tokenforge.train_bpe_from_counts(counts, 256 + 6, pattern=r"\S+", verbose=False)
    assert [a + b" " + b for a, b in merges_of(tok)] == [b"s t", b"e st", b"o w", b"l ow", b"w est", b"n e"]


def test_ties_go_to_the_greater_pair():
    # Every pair occurs once: the greatest (left, right) wins, comparing bytes (b"\xc3" > b"z").
    tok = tokenforge.train_bpe_from_counts({"ab": 1, "zy": 1, "é": 1}, 257, verbose=False)
    assert merges_of(tok) == [(b"\xc3", b"\xa9")]
    tok = tokenforge.train_bpe_from_counts({b"ab": 1, b"zy": 1, b"za": 1}, 257, verbose=False)
    assert merges_of(tok) == [(b"z", b"y")]


# --------------------------------------------------------------------------------------------------
# The reference as oracle


@pytest.mark.parametrize("corpus", ["shakespeare", "stdlib", "multilingual", "taylorswift"])
def test_text_training_matches_reference(corpus_texts, corpus):
    text = corpus_texts[corpus][:150_000]
    counts = ref_counts(text)
    want = reference.train(dict(counts), 300)
    tok = tokenforge.train_bpe(iter([text]), 256 + len(want), verbose=False)
    assert merges_of(tok) == want
    # the counts path gives the same
    assert merges_of(tokenforge.train_bpe_from_counts(counts, 256 + len(want), verbose=False)) == want


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_native_counts_equal_regex_counts(corpus_texts, name):
    text = (corpus_texts["multilingual"] + EOT + corpus_texts["stdlib"][:200_000] + EOT + corpus_texts["shakespeare"][:200_000])
    counter = _core.PieceCounter(patterns.NATIVE[patterns.NAMED[name]], [EOT.encode()])
    data = text.encode()
    counter.count_bytes(data, 0, len(data), 1)
    assert dict(counter.items()) == ref_counts(text, patterns.NAMED[name], [EOT])


def _word_counts(alphabet: bytes, max_len: int):
    word = st.binary(min_size=1, max_size=max_len).map(lambda b: bytes(alphabet[x % len(alphabet)] for x in b))
    return st.dictionaries(word, st.integers(min_value=1, max_value=4), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    counts=st.one_of(_word_counts(b"ab", 9), _word_counts(b"abc", 7), _word_counts("aé€".encode(), 12), _word_counts(bytes(range(256)), 5)),
    num_merges=st.integers(min_value=1, max_value=40),
)
def test_tie_heavy_counts_match_reference(counts, num_merges):
    tok = tokenforge.train_bpe_from_counts(counts, 256 + num_merges, verbose=False)
    got = merges_of(tok)
    # The reference identifies tokens by their bytes: a merge that rebuilds an existing token adds
    # no id, so compare with the reference run for as many steps as the native loop took.
    trainer = _core.BpeTrainer(num_merges, 1)
    trainer.add_words(list(counts.items()))
    trainer.start()
    while not trainer.done:
        trainer.step(1000)
    steps = trainer.merges()
    toks = trainer.tokens()
    assert [(toks[l], toks[r]) for l, r, _, _ in steps] == reference.train(counts, len(steps))
    assert got == [(toks[l], toks[r]) for l, r, _, new in steps if new]
    assert tok.n_vocab == 256 + len(got)
    if len(got) < num_merges:  # stopped early: no pair was left
        assert reference.train(counts, len(steps) + 1) == reference.train(counts, len(steps))


# --------------------------------------------------------------------------------------------------
# Semantics of the result


def test_result_layout_roundtrip_and_save(tmp_path, corpus_texts):
    text = corpus_texts["shakespeare"][:100_000]
    specials = [EOT, "<|pad|>"]
    tok = tokenforge.train_bpe(iter([text, text[:5000]]), 600, special_tokens=specials, pattern="gpt2", verbose=False)
    assert tok.n_vocab == 600
    assert all(tok.decode_single_token_bytes(i) == bytes([i]) for i in range(256))
    assert tok.special_tokens == {EOT: 598, "<|pad|>": 599}
    assert tok.pattern == patterns.GPT2
    # ids are ranks: each merged token's parts have lower ids
    ranks = {tok.decode_single_token_bytes(i): i for i in range(598)}
    for k, (a, b) in enumerate(tok.merges):
        assert ranks[a + b] == 256 + k and ranks[a] < 256 + k and ranks[b] < 256 + k
    sample = text[1000:3000] + EOT + "héllo wörld 😀"
    ids = tok.encode(sample, allowed_special="all")
    assert tok.decode(ids) == sample and 598 in ids
    path = tmp_path / "t.tokenforge"
    tok.save(path)
    loaded = tokenforge.load(path)
    assert loaded.encode(sample, allowed_special="all") == ids
    assert loaded.special_tokens == tok.special_tokens


def test_special_tokens_split_text_and_never_merge():
    doc = "the cat sat on the mat. "
    text = (doc + EOT) * 50 + doc
    tok = tokenforge.train_bpe(iter([text]), 256 + 40 + 1, special_tokens=[EOT], verbose=False)
    assert not any(b"<|" in a + b or b"|>" in a + b for a, b in tok.merges)
    # the same as training on the documents between the special tokens
    plain = tokenforge.train_bpe(iter([doc] * 51), 256 + 40, verbose=False)
    assert tok.merges == plain.merges
    # without declaring it, the special token's text is ordinary text and gets merged
    ordinary = tokenforge.train_bpe(iter([text]), 256 + 40, verbose=False)
    assert any(b"|" in a + b for a, b in ordinary.merges)


def test_counts_keys_are_pieces_and_special_keys_are_ignored():
    a = tokenforge.train_bpe_from_counts({"ab": 3, b"ab": 2, "cd": 4, EOT: 100}, 258, special_tokens=[EOT], verbose=False)
    assert a.merges == [(b"a", b"b")]  # 3 + 2 > 4


def test_min_frequency_stops_early():
    tok = tokenforge.train_bpe_from_counts({"aaaa": 5, "xyz": 1}, 300, min_frequency=2, verbose=False)
    assert tok.merges == [(b"a", b"a"), (b"aa", b"aa")]
    assert tok.n_vocab == 258
    full = tokenforge.train_bpe_from_counts({"aaaa": 5, "xyz": 1}, 300, verbose=False)
    assert full.n_vocab == 260  # xy(z) merges too, then no pair is left


def test_custom_regex_pattern_matches_reference(corpus_texts, tmp_path):
    text = corpus_texts["shakespeare"][:50_000] + EOT + corpus_texts["multilingual"]
    pat = r"\w+|\s+|[^\w\s]+"
    want = reference.train(dict(ref_counts(text, pat, [EOT])), 100)
    tok = tokenforge.train_bpe(iter([text]), 357, pattern=pat, special_tokens=[EOT], verbose=False)
    assert tok.merges == want
    assert tok.pattern == pat
    path = write(tmp_path, "c.txt", text.encode())
    from_file = tokenforge.train_bpe(path, 357, pattern=pat, special_tokens=[EOT], chunk_size=999, verbose=False)
    assert from_file.merges == want


# --------------------------------------------------------------------------------------------------
# Files: streaming, determinism


@pytest.fixture(scope="module")
def big_file(tmp_path_factory, corpus_texts):
    # > 2 MB so that two threads split each chunk; documents separated by the special token,
    # with lines that start with spaces, blank lines, CRLF, punctuation before newlines.
    parts = [corpus_texts["stdlib"], corpus_texts["shakespeare"], corpus_texts["multilingual"] * 20]
    text = (("\n" + EOT + "\n").join(parts) + "  \r\n\n x. \nY\n") * 2
    path = tmp_path_factory.mktemp("corpus") / "big.txt"
    path.write_text(text, encoding="utf-8", newline="")
    return path


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_file_counts_are_exact_for_any_chunk_size_and_threads(big_file, name):
    text = big_file.read_bytes().decode("utf-8")
    want = ref_counts(text, patterns.NAMED[name], [EOT])
    from tokenforge.train import _Counting, _Plan, _NoProgress

    for chunk_size, threads in [(1 << 24, 1), (1 << 24, 2), (1 << 20, 3), (4096, 2), (777, 1)]:
        counting = _Counting(_Plan(1000, name, [EOT], 1, False, "t"), threads)
        counting.count_file(big_file, chunk_size, "strict", _NoProgress())
        assert dict(counting.finish().items()) == want, (chunk_size, threads)


def test_result_independent_of_workers_and_chunk_size(big_file):
    runs = [
        tokenforge.train_bpe(big_file, 3000, special_tokens=[EOT], num_workers=w, chunk_size=c, verbose=False)
        for w, c in [(1, 1 << 24), (2, 1 << 24), (4, 1 << 16), (2, 5000), (1, 31)]
    ]
    first = runs[0]._state()["mergeable_ranks"]
    assert all(r._state()["mergeable_ranks"] == first for r in runs[1:])
    assert len(first) == 3000 - 1
    # a list of paths = the files one after the other, each on its own
    two = tokenforge.train_bpe([big_file, str(big_file)], 3000, special_tokens=[EOT], verbose=False)
    counts = ref_counts(big_file.read_bytes().decode("utf-8"), patterns.CL100K, [EOT])
    doubled = tokenforge.train_bpe_from_counts({k: 2 * v for k, v in counts.items()}, 3000, special_tokens=[EOT], verbose=False)
    assert two._state()["mergeable_ranks"] == doubled._state()["mergeable_ranks"]


def test_texts_result_independent_of_workers_and_batching(corpus_texts):
    docs = corpus_texts["stdlib"].split("\n\n")
    runs = [
        tokenforge.train_bpe(iter(docs), 1500, num_workers=w, chunk_size=c, verbose=False)._state()["mergeable_ranks"]
        for w, c in [(1, 1 << 24), (2, 1 << 24), (3, 1000)]
    ]
    assert runs[0] == runs[1] == runs[2]
    counts: Counter = Counter()
    for d in docs:
        counts.update(ref_counts(d))
    assert tokenforge.train_bpe_from_counts(counts, 1500, verbose=False)._state()["mergeable_ranks"] == runs[0]


def test_very_long_pieces_are_counted_exactly():
    # pieces of 2**20 bytes and more are stored differently in the native table
    long_a, long_b = "a" * (1 << 20), "b" * ((1 << 20) + 5)
    # with its leading space, " x..." is exactly 2**20 - 1 bytes, " y..." one less
    text = " ".join([long_a, long_b, long_a, "x" * ((1 << 20) - 2), "y" * ((1 << 20) - 3), "yz"])
    counter = _core.PieceCounter(1, [])
    counter.count_texts([text], 1)
    assert dict(counter.items()) == ref_counts(text)


def test_long_line_without_cuts(tmp_path):
    # No safe cut anywhere: the reader keeps growing its buffer, and the counts are still exact.
    text = "中文。1234 " * 20000
    path = write(tmp_path, "one_line.txt", text.encode())
    counter = _core.PieceCounter(1, [])
    assert counter.last_cut(text.encode(), 0, len(text.encode())) == 0
    tok = tokenforge.train_bpe(path, 262, chunk_size=1000, verbose=False)
    assert tok.merges == reference.train(dict(ref_counts(text)), 6)


@pytest.mark.parametrize(
    "text, cut",
    [
        ("ab\nCd", 3),  # after a newline between a non-space and a letter
        ("中文。\n中文", len("中文。\n".encode())),  # any script
        ("x.\n12", 3),  # before a digit
        ("the cat", 3),  # before a space between ASCII letters
        ("ab \nCd", 0),  # whitespace before the newline: GPT-2 splits "  \n" differently at the end
        ("ab\u3000\nCd", 0),
        ("ab\n\nCd", 0),
        ("x.\n/a", 0),  # o200k carries "/" after punctuation and newlines
        ("ab\n Cd", 0),
        ("a  b", 0),
        ("1 2", 0),
    ],
)
def test_cut_rules(text, cut):
    data = text.encode()
    for pattern in (0, 1, 2):
        counter = _core.PieceCounter(pattern, [])
        assert counter.last_cut(data, 0, len(data)) == cut
        assert counter.first_cut(data, 0, len(data)) == cut
    # a special token containing the separator turns its rule off; a special token is a cut
    assert _core.PieceCounter(1, [b"\n"]).last_cut(b"ab\nCd", 0, 5) == 3  # the end of "\n" itself
    assert _core.PieceCounter(1, [b"<s> </s>"]).last_cut(b"the cat", 0, 7) == 0
    assert _core.PieceCounter(1, [b"<|eot|>"]).last_cut(b"12<|eot|>34", 0, 11) == 9


class _FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(capsys, corpus_texts, monkeypatch, tmp_path):
    path = write(tmp_path, "c.txt", corpus_texts["shakespeare"][:20000].encode())
    tokenforge.train_bpe(path, 300, verbose=True)
    assert capsys.readouterr().err == ""  # stderr is captured, not a TTY
    for verbose in (True, False):
        term = _FakeTerminal()
        monkeypatch.setattr(sys, "stderr", term)
        tokenforge.train_bpe(path, 300, verbose=verbose)
        monkeypatch.undo()
        out = term.getvalue()
        assert (("counting" in out) and ("merging" in out) and ("/44" in out)) == verbose, out


# --------------------------------------------------------------------------------------------------
# Bad input


def test_vocab_size_too_small():
    with pytest.raises(ValueError, match=r"at least 256 .* \+ 2 .* = 258"):
        tokenforge.train_bpe(iter(["abc"]), 257, special_tokens=["<a>", "<b>"])
    with pytest.raises(TypeError, match="vocab_size"):
        tokenforge.train_bpe(iter(["abc"]), 300.0)
    with pytest.raises(TypeError, match="vocab_size"):
        tokenforge.train_bpe_from_counts({"ab": 1}, True)


def test_empty_corpus(tmp_path):
    for source in [iter([]), iter(["", ""]), iter([EOT + EOT]), write(tmp_path, "empty.txt", b""), []]:
        with pytest.raises(ValueError, match="empty"):
            tokenforge.train_bpe(source, 300, special_tokens=[EOT], verbose=False)
    with pytest.raises(ValueError, match="empty"):
        tokenforge.train_bpe_from_counts({}, 300)
    with pytest.raises(ValueError, match="empty"):
        tokenforge.train_bpe_from_counts({"ab": 0}, 300)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt: no such file"):
        tokenforge.train_bpe(tmp_path / "nope.txt", 300)
    good = write(tmp_path, "good.txt", b"hello world")
    with pytest.raises(FileNotFoundError, match="iter"):  # a str that is not a file: say how to pass texts
        tokenforge.train_bpe([str(good), "hello world"], 300)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        tokenforge.train_bpe(tmp_path, 300)


def test_invalid_utf8_names_file_and_offset(tmp_path):
    data = ("hello world\n" * 1000).encode() + b"abc\xff\xfedef\n" + b"Tail\n"
    path = write(tmp_path, "bad.txt", data)
    offset = data.index(b"\xff")
    for chunk_size in (1 << 20, 100, 7, 13, 4096):
        with pytest.raises(ValueError, match=rf"bad\.txt: invalid UTF-8 at byte offset {offset}\b"):
            tokenforge.train_bpe(path, 300, chunk_size=chunk_size, verbose=False)
    # a character cut by the end of the file
    path2 = write(tmp_path, "cut.txt", "héllo".encode()[:-4] + "é".encode()[:1])
    with pytest.raises(ValueError, match=r"cut\.txt: invalid UTF-8 at byte offset 1\b"):
        tokenforge.train_bpe(path2, 300, verbose=False)
    # errors="replace" counts each bad byte as U+FFFD
    tok = tokenforge.train_bpe(path, 300, errors="replace", verbose=False)
    want = ref_counts(data.decode("utf-8", "replace"))
    assert tok.merges == reference.train(dict(want), 44)


def test_wrong_types(tmp_path):
    with pytest.raises(TypeError, match="source"):
        tokenforge.train_bpe(123, 300)
    with pytest.raises(TypeError, match="not bytes"):
        tokenforge.train_bpe(b"some text", 300)
    with pytest.raises(TypeError, match="paths"):
        tokenforge.train_bpe([1, 2], 300)
    with pytest.raises(TypeError, match="texts must be str"):
        tokenforge.train_bpe(iter(["ok", b"bytes"]), 300, verbose=False)
    with pytest.raises(TypeError, match="special_tokens"):
        tokenforge.train_bpe(iter(["ok"]), 300, special_tokens=EOT)
    with pytest.raises(ValueError, match="duplicates"):
        tokenforge.train_bpe(iter(["ok"]), 300, special_tokens=[EOT, EOT])
    with pytest.raises(TypeError, match="pattern"):
        tokenforge.train_bpe(iter(["ok"]), 300, pattern=None)
    with pytest.raises(ValueError, match="num_workers"):
        tokenforge.train_bpe(iter(["ok"]), 300, num_workers=0)
    with pytest.raises(ValueError, match="errors"):
        tokenforge.train_bpe(iter(["ok"]), 300, errors="ignore")
    with pytest.raises(ValueError, match="min_frequency"):
        tokenforge.train_bpe(iter(["ok"]), 300, min_frequency=0)
    with pytest.raises(TypeError, match="mapping"):
        tokenforge.train_bpe_from_counts([("ab", 1)], 300)
    with pytest.raises(TypeError, match="str or bytes"):
        tokenforge.train_bpe_from_counts({1: 1}, 300)
    with pytest.raises(ValueError, match="non-negative"):
        tokenforge.train_bpe_from_counts({"ab": -1}, 300)


def test_lone_surrogates_in_texts_are_replaced():
    tok = tokenforge.train_bpe(iter(["a\ud800b " * 10]), 260, verbose=False)
    assert tok.merges == reference.train(dict(ref_counts("a\ufffdb " * 10)), 4)


def test_docstring_examples():
    import doctest

    import tokenforge.train

    result = doctest.testmod(tokenforge.train, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 2 and result.failed == 0
