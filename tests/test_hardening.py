"""Hardening (issue 9): properties over every tokenizer kind and file format, adversarial input,
concurrency (threads, fork, spawn, pickling), interrupted training, reference counts.

The tokenizer kinds are those of fuzz/_common.py: tiktoken's rule (trained on each named
pattern), explicit merges with and without ignore_merges, a custom regex, a normalizer; plus
cl100k_base. No wall-clock limits here: tools/reliability.py measures time and memory growth.
"""

import concurrent.futures
import copy
import multiprocessing
import os
import pathlib
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import UnknownTokenError

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fuzz"))
import _common  # noqa: E402  (the fuzz targets' tokenizers, shared so both test the same kinds)

FORMATS = ["tokenforge", "huggingface", "tiktoken", "gpt2", "vocab_merges"]
SLOW = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def kinds() -> dict:
    return dict(_common.small_tokenizers())


@pytest.fixture(scope="module")
def cl100k():
    return tokenforge.get_encoding("cl100k_base")


KIND_NAMES = list(_common.small_tokenizers())
TRICKY = list("ab AB\n\r\t'sé中😀1/<|>\x00") + ["\u0301", "\ud800", "<|endoftext|>", "<|endoftext", "endoftext|>", "<|im_start|>"]
texts = st.lists(st.sampled_from(TRICKY), max_size=40).map("".join)


