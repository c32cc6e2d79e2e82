"""The pure-Python reference of the SentencePiece-style models, short and slow on purpose; the
tests use it as the oracle for the native core (cpp/unigram.cc).

Input is *normalized* text (see normalizer.py). `vocab` maps a piece to (id, score, type); only
NORMAL, USER_DEFINED and UNUSED pieces take part in segmentation, as in sentencepiece.

- `viterbi`: the most probable segmentation under the unigram model, as sentencepiece's
  `unigram::Model::Encode`: float32 scores summed in float32, ties keep the earlier candidate
  (earlier start, then shorter piece), and the released package's rebasing: when the best score
  at a start passes 100000 in magnitude, it is subtracted from every reached node ahead.
- `bpe`: sentencepiece's BPE: repeatedly merge the adjacent pair whose concatenation is a piece with
  the highest score (leftmost on ties).
- `postprocess`: unknown pieces become `<0xNN>` byte pieces (byte fallback) or one `<unk>` per run.
- `nbest` / `sample`: the n best segmentations, and one drawn from the lattice with probability
  proportional to exp(alpha * score) (subword regularization, forward-filtering backward-sampling).
"""

from __future__ import annotations

import heapq
import math
import random
import struct

from .model_file import NORMAL, UNUSED, USER_DEFINED

UNK_PENALTY = 10.0
REBASE = 100000.0


def f32(x: float) -> float:
    """Rounds to float32 (a sum of two float32 rounded through a double is the float32 sum)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _char_ends(text: str) -> list[int]:
    return list(range(1, len(text) + 1))


def _lattice(text: str, vocab: dict, unk_id: int, min_score: float):
    """For each end position, the (start, id, score) arcs ending there; an unknown arc covers a
    character that no one-character piece covers."""
    unk_score = f32(min_score - UNK_PENALTY)
    max_len = max((len(p) for p in vocab), default=1)
    ends = [[] for _ in range(len(text) + 1)]
    for start in range(len(text)):
        single = False
        for end in range(start + 1, min(len(text), start + max_len) + 1):
            entry = vocab.get(text[start:end])
            if entry is None or entry[2] not in (NORMAL, USER_DEFINED):
                continue
            ends[end].append((start, entry[0], entry[1]))
            single |= end == start + 1
        if not single:
            ends[start + 1].append((start, unk_id, unk_score))
    return ends


def min_score(vocab: dict) -> float:
    return min((s for _, s, t in vocab.values() if t == NORMAL), default=0.0)


def viterbi(text: str, vocab: dict, unk_id: int) -> list[tuple[str, int]]:
    """[(piece, id)] of the best segmentation; unknown characters get unk_id, one each."""
    if any(t == USER_DEFINED for _, _, t in vocab.values()):
        raise ValueError("user-defined pieces are not supported by the reference")
    ends = _lattice(text, vocab, unk_id, min_score(vocab))
    best = [(0.0, -1, -1)] * (len(text) + 1)  # (score, start, id)
    # sentencepiece visits starts in order and, for each, ends in order; a candidate replaces the
    # incumbent only if strictly better. Sort arcs by start (then end, implicit) to do the same.
    arcs = sorted((start, end, i, s) for end in range(1, len(text) + 1) for start, i, s in ends[end])
    max_end, rebased = 0, -1
    for start, end, i, s in arcs:
        if start != rebased:  # first arc of this start: rebase large sums, as the package does
            rebased = start
            here = best[start][0]
            if abs(here) > REBASE and math.isfinite(here):
                for p in range(start, max_end + 1):
                    if p == start or best[p][1] != -1:
                        best[p] = (f32(best[p][0] - here), best[p][1], best[p][2])
        cand = f32(best[start][0] + s)  # the float32 sum (exact through a double)
        if best[end][1] == -1 or cand > best[end][0]:
            best[end] = (cand, start, i)
        max_end = max(max_end, end)
    out, end = [], len(text)
    while end > 0:
        _, start, i = best[end]
        out.append((text[start:end], i))
        end = start
    return out[::-1]


def bpe(text: str, vocab: dict, unk_id: int) -> list[tuple[str, int]]:
    """sentencepiece's BPE over characters: merge the best-scoring adjacent pair, leftmost on ties."""
    if any(t in (USER_DEFINED, UNUSED) for _, _, t in vocab.values()):
        raise ValueError("user-defined and unused pieces are not supported by the reference")
    parts = list(text)
    while True:
        best = None
        for k in range(len(parts) - 1):
            entry = vocab.get(parts[k] + parts[k + 1])
            if entry is not None and entry[2] == NORMAL and (best is None or entry[1] > best[0]):
                best = (entry[1], k)
        if best is None:
            break
        k = best[1]
        parts[k : k + 2] = [parts[k] + parts[k + 1]]
    return [(p, vocab[p][0] if vocab.get(p, (0, 0, 0))[2] == NORMAL else unk_id) for p in parts]


