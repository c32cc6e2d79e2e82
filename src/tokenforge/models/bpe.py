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

The merge loop runs natively (cpp/char_bpe.h, Hugging Face's loop with byte fallback and fused
unknown tokens) unless the model has dropout or a continuing_subword_prefix (or an end_of_word_suffix
with byte_fallback): Llama-2-style tokenizer.json files (byte fallback, no pre-tokenizer, so the whole
text is one piece) took seconds per page in the Python loop, whose merges cost O(n^2) in a piece's
length. `encode_word_reference` is the pure-Python rule, the oracle of the tests; the byte-level
families run on their own engines (models.ByteBPE, models.CharBPE), which tokenforge.Tokenizer picks
when a file allows.
"""

from __future__ import annotations

import functools
import random
import re
from typing import Mapping, Sequence

from .. import _core
from .base import Model
from .byte_bpe import Merges


def _rank_table(lefts, rights, merged) -> dict[tuple[int, int], tuple[int, int]]:
    """{(left id, right id): (rank, merged id)} of rules in rank order, by whole columns; a pair
    listed twice keeps its first rank (inserted last, it wins)."""
    return dict(zip(reversed(list(zip(lefts, rights))), reversed(list(zip(range(len(merged)), merged)))))


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
        self._cache: dict[str, list[int]] = {}
        self._rng = random.Random()
        if isinstance(merges, Merges):
            # rules read natively from a file (formats/hf_stages.py: _core.text_bpe_merges), which
            # vouches for them; the pairs and the rank table are made when asked for
            self._packed, self._merges, self._rank_table = merges, None, None
        else:
            self._packed, self._merges = None, [(str(a), str(b)) for a, b in merges]
            self._rank_table = self._checked_ranks()
        self._native = self._native_model()

    @property
    def merges(self) -> list[tuple[str, str]]:
        if self._merges is None:
            by_id = self._by_id
            self._merges = [(by_id[a], by_id[b]) for a, b, _ in self._packed]
        return self._merges

    @property
    def _ranks(self) -> dict[tuple[int, int], tuple[int, int]]:
        """{(left id, right id): (rank, merged id)}, the first rank of a pair listed twice."""
        if self._rank_table is None:
            rules = list(self._packed)
            self._rank_table = _rank_table([a for a, _, _ in rules], [b for _, b, _ in rules], [m for _, _, m in rules])
        return self._rank_table

    def _checked_ranks(self) -> dict[tuple[int, int], tuple[int, int]]:
        vocab = self.vocab
        if self.prefix is None and self._merges:
            # by whole columns (no Python code per merge); the loop below names a merge at fault
            lefts, rights = [a for a, _ in self._merges], [b for _, b in self._merges]
            ids = [list(map(vocab.get, lefts)), list(map(vocab.get, rights)),
                   list(map(vocab.get, map(str.__add__, lefts, rights)))]
            if not any(None in column for column in ids):
                return _rank_table(*ids)
        ranks: dict[tuple[int, int], tuple[int, int]] = {}
        prefix_len = len(self.prefix or "")
        for r, (a, b) in enumerate(self._merges):
            if a not in vocab or b not in vocab:
                raise ValueError(f"merge {r} ({a!r}, {b!r}) uses a token that is not in the vocabulary")
            merged = a + (b[prefix_len:] if self.prefix and b.startswith(self.prefix) else b)
            if merged not in vocab:
                raise ValueError(f"merge {r} ({a!r}, {b!r}) makes {merged!r}, which is not in the vocabulary")
            ranks.setdefault((vocab[a], vocab[b]), (r, vocab[merged]))
        return ranks

    def _native_model(self):
        """The native merge loop, where it runs this model's options exactly; else None."""
        if self.dropout is not None or self.prefix is not None or (self.suffix and self.byte_fallback) \
                or "" in self.vocab:
            return None
        if self._packed is not None:
            rules = self._packed.packed  # (in order, a repeated pair too: the native loop keeps its first rank)
        else:  # (left, right, merged) in rank order, the first rank of a repeated pair
            rules = [(a, b, m) for (a, b), (_, m) in sorted(self._ranks.items(), key=lambda kv: kv[1][0])]
        return _core.CharBpe(self.vocab, rules, self.suffix or "", "", True, -1 if self.unk_id is None else self.unk_id,
                             self.byte_fallback, self.fuse_unk, True)

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
        if self._native is not None:
            return self.encode_words([piece])
        return self._encode_word_python(piece)

    def encode_word_reference(self, piece: str) -> list[int]:
        """The rule in Python (no cache, no native loop): the oracle of the tests."""
        if not piece:
            return []
        if self.ignore_merges and piece in self.vocab:
            return [self.vocab[piece]]
        return self._merge(self._symbols(piece))

    def _encode_word_python(self, piece: str) -> list[int]:
        """The rule in Python, with a per-piece cache (none with dropout: ids vary between calls)."""
        if self.dropout is None:
            hit = self._cache.get(piece)
            if hit is not None:
                return list(hit)
        ids = self.encode_word_reference(piece)
        if self.dropout is None and len(self._cache) < 200_000:
            self._cache[piece] = ids
        return list(ids)

    @functools.cached_property
    def _cut_at_spaces(self) -> bool:
        """Whether a piece may be cut before a "▁" without changing its ids (the native loop then
        cuts it: _core.CharBpe.encode_cut), and where.

        Sentencepiece-made vocabularies (Llama 2's, Mistral's, Gemma's) spell a space as "▁". Where
        the character before a "▁" is in no token right before a "▁" (Llama 2 and Mistral put only
        "▁" there, in their runs "▁▁" ...; Gemma 3 also ">", in ">▁</"), no symbol ever spans the
        place (a merge only makes tokens), and the merges on each side run as if the other were not
        there (each side merges its own lowest-ranked pair, in the same order). So a whole text
        (these files have no pre-tokenizer) is cut into words there, which repeat and are encoded
        once per call (Mistral's v1 vocabulary, 1 MB of English: 0.44 s as one piece, 0.06 s as 152k
        words). The native model gets those characters (before_space). Not with ignore_merges (it
        looks at the whole piece) or an end-of-word suffix (on the piece's last character), nor if
        "▁" is unknown (a run of unknown characters is fused across it)."""
        if self._native is None or self.ignore_merges or self.suffix or "▁" not in self.vocab:
            return False
        before = re.compile("(.)(?=▁)", re.DOTALL)
        self._native.before_space = sorted({c for t in self.vocab if "▁" in t[1:]
                                            for c in before.findall(t)})
        return True

    def encode_words(self, words: list[str]) -> list[int]:
        native = self._native
        if native is not None and not self.ignore_merges:
            words = words if type(words) is list else list(words)
            if len(words) == 1 and self._cut_at_spaces:  # (a whole text; pieces a pre-tokenizer made are words)
                return native.encode_cut(words, 1)[0]
            return native.encode_words(words)
        out: list[int] = []
        for w in words:
            if native is None:
                out += self._encode_word_python(w)
            elif w in self.vocab:  # ignore_merges: a piece that is a token is that token
                out.append(self.vocab[w])
            else:
                out += native.encode_words([w])
        return out

    def encode_batch_texts(self, texts: list[str], num_threads: int) -> list[list[int]]:
        """Each text as one piece (a pipeline without a pre-tokenizer), on native threads."""
        if self._native is not None and not self.ignore_merges:
            if self._cut_at_spaces:
                return self._native.encode_cut(texts, num_threads)
            return self._native.encode_batch([[t] for t in texts], num_threads)
        return [self.encode_words([t]) for t in texts]

    def encode_parts_batch(self, batch: list[list], num_threads: int) -> list[list[int]] | None:
        """Texts as their parts (ids of added tokens, and the stretches between them, each one
        piece): one list of ids per text, natively; None where encode_batch_texts must do it."""
        if self._native is None or self.ignore_merges:
            return None
        return self._native.encode_parts(batch, num_threads, self._cut_at_spaces)

    def encode_in_place_batch(self, texts: list[str], written, normalized, char_map: tuple[str, str],
                              num_threads: int) -> list[list[int]] | None:
        """Tokenizer._in_place (added tokens of both kinds) natively, in one call: `written` and
        `normalized` are (finder, ids) of the added tokens (AddedVocabulary.finder_and_ids); None
        where this model cannot."""
        if self._native is None or self.ignore_merges:
            return None
        old, now = char_map
        return self._native.encode_in_place(texts, written[0], written[1], normalized[0], normalized[1],
                                            old, now, num_threads, self._cut_at_spaces)

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