def _replace_surrogates(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# --------------------------------------------------------------------------------------------------
# Save / load identity: every format either refuses (ValueError) or gives back the same tokenizer


def _save_load(tok, fmt, folder: pathlib.Path):
    target = {"tokenforge": "t.json", "huggingface": "tokenizer.json", "tiktoken": "t.tiktoken", "gpt2": "",
              "vocab_merges": "vocab.json"}[fmt]
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(folder / target if target else folder, format=fmt)
    first = {"gpt2": "encoder.json"}.get(fmt, target)
    overrides = {}
    if fmt == "tiktoken":
        overrides = {"pattern": tok.pattern, "special_tokens": tok.special_tokens}
    elif fmt in ("gpt2", "vocab_merges"):
        overrides = {"pattern": tok.pattern}
    return tokenforge.load(folder / first, **overrides)


def _expressible(tok, fmt) -> bool:
    """Whether a format can hold this tokenizer (docs/format.md): the ones that cannot must refuse."""
    state = tok._state()
    if fmt in ("tiktoken", "gpt2", "vocab_merges") and state["normalizer"] is not None:
        return False
    if fmt in ("gpt2", "vocab_merges") and state["merges"] is not None and state["ignore_merges"]:
        return False
    if fmt == "tiktoken" and state["merges"] is not None:
        return None  # only if the ranks imply the merges: either outcome, but never a different tokenizer
    if fmt == "huggingface" and tok._native_pattern < 0:
        return None  # a regex tokenizers reads differently is refused
    return True


def _assert_same(tok, back, samples, fmt):
    assert back.vocab == tok.vocab, fmt
    assert back.special_tokens == tok.special_tokens, fmt
    assert back.normalizer == tok.normalizer, fmt
    for s in samples:
        assert back.encode(s, allowed_special="all") == tok.encode(s, allowed_special="all"), (fmt, s)
        assert back.encode_ordinary(s) == tok.encode_ordinary(s), (fmt, s)
    if fmt == "tokenforge":  # tokenforge's own file holds everything: the whole state comes back
        assert back._state() == tok._state()


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_kind_in_every_format(kinds, tmp_path, kind, fmt):
    tok = kinds[kind]
    samples = [_common.TRAIN_TEXT, _common.TRAIN_TEXT.upper(), "".join(TRICKY) * 3]
    expressible = _expressible(tok, fmt)
    try:
        back = _save_load(tok, fmt, tmp_path)
    except ValueError:
        assert expressible is not True, f"{fmt} refused a tokenizer it can hold"
        return
    assert expressible is not False, f"{fmt} wrote a tokenizer it cannot hold"
    _assert_same(tok, back, samples, fmt)


@SLOW
@given(corpus=st.lists(texts, min_size=1, max_size=12), extra=st.integers(0, 80),
       pattern=st.sampled_from(["gpt2", "cl100k", "o200k"]), specials=st.sets(st.sampled_from(_common.SPECIALS)),
       normalizer=st.sampled_from([None, "NFC", "NFKD"]), rule=st.sampled_from(["ranks", "merges", "merges_ignore"]),
       sample=texts)
def test_save_load_identity_property(tmp_path_factory, corpus, extra, pattern, specials, normalizer, rule, sample):
    """A tokenizer trained on arbitrary text, of any rule / pattern / normalizer, round-trips through
    every format that can hold it, and every other format refuses it."""
    specials = sorted(specials)
    try:
        trained = tokenforge.train_bpe(iter(corpus), 256 + len(specials) + extra, pattern=pattern,
                                       special_tokens=specials, verbose=False)
    except ValueError as e:  # nothing but special tokens, or no text at all
        assert "empty" in str(e)
        return
    ranks = trained._state()["mergeable_ranks"]
    merges = None if rule == "ranks" else trained.merges
    tok = tokenforge.Tokenizer(pattern=pattern, mergeable_ranks=ranks, merges=merges, special_tokens=trained.special_tokens,
                               ignore_merges=None if rule == "ranks" else rule == "merges_ignore", normalizer=normalizer)
    folder = tmp_path_factory.mktemp("formats")
    for fmt in FORMATS:
        expressible = _expressible(tok, fmt)
        try:
            back = _save_load(tok, fmt, folder / fmt)
        except ValueError:
            assert expressible is not True, fmt
            continue
        assert expressible is not False, fmt
        _assert_same(tok, back, ["".join(corpus), sample], fmt)


# --------------------------------------------------------------------------------------------------
# Determinism: thread counts, training workers, separate processes with different hash seeds


@FAST
@given(docs=st.lists(texts, max_size=20), kind=st.sampled_from(KIND_NAMES + ["cl100k"]))
def test_batch_same_ids_for_any_thread_count(kinds, cl100k, docs, kind):
    tok = cl100k if kind == "cl100k" else kinds[kind]
    one = [tok.encode(d, allowed_special="all") for d in docs]
    for n in (1, 2, 8):
        assert tok.encode_batch(docs, num_threads=n, allowed_special="all") == one
        assert tok.encode_ordinary_batch(docs, num_threads=n) == [tok.encode_ordinary(d) for d in docs]


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_batch_with_a_long_text_same_ids_as_one_by_one(kinds, corpus_texts, kind):
    # A text much longer than the others is taken first on two threads (long_items_first,
    # cpp/parallel.h): each family's batch still returns every text's ids in place.
    tok = kinds[kind]
    text = "".join(corpus_texts.values())
    docs = [text[i:i + 800] for i in range(0, 40000, 800)]
    docs.insert(20, text[:60000])
    assert tok.encode_batch(docs, num_threads=2, allowed_special="all") == [tok.encode(d, allowed_special="all") for d in docs]


@SLOW
@given(corpus=st.lists(texts, min_size=1, max_size=30), pattern=st.sampled_from(["gpt2", "cl100k", "o200k"]))
def test_training_same_for_any_worker_count(corpus, pattern):
    runs = []
    for workers, chunk in [(1, 1 << 20), (2, 7), (8, 64)]:
        try:
            tok = tokenforge.train_bpe(iter(corpus), 330, pattern=pattern, special_tokens=["<|endoftext|>"],
                                       num_workers=workers, chunk_size=chunk, verbose=False)
        except ValueError:
            return  # an empty corpus (tested in test_train.py)
        runs.append(tok._state()["mergeable_ranks"])
    assert runs[0] == runs[1] == runs[2]


_DETERMINISM_SCRIPT = r"""
import hashlib, io, os, sys, tempfile, pathlib
sys.path.insert(0, sys.argv[1])
import tokenforge, _common
h = hashlib.sha256()
texts = [_common.TRAIN_TEXT[i:i + 97] for i in range(0, len(_common.TRAIN_TEXT), 97)]
for workers in (1, 2):
    tok = tokenforge.train_bpe(iter(texts), 420, pattern="o200k", special_tokens=_common.SPECIALS,
                               num_workers=workers, verbose=False)
    h.update(repr(sorted(tok._state()["mergeable_ranks"].items(), key=lambda kv: kv[1])).encode())
for name, tok in _common.small_tokenizers().items():
    h.update(repr(tok.encode(_common.TRAIN_TEXT, allowed_special="all")).encode())
    h.update(repr(tok.encode_batch(texts, num_threads=3, allowed_special="all")).encode())
    with tempfile.TemporaryDirectory() as d:
        for fmt in ("tokenforge", "huggingface", "listing"):
            tok.save(pathlib.Path(d) / "out", format=fmt)
            h.update((pathlib.Path(d) / "out").read_bytes())
print(h.hexdigest())
"""


def test_same_results_in_processes_with_different_hash_seeds():
    """Training, encoding and the saved files do not depend on Python's hash randomization (set
    and dict-of-str iteration order) or on the number of counting threads."""
    fuzz_dir = str(pathlib.Path(__file__).resolve().parents[1] / "fuzz")
    digests = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _DETERMINISM_SCRIPT, fuzz_dir], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    assert len(digests) == 1


