"""Unigram language-model training, the sentencepiece way, kept short.

1. Normalize each text (identity rules + the whitespace rules of normalizer.py) and count the words
   (`▁word` chunks): the pre-token count. Characters covering `character_coverage` of all character
   occurrences are *required* (always in the vocabulary); rarer ones become unknown.
2. Seed: every substring of a word up to `max_piece_length` characters (a `▁` only in front, only
   required characters), occurring at least twice, ranked by frequency x length; the best
   `seed_size` plus all required characters. Initial score: log(frequency x length / total).
3. EM (`num_sub_iterations` per round): the E-step runs forward-backward over each word's lattice
   in the native core and returns the expected count of every piece; the M-step drops pieces
   expected less than 0.5 times and sets score = digamma(count) - digamma(total) (sentencepiece's
   sparse "Bayesianified" update, which penalizes rare pieces more than plain log(count/total)).
4. Prune: for each piece, its best segmentation without it (the alternative); the loss of removing
   it is F x (log p(piece) - sum log p'(alternative pieces)), F the frequency of the words whose
   Viterbi segmentation uses it. Keep the `shrinking_factor` best; repeat 3-4 until the vocabulary
   is within 10% of the target, then keep the best-scoring pieces.

Differences from sentencepiece, on purpose: substrings are counted per word, not with a suffix
array over whole sentences; no splitting by Unicode script or digits inside words; no charsmap
is compiled (identity normalization, or the charsmap of an existing model, `normalization_from`). The result is a SentencePieceTokenizer whose
`.model` bytes the sentencepiece package loads and encodes identically.
"""

from __future__ import annotations

import gc
import math
from collections import Counter
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import numpy as np

from .. import _core
from .model_file import NORMAL, UNKNOWN
from .normalizer import SPACE

EXPECTED_FREQUENCY_THRESHOLD = 0.5


def digamma(x: np.ndarray) -> np.ndarray:
    """psi(x) for x > 0: the recurrence up to x >= 6, then the asymptotic series."""
    import numpy as np  # (here, not at the top: `import tokenforge` does not load numpy)

    x = np.asarray(x, dtype=np.float64).copy()
    result = np.zeros_like(x)
    small = x < 6
    while small.any():
        result[small] -= 1.0 / x[small]
        x[small] += 1
        small = x < 6
    f = 1.0 / (x * x)
    t = f * (-1 / 12.0 + f * (1 / 120.0 + f * (-1 / 252.0 + f * (1 / 240.0 + f * (-1 / 132.0)))))
    return result + np.log(x) - 0.5 / x + t


def count_words(
    texts: Iterable[str], *, add_dummy_prefix: bool, remove_extra_whitespaces: bool, charsmap: bytes = b""
) -> Counter:
    """The `▁word` chunks of the normalized texts, counted (normalized by the native core, which
    normalizer.py mirrors)."""
    native = _core.SentencePieceModel(
        [(b"<unk>", 0.0, UNKNOWN)], 1, False, charsmap, add_dummy_prefix, remove_extra_whitespaces, True, False
    )
    words: Counter = Counter()
    for text in texts:
        parts = native.normalize(text).split(SPACE)
        if parts[0]:
            words[parts[0]] += 1
        words.update(SPACE + p for p in parts[1:])
    return words


def required_chars(words: Counter, coverage: float) -> dict[str, int]:
    chars: Counter = Counter()
    for w, n in words.items():
        for c in w:
            chars[c] += n
    total = sum(chars.values())
    out, acc = {}, 0
    for c, n in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0])):
        if out and acc / total >= coverage:
            break
        out[c] = n
        acc += n
    return out


def seed_pieces(words: Counter, chars: dict, max_len: int, seed_size: int) -> list[tuple[bytes, float]]:
    """Required characters + the best substrings by frequency x length, as log probabilities.
    Pieces are UTF-8 bytes inside the trainer. Words are cut at characters that are not required
    (those are unknown: no seed contains one)."""
    runs: Counter = Counter()
    for w, n in words.items():
        if all(c in chars for c in w):
            runs[w] += n
        else:
            run = []
            for c in w + "\0":
                if c in chars:
                    run.append(c)
                elif run:
                    runs["".join(run)] += n
                    run = []
    counted = _core.sentencepiece_count_substrings(
        [w.encode("utf-8") for w in runs], [float(n) for n in runs.values()], max_len, 2.0, max(0, seed_size - len(chars))
    )
    seeds = [(c.encode("utf-8"), float(n)) for c, n in chars.items()] + counted
    total = sum(n for _, n in seeds)
    return [(s, math.log(n / total)) for s, n in seeds]


class _Lattice:
    """The native model over the current pieces (id 0 is <unk>), for the E-step and pruning."""

    def __init__(self, pieces: list[tuple[bytes, float]]):
        entries = [(b"<unk>", 0.0, UNKNOWN)] + [(p, s, NORMAL) for p, s in pieces]
        self.model = _core.SentencePieceModel(entries, 1, False, b"", False, False, False, False)


