"""The pure-Python reference: the algorithms in the tutorials' style, short and slow on purpose.

The tests use this module as the oracle for the native core. It handles byte-level BPE only: the
`regex` module splits text (so its Unicode tables, not tiktoken's, decide the classes), then each
piece is merged as in minbpe / tiktoken's `_educational.py`.
"""

from __future__ import annotations

from collections import Counter

import regex


def get_stats(ids: list[int], counts: Counter | None = None) -> Counter:
    """Counts of each adjacent pair in ids: [1, 2, 3, 1, 2] -> {(1, 2): 2, (2, 3): 1, (3, 1): 1}."""
    counts = Counter() if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] += 1
    return counts


def merge(ids: list, pair: tuple, idx) -> list:
    """Replaces every non-overlapping occurrence of pair (left to right) with idx: works on ids
    ([1, 2, 3, 1, 2], (1, 2), 4 -> [4, 3, 4]) and on byte-string parts alike."""
    out, i = [], 0
    while i < len(ids):
        if i < len(ids) - 1 and (ids[i], ids[i + 1]) == pair:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def bpe_piece(ranks: dict[bytes, int], piece: bytes, max_rank: int | None = None) -> list[bytes]:
    """tiktoken's rule: merge the adjacent parts whose concatenation has the lowest rank (leftmost
    on ties) until none is a token; with max_rank, only tokens ranked below it."""
    parts = [bytes([b]) for b in piece]
    while True:
        best_i, best_rank = None, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (max_rank is None or rank < max_rank):
                if best_rank is None or rank < best_rank:
                    best_i, best_rank = i, rank
        if best_i is None:
            return parts
        parts[best_i : best_i + 2] = [parts[best_i] + parts[best_i + 1]]


def bpe_piece_with_merges(merges: dict[tuple[bytes, bytes], int], piece: bytes) -> list[bytes]:
    """The merges.txt rule: only listed pairs merge, the earliest-listed (then leftmost) first."""
    parts = [bytes([b]) for b in piece]
    while True:
        candidates = [(merges[p], i) for i, p in enumerate(zip(parts, parts[1:])) if p in merges]
        if not candidates:
            return parts
        _, i = min(candidates)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def split(text: str, pattern: str) -> list[str]:
    return [m.group() for m in regex.finditer(pattern, text)]  # whole matches, as tiktoken (not groups)


def encode(text: str, ranks: dict[bytes, int], pattern: str) -> list[int]:
    """Encodes ordinary text (no special tokens) with tiktoken's rule."""
    ids = []
    for piece in split(text, pattern):
        b = piece.encode("utf-8")
        if b in ranks:  # a piece that is a token is emitted whole
            ids.append(ranks[b])
        else:
            ids.extend(ranks[p] for p in bpe_piece(ranks, b))
    return ids


def decode(ids: list[int], vocab: dict[int, bytes]) -> str:
    return b"".join(vocab[i] for i in ids).decode("utf-8", errors="replace")


def recover_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merge that made each multi-byte token, in rank order: BPE the token's bytes with only
    lower-ranked tokens; what remains is the two parts it was merged from."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) == 1:
            continue
        parts = bpe_piece(ranks, token, max_rank=rank)
        if len(parts) != 2:
            raise ValueError(f"token {token!r} (rank {rank}) is not a merge of two lower-ranked tokens")
        merges.append((parts[0], parts[1]))
    return merges


def train(word_counts: dict[bytes, int], num_merges: int) -> list[tuple[bytes, bytes]]:
    """The reference trainer over a table of pre-token counts (each pre-token a byte string).

    At every step the most frequent adjacent pair is merged; ties go to the lexicographically
    greater pair of byte strings. Returns the merges in order.
    """
    words = {w: [bytes([b]) for b in w] for w in word_counts}
    merges = []
    for _ in range(num_merges):
        stats: Counter = Counter()
        for w, parts in words.items():
            for pair in zip(parts, parts[1:]):
                stats[pair] += word_counts[w]
        if not stats:
            break
        pair = max(stats, key=lambda p: (stats[p], p))
        merges.append(pair)
        for w, parts in words.items():
            words[w] = merge(parts, pair, pair[0] + pair[1])
    return merges