# --------------------------------------------------------------------------------------------------
# Adversarial input


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_every_code_point_round_trips(kinds, kind):
    tok = kinds[kind]
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    ids = tok.encode_ordinary(text)
    if tok.normalizer is None and tok._native_pattern >= 0:
        assert tok.decode(ids) == text
    with_surrogates = "".join(chr(c) for c in range(0xD700, 0xE100))
    assert tok.encode(with_surrogates) == tok.encode(_replace_surrogates(with_surrogates))


@pytest.mark.parametrize("kind", KIND_NAMES + ["cl100k"])
def test_lone_surrogates_every_method(kinds, cl100k, kind):
    tok = cl100k if kind == "cl100k" else kinds[kind]
    for text in ["\ud800", "a\udfffb<|endoftext|>", "\ud83d\ude00", "x\ud83d", "\udc00\ud800 z", "😀\ud800😀" * 50]:
        want = tok.encode(_replace_surrogates(text), allowed_special="all")
        assert tok.encode(text, allowed_special="all") == want
        assert tok.encode_batch([text, text], allowed_special="all") == [want, want]
        assert tok.encode_to_numpy(text, allowed_special="all").tolist() == want
        assert list(tok.encode_iterable(iter(text), allowed_special="all")) == want
        assert tok.count_tokens(text) == len(tok.encode_ordinary(text))
        special = "<|endoftext|>" in text and "<|endoftext|>" in tok.special_tokens
        with pytest.raises(ValueError, match="disallowed special token") if special else _nothing():
            tok.encode(text)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("kind", KIND_NAMES + ["cl100k"])
def test_nul_bytes(kinds, cl100k, kind):
    tok = cl100k if kind == "cl100k" else kinds[kind]
    for text in ["\x00", "a\x00b", "\x00" * 100_000, "<|endoftext|>\x00<|endoftext|>", "\x00<|end\x00oftext|>"]:
        ids = tok.encode(text, allowed_special="all")
        if tok.normalizer is None and tok._native_pattern >= 0:
            assert tok.decode(ids) == text
        assert tok.encode_batch([text], allowed_special="all") == [ids]


def test_special_token_with_nul_and_newline_round_trips_every_format(kinds, tmp_path):
    base = kinds["trained_cl100k"]
    specials = {"<|a\x00b|>": 1000, "<|line\nbreak|>": 1001, "<|é中😀|>": 1002}
    tok = tokenforge.Tokenizer(pattern="cl100k", mergeable_ranks=base._state()["mergeable_ranks"], special_tokens=specials)
    text = "x<|a\x00b|>y <|line\nbreak|>z<|é中😀|>"
    assert tok.encode(text, allowed_special="all") == [ord("x"), 1000, ord("y"), ord(" "), 1001, ord("z"), 1002]
    for fmt in FORMATS:
        back = _save_load(tok, fmt, tmp_path / fmt)
        assert back.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all"), fmt