def postprocess(pieces: list[tuple[str, int]], unk_id: int, byte_ids: dict[int, int] | None) -> list[int]:
    """Byte fallback (byte_ids: byte value -> id of `<0xNN>`) or a run of unknowns -> one unk."""
    ids: list[int] = []
    for piece, i in pieces:
        if i == unk_id and byte_ids:
            ids.extend(byte_ids[b] for b in piece.encode("utf-8"))
        elif i == unk_id and ids and ids[-1] == unk_id and not byte_ids:
            continue
        else:
            ids.append(i)
    return ids


def nbest(text: str, vocab: dict, unk_id: int, n: int) -> list[tuple[float, list[tuple[str, int]]]]:
    """The n best segmentations with their scores, best first (exhaustive search: short text only)."""
    ends = _lattice(text, vocab, unk_id, min_score(vocab))
    # best completion score from each position to the start (for A*-free simple enumeration we
    # expand partial paths from the end backwards, ordered by exact prefix bound)
    fwd = [-math.inf] * (len(text) + 1)
    fwd[0] = 0.0
    for end in range(1, len(text) + 1):
        fwd[end] = max(fwd[start] + s for start, _, s in ends[end])
    heap = [(-fwd[len(text)], len(text), 0.0, ())]
    out = []
    while heap and len(out) < n:
        neg, pos, tail, path = heapq.heappop(heap)
        if pos == 0:
            out.append((tail, [(text[a:b], i) for a, b, i in path]))
            continue
        for start, i, s in ends[pos]:
            t = tail + s
            heapq.heappush(heap, (-(fwd[start] + t), start, t, ((start, pos, i),) + path))
    return out


def sample(text: str, vocab: dict, unk_id: int, alpha: float, rng: random.Random) -> list[tuple[str, int]]:
    """One segmentation drawn with probability proportional to exp(alpha * score)."""
    ends = _lattice(text, vocab, unk_id, min_score(vocab))
    alpha_log = [-math.inf] * (len(text) + 1)  # log sum over paths reaching each position
    alpha_log[0] = 0.0
    for end in range(1, len(text) + 1):
        terms = [alpha_log[start] + alpha * s for start, _, s in ends[end]]
        m = max(terms)
        alpha_log[end] = m + math.log(sum(math.exp(t - m) for t in terms))
    out, pos = [], len(text)
    while pos > 0:
        weights = [math.exp(alpha_log[start] + alpha * s - alpha_log[pos]) for start, _, s in ends[pos]]
        start, i, _ = rng.choices(ends[pos], weights)[0]
        out.append((text[start:pos], i))
        pos = start
    return out[::-1]


def bpe_dropout(text: str, vocab: dict, unk_id: int, p: float, rng: random.Random) -> list[tuple[str, int]]:
    """sentencepiece's BPE with BPE-dropout: the best pair taken from the agenda is dropped with
    probability p (it comes back only if a neighbour merges and forms it again)."""
    syms = list(text)  # symbol k; "" once merged into its left neighbour
    prev = list(range(-1, len(syms) - 1))
    nxt = list(range(1, len(syms))) + [-1]
    agenda: list = []

    def push(left: int, right: int) -> None:
        if left < 0 or right < 0:
            return
        e = vocab.get(syms[left] + syms[right])
        if e is not None and e[2] == NORMAL:
            heapq.heappush(agenda, (-e[1], left, right, len(syms[left]) + len(syms[right])))

    for k in range(1, len(syms)):
        push(k - 1, k)
    while agenda:
        _, left, right, size = heapq.heappop(agenda)
        if not syms[left] or not syms[right] or len(syms[left]) + len(syms[right]) != size:
            continue  # stale
        if rng.random() < p:
            continue  # dropped
        syms[left] += syms[right]
        syms[right] = ""
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = left
        push(prev[left], left)
        push(left, nxt[left])
    return [(s, vocab[s][0] if vocab.get(s, (0, 0, 0))[2] == NORMAL else unk_id) for s in syms if s]