def train_unigram(
    texts: Iterable[str],
    vocab_size: int,
    *,
    byte_fallback: bool = False,
    character_coverage: float = 0.9995,
    max_piece_length: int = 16,
    seed_size: int = 200_000,
    shrinking_factor: float = 0.75,
    num_sub_iterations: int = 2,
    add_dummy_prefix: bool = True,
    remove_extra_whitespaces: bool = True,
    normalization_from=None,
    verbose: bool = False,
):
    """Trains a unigram model; returns a SentencePieceTokenizer.

    Normalization is identity, or that of `normalization_from` (a SentencePieceTokenizer, e.g. one
    loaded from a sentencepiece `nmt_nfkc` model): its precompiled charsmap normalizes the training
    text and goes into the new model.

    >>> tok = train_unigram(["hello world", "hello there"] * 50, vocab_size=40)
    """
    # hundreds of thousands of short-lived tuples per round: the cyclic GC would walk them all
    # again and again for nothing (nothing here makes cycles)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _train_unigram(
            texts, vocab_size, byte_fallback=byte_fallback, character_coverage=character_coverage,
            max_piece_length=max_piece_length, seed_size=seed_size, shrinking_factor=shrinking_factor,
            num_sub_iterations=num_sub_iterations, add_dummy_prefix=add_dummy_prefix,
            remove_extra_whitespaces=remove_extra_whitespaces, verbose=verbose,
            charsmap=normalization_from.model.precompiled_charsmap if normalization_from is not None else b"",
            normalizer_name=normalization_from.model.normalizer_name if normalization_from is not None else None,
        )
    finally:
        if was_enabled:
            gc.enable()


def _train_unigram(
    texts, vocab_size, *, byte_fallback, character_coverage, max_piece_length, seed_size, shrinking_factor,
    num_sub_iterations, add_dummy_prefix, remove_extra_whitespaces, verbose, charsmap, normalizer_name,
):
    import numpy as np  # (here, not at the top: `import tokenforge` does not load numpy)

    from .tokenizer import SentencePieceTokenizer

    meta = 3 + (256 if byte_fallback else 0)  # <unk> <s> </s> [bytes]
    target = vocab_size - meta
    if target < 1:
        raise ValueError(f"vocab_size must be more than {meta} (the reserved pieces)")
    words = count_words(
        texts, add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces, charsmap=charsmap
    )
    if not words:
        raise ValueError("no text to train on")
    chars = required_chars(words, character_coverage)
    if len(chars) > target:
        raise ValueError(f"vocab_size {vocab_size} is smaller than the {len(chars)} required characters + {meta} reserved pieces")
    word_list = [w.encode("utf-8") for w in words]
    freqs = [float(n) for n in words.values()]
    pieces = seed_pieces(words, chars, max_piece_length, seed_size)
    char_bytes = {c.encode("utf-8") for c in chars}
    while True:
        for _ in range(num_sub_iterations):  # EM
            counts, loglik = _Lattice(pieces).model.expected_counts(word_list, freqs)
            counts = counts[1:].tolist()
            keep = [(p, c) for (p, _), c in zip(pieces, counts) if c >= EXPECTED_FREQUENCY_THRESHOLD or p in char_bytes]
            c = np.array([max(c, 1e-3) for _, c in keep])  # a required character never seen alone
            scores = digamma(c) - digamma(c.sum())
            pieces = [(p, float(s)) for (p, _), s in zip(keep, scores)]
            if verbose:
                print(f"EM size={len(pieces)} obj={-loglik / sum(freqs):.4f}")
        if len(pieces) <= target * 1.1 or len(pieces) <= len(chars):
            break
        pieces = _prune(pieces, char_bytes, word_list, freqs, max(target, int(len(pieces) * shrinking_factor)))
    # final: the required characters and the best-scoring rest
    rest = sorted((ps for ps in pieces if ps[0] not in char_bytes), key=lambda ps: (-ps[1], ps[0]))
    final = [ps for ps in pieces if ps[0] in char_bytes] + rest[: target - len(chars)]
    final = sorted(((p.decode("utf-8"), s) for p, s in final), key=lambda ps: (-ps[1], ps[0]))
    return SentencePieceTokenizer.from_pieces(
        final,
        model_type="unigram",
        byte_fallback=byte_fallback,
        add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
        precompiled_charsmap=charsmap,
        normalizer_name=normalizer_name,
    )


def _prune(pieces, chars, word_list, freqs, size):
    lattice = _Lattice(pieces).model
    counts, word_freq = lattice.viterbi_counts(word_list, freqs)
    counts, word_freq = counts[1:], word_freq[1:]
    alternatives = lattice.alternatives()[1:]  # ids shifted by one: id 0 is <unk>
    total = sum(counts)
    log_total = math.log(total)
    all_freq = sum(freqs)
    keep, candidates = [], []
    for k, (p, s) in enumerate(pieces):
        if p in chars:
            keep.append((p, s))
            continue
        if counts[k] == 0:
            continue  # not on any Viterbi path: removing it costs nothing
        alt = [a - 1 for a in alternatives[k]]
        if not alt:
            keep.append((p, s))
            continue
        f = word_freq[k] / all_freq
        logprob = math.log(counts[k]) - log_total
        # without p, its count moves to each piece of the alternative
        log_total_alt = math.log(total + counts[k] * (len(alt) - 1))
        logprob_alt = sum(math.log(counts[a] + counts[k]) - log_total_alt for a in alt)
        candidates.append((f * (logprob - logprob_alt), k))
    candidates.sort(key=lambda lk: (-lk[0], lk[1]))
    for _, k in candidates[: max(0, size - len(keep))]:
        keep.append(pieces[k])
    return keep