LOOK_ALIKES = ["<|endoftext", "<|endoftext|", "endoftext|>", "|endoftext|>", "<|endoftext |>", "<|ENDOFTEXT|>",
               "<| endoftext|>", "<|endof\u200btext|>", "＜|endoftext|＞", "<｜endoftext｜>", "<|endoftext|\u0301>",
               "<<|endoftext", "<|end<|endoftext", "<|endoftext|\n>"]


@pytest.mark.parametrize("kind", KIND_NAMES + ["cl100k"])
def test_special_token_look_alikes_are_text(kinds, cl100k, tiktoken_module, kind):
    tok = cl100k if kind == "cl100k" else kinds[kind]
    ref = tiktoken_module.get_encoding("cl100k_base") if kind == "cl100k" else None
    eot = tok.special_tokens.get("<|endoftext|>", -1)  # trained_gpt2 has no special tokens
    for text in LOOK_ALIKES:
        if "<|endoftext|>" in text:
            continue
        for policy in ({}, {"allowed_special": "all"}, {"disallowed_special": ()}):
            ids = tok.encode(text, **policy)
            assert eot not in ids and ids == tok.encode_ordinary(text), (text, policy)
            if ref is not None:
                assert ids == ref.encode(text, **policy)
        # a look-alike next to the real token: only the real one is special
        ids = tok.encode(text + "<|endoftext|>" + text, allowed_special="all")
        assert ids.count(eot) == (eot >= 0)


@FAST
@given(parts=st.lists(st.sampled_from(LOOK_ALIKES + ["<|endoftext|>", "<|", "|>", "endoftext", "a", " ", "\n"]), max_size=30),
       step=st.integers(1, 9), kind=st.sampled_from(KIND_NAMES))
def test_streaming_finds_special_tokens_across_chunks(kinds, parts, step, kind):
    tok = kinds[kind]
    text = "".join(parts)
    chunks = [text[i:i + step] for i in range(0, len(text), step)]
    assert list(tok.encode_iterable(chunks, allowed_special="all")) == tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("kind", ["trained_cl100k", "merges", "regex", "nfkc", "cl100k"])
def test_a_million_special_tokens_in_a_row(kinds, cl100k, kind):
    tok = cl100k if kind == "cl100k" else kinds[kind]
    n = 1_000_000 if kind == "cl100k" else 100_000
    eot = tok.special_tokens["<|endoftext|>"]
    text = "<|endoftext|>" * n
    assert tok.encode(text, allowed_special="all") == [eot] * n
    assert tok.encode_to_numpy(text, allowed_special="all").tolist() == [eot] * n
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode(text)
    ordinary = tok.encode(text, disallowed_special=())
    assert eot not in ordinary and ordinary == tok.encode_ordinary(text)
    assert tok.count_tokens(text) == len(ordinary)
    if tok.normalizer is None and tok._native_pattern >= 0:
        assert tok.decode(ordinary) == text


def test_a_million_special_tokens_match_tiktoken(cl100k, tiktoken_module):
    ref = tiktoken_module.get_encoding("cl100k_base")
    text = "<|endoftext|>" * 20_000 + "<|endoftext" + "<|fim_prefix|><|endoftext|>" * 1000
    for policy in ({"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": {"<|fim_prefix|>"}, "disallowed_special": ()}):
        assert cl100k.encode(text, **policy) == ref.encode(text, **policy)


