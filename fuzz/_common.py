"""What the fuzz targets share: the tokenizers they run on, seed files for every format, and the
exceptions each operation is documented to raise.

A target is a module with `TestOneInput(data: bytes)` (atheris / libFuzzer's entry point) that is
also importable, so tests/test_hardening_fuzz.py replays saved inputs (tests/regressions/) without
atheris. Run one by hand:

    python fuzz/fuzz_load.py -max_total_time=60 /tmp/corpus-load      # atheris (pip install atheris)

Any exception other than the documented ones propagates and atheris reports a crash with the input.
"""

from __future__ import annotations

import functools
import os
import pathlib
import tempfile

import tokenforge
from tokenforge import _core

# Batches start a thread per 16,384 characters at most; the targets' batches are small, so they run
# on the threads they ask for here, keeping the threaded paths under the fuzzers (as in the tests).
_core._set_characters_per_thread(1)

HERE = pathlib.Path(__file__).resolve().parent
SHARED = pathlib.Path(os.environ.get("TOKENFORGE_SHARED", HERE.parent.parent / "shared"))

# tokenforge.load is documented to raise ValueError for any file it cannot read as a tokenizer.
LOAD_ERRORS = (ValueError,)
# encode: TypeError for a non-str, ValueError for a disallowed special token.
ENCODE_ERRORS = (ValueError,)
# decode: an unknown id is UnknownTokenError (ValueError and KeyError); a non-int TypeError;
# decode_with_offsets and errors="strict" raise UnicodeDecodeError (a ValueError) on invalid UTF-8.
DECODE_ERRORS = (ValueError, KeyError, TypeError)

SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|im_start|>"]

TRAIN_TEXT = (
    "The quick brown fox jumps over the lazy dog. Größe 速い茶色の狐 Быстрая 1234567 don't\n"
    "def f(x):\n    return x ** 2  # comment\n\t\t  \r\n  😀👍🏽 e\u0301 naïve <|endoftext|> end\n"
) * 20


@functools.lru_cache(maxsize=None)
def small_tokenizers() -> dict[str, tokenforge.Tokenizer]:
    """Small tokenizers of every kind tokenforge has: tiktoken's rule (trained, three patterns),
    explicit merges (Hugging Face's rule, with and without ignore_merges), a custom regex, a
    normalizer."""
    base = tokenforge.train_bpe(iter([TRAIN_TEXT]), 400, pattern="cl100k", special_tokens=SPECIALS, verbose=False)
    ranks = base._state()["mergeable_ranks"]
    merges = base.merges
    specials = base.special_tokens
    out = {"trained_cl100k": base}
    out["trained_o200k"] = tokenforge.train_bpe(iter([TRAIN_TEXT]), 350, pattern="o200k", special_tokens=SPECIALS[:1], verbose=False)
    out["trained_gpt2"] = tokenforge.train_bpe(iter([TRAIN_TEXT]), 330, pattern="gpt2", verbose=False)
    out["merges"] = tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=ranks, merges=merges, special_tokens=specials)
    out["merges_ignore"] = tokenforge.Tokenizer(pattern="o200k", mergeable_ranks=ranks, merges=merges,
                                                special_tokens=specials, ignore_merges=True)
    out["regex"] = tokenforge.Tokenizer(pattern=r"\p{L}+|\p{N}|\s+|[^\s\p{L}\p{N}]+", mergeable_ranks=ranks,
                                        special_tokens=specials)
    out["nfkc"] = tokenforge.Tokenizer(pattern="cl100k", mergeable_ranks=ranks, merges=merges,
                                       special_tokens=specials, normalizer="NFKC")
    return out


@functools.lru_cache(maxsize=None)
def cl100k() -> tokenforge.Tokenizer:
    """cl100k_base from the shared vocabulary folder (no network)."""
    path = SHARED / "vocab" / "cl100k_base.tiktoken"
    special = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
               "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
    return tokenforge.load(path, pattern="cl100k", special_tokens=special)


# The file names the loader target writes an input under: the name decides nothing for one-file
# formats (recognised by content), and finds the companion for the two-file ones.
FILE_KINDS = [
    ("t.tokenforge", None),
    ("tokenizer.json", None),
    ("x.tiktoken", None),
    ("encoder.json", "vocab.bpe"),
    ("vocab.json", "merges.txt"),
]
# Split between the two files of a pair in a fuzz input.
PAIR_SEPARATOR = b"\n\x00--8<--\x00\n"


def encode_input(kind: int, first: bytes, second: bytes | None = None) -> bytes:
    """The fuzz input that makes fuzz_load write these files (the inverse of its parsing)."""
    return bytes([kind]) + first + (PAIR_SEPARATOR + second if second is not None else b"")


def seed_inputs() -> list[bytes]:
    """Valid files of every format and tokenizer kind, as fuzz_load inputs (the seed corpus)."""
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for name, tok in small_tokenizers().items():
            for kind, (fname, other) in enumerate(FILE_KINDS):
                fmt = ["tokenforge", "huggingface", "tiktoken", "gpt2", "vocab_merges"][kind]
                folder = tmp / f"{name}-{fmt}"
                folder.mkdir()
                try:
                    tok.save(folder / fname if other is None else folder, format=fmt)
                except ValueError:  # a format that cannot express this tokenizer (refused, tested)
                    continue
                first = (folder / fname).read_bytes()
                second = (folder / other).read_bytes() if other else None
                seeds.append(encode_input(kind, first, second))
    return seeds


def write_corpus(folder) -> None:
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for n, seed in enumerate(seed_inputs()):
        (folder / f"seed-{n:03d}").write_bytes(seed)
