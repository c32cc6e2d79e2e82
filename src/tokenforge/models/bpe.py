"""BPE as Hugging Face's `models.BPE` runs it, every option: continuing_subword_prefix,
end_of_word_suffix, unk_token with fuse_unk, byte_fallback (<0xNN> tokens), ignore_merges, dropout.

    >>> m = BPE({"a": 0, "b": 1, "ab": 2, "c": 3}, [("a", "b")])
    >>> m.encode_pieces(["abc"])
    [2, 3]

A piece is split into characters (the prefix on all but the first, the suffix on the last); a
character missing from the vocabulary becomes its <0xNN> byte tokens (byte_fallback, if all exist),
else the unknown token (runs fused into one with fuse_unk), else nothing (as HF). Then the merges
apply by rank, lowest first, leftmost on ties; with dropout each merge is skipped with that
probability (so ids vary between calls, as in HF). With ignore_merges a piece that is a token is
that token.

This is the pure-Python implementation, with a per-piece cache; the common families run natively
instead: byte-level BPE (models.ByteBPE) and character BPE with an end-of-word marker
(models.CharBPE). tokenforge.Tokenizer picks them when a file allows.
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

from .base import Model


class BPE(Model):
    kind = "bpe"

    def __init__(self, vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], *, unk_token: str | None = None,
                 continuing_subword_prefix: str | None = None, end_of_word_suffix: str | None = None,
                 fuse_unk: bool = False, byte_fallback: bool = False, ignore_merges: bool = False,
                 dropout: float | None = None, special_tokens=()):
        super().__init__(vocab, special_tokens)
        for name, value in (("unk_token", unk_token), ("continuing_subword_prefix", continuing_subword_prefix),
                            ("end_of_word_suffix", end_of_word_suffix)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")
        if unk_token is not None and unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        if dropout is not None and not (isinstance(dropout, (int, float)) and 0.0 <= dropout <= 1.0):
            raise ValueError(f"dropout must be in [0, 1], got {dropout!r}")
        self.unk_token = unk_token
        self.unk_id = None if unk_token is None else self.vocab[unk_token]
        self.prefix = continuing_subword_prefix or None
        self.suffix = end_of_word_suffix or None
        self.fuse_unk, self.byte_fallback, self.ignore_merges = bool(fuse_unk), bool(byte_fallback), bool(ignore_merges)
        self.dropout = None if dropout in (None, 0, 0.0) else float(dropout)
        self.merges = [(str(a), str(b)) for a, b in merges]
        self._ranks: dict[tuple[int, int], tuple[int, int]] = {}
        prefix_len = len(self.prefix or "")
        for r, (a, b) in enumerate(self.merges):
            if a not in self.vocab or b not in self.vocab:
                raise ValueError(f"merge {r} ({a!r}, {b!r}) uses a token that is not in the vocabulary")
            merged = a + (b[prefix_len:] if self.prefix and b.startswith(self.prefix) else b)
            if merged not in self.vocab:
                raise ValueError(f"merge {r} ({a!r}, {b!r}) makes {merged!r}, which is not in the vocabulary")
            self._ranks.setdefault((self.vocab[a], self.vocab[b]), (r, self.vocab[merged]))
        self._cache: dict[str, list[int]] = {}
        self._rng = random.Random()

    def _symbols(self, piece: str) -> list[int]:
        ids: list[int] = []
        unk = None  # (pending unknown id) for fuse_unk
        n = len(piece)
        for k, c in enumerate(piece):
            s = c
            if k and self.prefix:
                s = self.prefix + s
            if k == n - 1 and self.suffix:
                s = s + self.suffix
            i = self.vocab.get(s)
            if i is not None:
                if unk is not None:
                    ids.append(unk)
                    unk = None
                ids.append(i)
                continue
            if self.byte_fallback:
                byte_ids = [self.vocab.get(f"<0x{b:02X}>") for b in s.encode("utf-8")]
                if all(x is not None for x in byte_ids):
                    ids += byte_ids  # HF leaves a pending unknown token for after the piece
                    continue
            if self.unk_id is not None:
                if unk is not None and not self.fuse_unk:
                    ids.append(unk)
                unk = self.unk_id
        if unk is not None:
            ids.append(unk)
        return ids

    def _merge(self, ids: list[int]) -> list[int]:
        ranks = self._ranks
        dropout = self.dropout
        while len(ids) > 1:
            best = None
            for k in range(len(ids) - 1):
                hit = ranks.get((ids[k], ids[k + 1]))
                if hit is not None and (best is None or hit[0] < best[0]):
                    if dropout is not None and self._rng.random() < dropout:
                        continue
                    best = (hit[0], k, hit[1])
            if best is None:
                break
            rank, _, new = best
            out, k = [], 0
            while k < len(ids):  # every occurrence of the best pair, left to right
                if k + 1 < len(ids) and ranks.get((ids[k], ids[k + 1]), (None,))[0] == rank:
                    out.append(new)
                    k += 2
                else:
                    out.append(ids[k])
                    k += 1
            ids = out
        return ids

    def encode_word(self, piece: str) -> list[int]:
        if not piece:
            return []
        if self.dropout is None:
            hit = self._cache.get(piece)
            if hit is not None:
                return list(hit)
        if self.ignore_merges and piece in self.vocab:
            ids = [self.vocab[piece]]
        else:
            ids = self._merge(self._symbols(piece))
        if self.dropout is None and len(self._cache) < 200_000:
            self._cache[piece] = ids
        return list(ids)

    encode_word_reference = encode_word

    def encode_words(self, words: list[str]) -> list[int]:
        out: list[int] = []
        for w in words:
            out += self.encode_word(w)
        return out

    def default_decoder(self):
        from ..decoders import BPEDecoder, Fuse

        return BPEDecoder(self.suffix) if self.suffix else Fuse()

    def to_dict(self) -> dict:
        return {"vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])), "merges": [list(m) for m in self.merges],
                "unk_token": self.unk_token, "continuing_subword_prefix": self.prefix, "end_of_word_suffix": self.suffix,
                "fuse_unk": self.fuse_unk, "byte_fallback": self.byte_fallback, "ignore_merges": self.ignore_merges,
                "dropout": self.dropout, "special_tokens": list(self.special_tokens)}

    @classmethod
    def from_dict(cls, d: dict) -> "BPE":
        return cls(d["vocab"], [tuple(m) for m in d["merges"]], unk_token=d.get("unk_token"),
                   continuing_subword_prefix=d.get("continuing_subword_prefix"), end_of_word_suffix=d.get("end_of_word_suffix"),
                   fuse_unk=d.get("fuse_unk", False), byte_fallback=d.get("byte_fallback", False),
                   ignore_merges=d.get("ignore_merges", False), dropout=d.get("dropout"), special_tokens=d.get("special_tokens", ()))