def test_long_runs_of_combining_characters(cl100k, tiktoken_module, kinds):
    ref = tiktoken_module.get_encoding("cl100k_base")
    o200k, ref_o200k = tokenforge.get_encoding("o200k_base"), tiktoken_module.get_encoding("o200k_base")
    for text in ["e" + "\u0301" * 3000, "a\u0308\u0301" * 1500, " " + "\u0300\u0301\u0302" * 1000, "\u0301" * 3001 + "x"]:
        assert cl100k.encode(text) == ref.encode(text)
        assert o200k.encode(text) == ref_o200k.encode(text)
    big = "e" + "\u0301" * 300_000
    for tok in (cl100k, o200k, kinds["trained_cl100k"], kinds["regex"], kinds["nfkc"]):
        ids = tok.encode(big)
        if tok.normalizer is None and tok._native_pattern >= 0:
            assert tok.decode(ids) == big
        assert len(ids) <= len(big.encode())


@pytest.mark.parametrize("char", ["a", " ", "\n", "😀", "1", "\u0301", "\x00", "'"])
def test_repeated_characters(cl100k, char):
    """10^7 digits here (short pieces); the long single pieces at 10^6 (tools/reliability.py runs
    every character at 10^7 and measures growth: a 10 MB piece takes seconds)."""
    n = 10_000_000 if char == "1" else 1_000_000
    text = char * n
    ids = cl100k.encode_to_numpy(text)
    assert cl100k.decode_bytes(ids.tolist()) == text.encode()
    assert len(ids) <= n * len(char.encode())
    if n <= 1_000_000:
        assert cl100k.encode_ordinary_batch([text, text[:-1]], num_threads=2)[0] == ids.tolist()


def test_twenty_megabyte_single_line(cl100k, corpus_texts):
    """One line of 20 MB of mixed text (no newline at all): whole, streamed and batched agree, and
    it decodes back. tools/reliability.py does the same at 100 MB and measures time and memory."""
    base = "".join(corpus_texts.values()).replace("\n", " ").replace("\r", " ")
    text = (base * (20_000_000 // len(base) + 1))[:20_000_000]
    ids = cl100k.encode_to_numpy(text, disallowed_special=())
    assert cl100k.decode_bytes(ids.tolist()) == text.encode("utf-8")
    chunks = (text[i:i + (1 << 16)] for i in range(0, len(text), 1 << 16))
    streamed = np.fromiter(cl100k.encode_iterable(chunks, disallowed_special=()), dtype=np.uint32)
    assert np.array_equal(streamed, ids)


# --------------------------------------------------------------------------------------------------
# Concurrency


def _mixed_work(tok, docs):
    out = []
    for d in docs:
        out.append(tok.encode(d, allowed_special="all"))
        out.append(tok.encode_to_numpy(d, allowed_special="all").tolist())
        out.append(tok.encode_batch([d, d[::-1]], num_threads=2, allowed_special="all"))
        out.append(tok.decode(tok.encode_ordinary(d)))
        out.append(tok.decode_tokens_bytes(tok.encode(d, disallowed_special=())[:50]))
        out.append(tok.count_tokens(d))
        out.append(list(tok.encode_iterable([d[:100], d[100:]], allowed_special="all")))
        try:
            tok.encode(d)
            out.append("no special")
        except ValueError:
            out.append("disallowed")
    return out


@pytest.mark.parametrize("kind", ["cl100k", "regex", "nfkc", "merges_ignore"])
def test_eight_threads_mixed_operations(kinds, cl100k, corpus_texts, kind):
    tok = cl100k if kind == "cl100k" else kinds[kind]
    source = corpus_texts["multilingual"] + corpus_texts["stdlib"][:200_000]
    docs = [source[i:i + 3000] + ("<|endoftext|>" if i % 2 else "\ud800") for i in range(0, 240_000, 3000)]
    groups = [docs[k::8] for k in range(8)]
    expected = [_mixed_work(tok, g) for g in groups]
    barrier = threading.Barrier(8)

    def run(g):
        barrier.wait()
        return _mixed_work(tok, g)

    for _ in range(2):
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert list(pool.map(run, groups)) == expected


_FORKED = {}


def _encode_in_child(args):
    kind, docs = args
    tok = _FORKED[kind]
    return [tok.encode(d, allowed_special="all") for d in docs], [tok.decode(tok.encode_ordinary(d)) for d in docs]


def _encode_pickled(args):
    tok, docs = args
    return [tok.encode(d, allowed_special="all") for d in docs], [tok.decode(tok.encode_ordinary(d)) for d in docs]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_use_after_fork_and_with_spawn(kinds, cl100k, corpus_texts, method):
    docs = [corpus_texts["multilingual"][i:i + 500] + "<|endoftext|>\ud800" for i in range(0, 5000, 500)]
    toks = {**kinds, "cl100k": cl100k}
    expected = {k: _encode_pickled((t, docs)) for k, t in toks.items()}
    # the parent has used native threads and the per-thread caches before forking
    for t in toks.values():
        t.encode_ordinary_batch(docs, num_threads=4)
    ctx = multiprocessing.get_context(method)
    _FORKED.update(toks)  # the fork children inherit these (the pool forks its workers at creation)
    try:
        with ctx.Pool(2) as pool:
            if method == "fork":
                got = pool.map(_encode_in_child, [(k, docs) for k in toks])
            else:  # spawn: each tokenizer travels by pickle (a named encoding by name, loaded in the child)
                got = pool.map(_encode_pickled, [(t, docs) for t in toks.values()])
    finally:
        _FORKED.clear()
    assert dict(zip(toks, got)) == expected


def test_fork_while_another_thread_encodes(cl100k, corpus_texts):
    """A fork taken while a thread is inside the native encoder (GIL released): the child's copy of
    the tokenizer works (no lock of ours is held across the native call)."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    text = corpus_texts["stdlib"][:1_000_000]
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            cl100k.encode_ordinary(text)

    t = threading.Thread(target=busy)
    t.start()
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as pool:
            got = pool.apply(_count_cl100k, ("hello world " * 1000,), )
    finally:
        stop.set()
        t.join()
    assert got == cl100k.count_tokens("hello world " * 1000)


def _count_cl100k(text):
    return tokenforge.get_encoding("cl100k_base").count_tokens(text)


@pytest.mark.parametrize("kind", KIND_NAMES + ["cl100k", "o200k_harmony"])
def test_pickle_and_copy_every_kind(kinds, cl100k, kind):
    tok = {"cl100k": cl100k, "o200k_harmony": None}.get(kind) or (kinds.get(kind) or tokenforge.get_encoding(kind))
    sample = _common.TRAIN_TEXT + "\ud800 <|endoftext|>"
    want = tok.encode(sample, allowed_special="all")
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(tok, protocol=proto))
        assert again._state() == tok._state() and type(again) is type(tok)
        assert again.encode(sample, allowed_special="all") == want
    for again in (copy.copy(tok), copy.deepcopy(tok)):
        assert again.encode(sample, allowed_special="all") == want
    trained = tokenforge.train_bpe(iter([sample]), 300, verbose=False)
    assert pickle.loads(pickle.dumps(trained)).merges == trained.merges


def test_custom_encoding_pickles_with_its_class():
    enc = tokenforge.Encoding("tiny", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)} | {b"ab": 256},
                              special_tokens={"<|x|>": 300})
    again = pickle.loads(pickle.dumps(enc))
    assert type(again) is tokenforge.Encoding and again.encode("ab ab<|x|>", allowed_special="all") == [256, 32, 256, 300]


# --------------------------------------------------------------------------------------------------
# Interrupted training and dataset encoding leave no files


class _InterruptAt:
    """A progress bar whose n-th update raises KeyboardInterrupt (the user pressing Ctrl-C then)."""

    calls = 0

    def __init__(self, n, desc):
        self.n, self.desc = n, desc

    def __call__(self, verbose, **kwargs):
        outer = self

        class Bar:
            def update(self, k=1):
                if kwargs.get("desc") == outer.desc:
                    _InterruptAt.calls += 1
                    if _InterruptAt.calls >= outer.n:
                        raise KeyboardInterrupt

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        return Bar()


@pytest.mark.parametrize("stage", ["counting", "merging"])
def test_training_interrupted_leaves_no_files(tmp_path, monkeypatch, capsys, corpus_texts, stage):
    from tokenforge import cli, train

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(corpus_texts["shakespeare"], encoding="utf-8")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    _InterruptAt.calls = 0
    monkeypatch.setattr(train, "_progress", _InterruptAt(2, stage))
    rc = cli.main(["train", str(corpus), "-o", str(out_dir / "tok.tokenforge"), "--vocab-size", "1500",
                   "--chunk-size", "100000"])
    assert _InterruptAt.calls >= 2, "the interruption was never reached"
    assert rc == 130 and "interrupted" in capsys.readouterr().err
    assert os.listdir(out_dir) == []


def test_dataset_encoding_interrupted_leaves_no_files(tmp_path, cl100k, corpus_texts):
    from tokenforge import dataset

    src = tmp_path / "in.txt"
    src.write_text(corpus_texts["stdlib"], encoding="utf-8")
    out_dir = tmp_path / "out"
    calls = []

    def progress(nbytes, ntokens):
        calls.append(nbytes)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dataset.encode_files(cl100k, [src], out_dir / "train.bin", progress=progress)
    assert calls and os.listdir(out_dir) == []


# --------------------------------------------------------------------------------------------------
# Reference counts and memory of repeated calls (deterministic; tools/reliability.py measures RSS)


def test_repeated_calls_leak_no_references(cl100k):
    """The binding hands out cached ints: each result must give its references back. An id above
    256 is not a small-int singleton, so its reference count shows a leak of even one per call."""
    text = "hello world, tokenization 12345"
    ids = cl100k.encode(text)
    held = [i for i in ids if i > 256]
    before = [sys.getrefcount(i) for i in held]
    for _ in range(20_000):
        cl100k.encode(text)
        cl100k.encode(text + "<|endoftext|>", allowed_special="all")
        cl100k.encode_batch([text, text], num_threads=2)
        cl100k.encode_to_numpy(text)
        cl100k.decode(ids)
        cl100k.decode_tokens_bytes(ids)
        try:
            cl100k.decode(ids + [10**12])
        except UnknownTokenError:
            pass
    assert [sys.getrefcount(i) for i in held] == before


def test_repeated_calls_allocate_no_python_objects(kinds):
    import gc
    import tracemalloc

    tok = kinds["regex"]  # the Python-heavy path (regex split, cached compiled specials)
    text = _common.TRAIN_TEXT[:500] + "<|endoftext|>\ud800"
    for _ in range(200):
        tok.encode(text, allowed_special="all")
    gc.collect()
    tracemalloc.start()
    try:
        snap1 = tracemalloc.take_snapshot()
        for _ in range(1000):
            tok.encode(text, allowed_special="all")
            tok.encode_batch([text], allowed_special="all")
            tok.decode(tok.encode_ordinary(text))
        gc.collect()
        snap2 = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in snap2.compare_to(snap1, "filename") if s.size_diff > 0)
    assert grown < 40_000, grown  # 1000 iterations: a leak of one small object (>= 48 bytes) each is >= 48 kB


_SPARSE_SCRIPT = r"""
import resource, sys
import tokenforge
from tokenforge import UnknownTokenError
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))  # 2 GB: the old dense tables needed > 100 GB
ranks = {bytes([i]): i for i in range(256)} | {b"ab": 3_000_000_000}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tok = tokenforge.Tokenizer.from_ranks(ranks, pattern="gpt2", special_tokens={"<|x|>": 2**32 - 2, "<|y|>": 50_000_000})
grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
ids = tok.encode("abab <|x|><|y|>", allowed_special="all")
assert ids == [3_000_000_000, 3_000_000_000, 32, 2**32 - 2, 50_000_000], ids
assert tok.decode(ids) == "abab <|x|><|y|>"
for bad in (2**32 - 3, 2_999_999_999, 2**32 - 1, 50_000_001, 300):
    try:
        tok.decode([bad])
        raise SystemExit(f"decoded unknown id {bad}")
    except UnknownTokenError:
        pass
print(grown_mb)
"""


def test_huge_sparse_ids_cost_no_memory():
    """A special token (or a loaded token) with a huge id: decoding and the int cache are sized by
    the number of tokens. Before the fix they held one entry per id below the largest (2.4 GB for a
    special token at 5e7; a special token at 4e9 ran out of memory)."""
    out = subprocess.run([sys.executable, "-c", _SPARSE_SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert float(out.stdout) < 50, out.stdout  # MB


def test_id_two_to_the_32_minus_one_is_refused():
    """2**32 - 1 is the native core's "no token" marker: a byte token with that id (a vocab.json found
    by fuzz_load) was treated as deleted by the merge loop, and "\n" no longer round-tripped."""
    ranks = {bytes([i]): i for i in range(256)} | {b"\n": 2**32 - 1}
    with pytest.raises(ValueError, match="below 2\\*\\*32 - 1"):
        tokenforge.Tokenizer.from_ranks(ranks, pattern="gpt2")
    ok = tokenforge.Tokenizer.from_ranks({bytes([i]): i for i in range(256)} | {b"\n": 2**32 - 2}, pattern="gpt2")
    assert ok.decode(ok.encode("a\n\n" * 100)) == "a\n\n" * 100


def test_bool_ids_are_refused(tmp_path):
    ranks = {bytes([i]): i + 1 for i in range(255)}
    with pytest.raises(TypeError, match="bool"):
        tokenforge.Tokenizer.from_ranks(ranks | {b"\xff": False}, pattern="gpt2")
    with pytest.raises(ValueError, match="invalid id"):
        tokenforge.Tokenizer.from_ranks(ranks | {b"\xff": 0}, pattern="gpt2", special_tokens={"<|x|>": True})


def test_bad_pattern_fails_at_load_not_at_first_encode(tmp_path, kinds):
    import json

    tok = kinds["regex"]
    tok.save(tmp_path / "t.json")
    obj = json.loads((tmp_path / "t.json").read_text())
    obj["pattern"] = r"(?<bad"
    (tmp_path / "t.json").write_text(json.dumps(obj))
    with pytest.raises(ValueError, match="does not compile"):
        tokenforge.load(tmp_path / "t.json")
    with pytest.raises(ValueError, match="does not compile"):
        tokenforge.Encoding("bad", pat_str="(", mergeable_ranks=tok._state()["mergeable_ranks"], special_tokens={})


def test_custom_pattern_with_capture_groups(tiktoken_module):
    """Pieces are whole matches, whatever groups the pattern has (found by fuzz_load: findall gave
    tuples with two groups, and with one group only the group, silently dropping the rest)."""
    ranks = {bytes([i]): i for i in range(256)} | {b"ab": 256}
    pat = r"(a)b|(\s)+|[^\s]"
    tok = tokenforge.Tokenizer.from_ranks(ranks, pattern=pat, special_tokens={"<|x|>": 300})
    ref = tiktoken_module.Encoding("groups", pat_str=pat, mergeable_ranks=ranks, special_tokens={"<|x|>": 300})
    for text in ["abc ab", "ab<|x|>ab  b", "xyz", ""]:
        assert tok.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all"), text
        assert tok.decode(tok.encode(text, allowed_special="all")) == text
    texts = ["abab ab abc", "ba ab  ab"] * 5
    grouped = tokenforge.train_bpe(iter(texts), 262, pattern=r"(a)(b)|\s+|[^\s]+", verbose=False)
    plain = tokenforge.train_bpe(iter(texts), 262, pattern=r"(?:a)(?:b)|\s+|[^\s]+", verbose=False)
    assert grouped._state()["mergeable_ranks"] == plain._state()["mergeable_ranks"]
