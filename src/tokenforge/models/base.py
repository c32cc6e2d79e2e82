"""What the pipeline needs from a model: ids for a list of pieces (words), tokens for ids, a file
description. Shared helpers for vocabularies and the pair trainer.
"""

from __future__ import annotations

import functools
from typing import Iterable, Mapping

from .. import _core
from ..stage import UnknownTokenError


def tokens_of(id_to_token, ids) -> list[str]:
    """The token of each id (id_to_token(i), None for an unknown id); UnknownTokenError names the
    first id that is not an int of the vocabulary."""
    out = []
    for i in ids:
        t = id_to_token(i) if isinstance(i, int) and not isinstance(i, bool) else None
        if t is None:
            raise UnknownTokenError(f"invalid token id {i!r} (not in the vocabulary)")
        out.append(t)
    return out


class Model:
    """A vocabulary (token text <-> id) and a rule that turns a word into ids.

    Subclasses give: encode_words (native where it counts), encode_word_reference (the pure-Python
    oracle, one word), decode_tokens (token texts -> text), to_dict / from_dict.
    """

    kind = ""

    def __init__(self, vocab: Mapping[str, int], special_tokens: Iterable[str] = ()):
        vocab = dict(vocab)
        # checked natively in one pass (a 30k vocabulary: 10 ms of loop); the loop names what is wrong
        if not _core.vocab_checked(vocab):
            ids = {}
            for t, i in vocab.items():
                if not isinstance(t, str) or not t:
                    raise TypeError(f"vocabulary tokens must be non-empty str, got {t!r}")
                if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**32 - 1:
                    raise ValueError(f"token {t!r} has an invalid id {i!r}")
                if i in ids:
                    raise ValueError(f"tokens {ids[i]!r} and {t!r} have the same id {i}")
                ids[i] = t
            self._by_id = ids
        self.vocab = vocab
        self.special_tokens = [s for s in special_tokens if s in vocab]

    @functools.cached_property
    def _by_id(self) -> dict[int, str]:
        """id -> token, made when first asked for (decoding): loading does not pay for it."""
        return _core.vocab_by_id(self.vocab) or {i: t for t, i in self.vocab.items()}

    # -- vocabulary -------------------------------------------------------------------------------
    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, i: int) -> str | None:
        return self._by_id.get(i)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def tokens_of(self, ids) -> list[str]:
        return tokens_of(self._by_id.get, ids)

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        """The model stage: ids of pieces (what the pre-tokenizer gives)."""
        return self.encode_words(pieces if type(pieces) is list else list(pieces))

    def default_decoder(self):
        """The decoder that goes with this model: its own decode_tokens rule."""
        from ..decoders.base import ModelDecoder

        return ModelDecoder(self)

    def encode_words_reference(self, words: list[str]) -> list[int]:
        ids: list[int] = []
        for w in words:
            ids += self.encode_word_reference(w)
        return ids

    def encode_batch_words(self, batch: list[list[str]], num_threads: int) -> list[list[int]]:
        return [self.encode_words(words) for words in batch]

    def encode_text(self, text: str, how: int) -> list[int]:
        """Splits text with native word splitter `how` (pre_tokenizers.*.native), then encodes."""
        return self.encode_words(_core.split_words(text, how))

    def encode_texts(self, texts: list[str], how: int, num_threads: int) -> list[list[int]]:
        return [self.encode_text(t, how) for t in texts]

    def _ordered_vocab(self) -> list[str]:
        return [t for _, t in sorted(self._by_id.items())]


def pre_token_counts(words_by_count: Mapping[str, int]) -> list[tuple[str, int]]:
    """The pre-token count in a fixed order (by word), so training is deterministic."""
    return sorted(((w, c) for w, c in words_by_count.items() if w and c > 0), key=lambda wc: wc[0])


def train_pairs(symbols: list[str], words: list[list[int]], counts: list[int], *, score: str, min_frequency: int,
                max_new_tokens: int, markers: list[str], strip_prefix: str = "", native: bool = True):
    """The shared pair trainer (cpp/char_bpe.h): returns (new token texts, [(left, right, merged)])."""
    if native:
        return _core.train_pairs(symbols, words, counts, 1 if score == "wordpiece" else 0, max(int(min_frequency), 1),
                                 max(int(max_new_tokens), 0), [m for m in markers if m], strip_prefix)
    return train_pairs_reference(symbols, words, counts, score=score, min_frequency=min_frequency,
                                 max_new_tokens=max_new_tokens, markers=markers, strip_prefix=strip_prefix)


def train_pairs_reference(symbols, words, counts, *, score, min_frequency, max_new_tokens, markers, strip_prefix=""):
    """The readable version of the pair trainer, the oracle of the native one.

    Every step recounts all pairs, picks the best (count, or WordPiece's count / (left * right)),
    ties broken by the higher count, then the smaller (left text, right text), and merges it in
    every word, left to right.
    """
    from fractions import Fraction

    symbols = list(symbols)
    words = [list(w) for w in words]
    by_text = {s: i for i, s in enumerate(symbols)}
    markers = [m for m in markers if m]
    min_frequency = max(int(min_frequency), 1)
    new_tokens, merges = [], []

    def joined(l, r):
        rs = symbols[r]
        if strip_prefix and rs.startswith(strip_prefix):
            rs = rs[len(strip_prefix):]
        return symbols[l] + rs

    def occurrences(s, m):
        return sum(1 for k in range(len(s)) if s.startswith(m, k))

    def allowed(l, r):
        j = joined(l, r)
        return all(occurrences(j, m) == occurrences(symbols[l], m) + occurrences(symbols[r], m) for m in markers)

    while len(new_tokens) < max_new_tokens:
        pairs: dict[tuple[int, int], int] = {}
        freq: dict[int, int] = {}
        for w, c in zip(words, counts):
            for t in w:
                freq[t] = freq.get(t, 0) + c
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        candidates = [(p, c) for p, c in pairs.items() if c >= min_frequency and allowed(*p)]
        if not candidates:
            break

        def key(pc):
            (a, b), c = pc
            s = Fraction(c, freq[a] * freq[b]) if score == "wordpiece" else Fraction(c)
            return (-s, -c, symbols[a].encode(), symbols[b].encode())

        (l, r), _ = min(candidates, key=key)
        text = joined(l, r)
        if text in by_text:
            merged = by_text[text]
        else:
            merged = by_text[text] = len(symbols)
            symbols.append(text)
            new_tokens.append(text)
        merges.append((l, r, merged))
        for k, w in enumerate(words):
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == l and w[i + 1] == r:
                    out.append(merged)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[k] = out
    return new_tokens, merges


class NativeWordModel(Model):
    """A model whose word encoding runs in a native object (`self._native`): WordPiece, char BPE."""

    def encode_words(self, words: list[str]) -> list[int]:
        return self._native.encode_words(words if type(words) is list else list(words))

    def encode_batch_words(self, batch, num_threads):
        return self._native.encode_batch([w if type(w) is list else list(w) for w in batch], num_threads)

    def encode_text(self, text: str, how: int) -> list[int]:
        return self._native.encode_text(text, how)

    def encode_texts(self, texts: list[str], how: int, num_threads: int) -> list[list[int]]:
        return self._native.encode_texts(texts, how, num_threads)


class LookupModel(Model):
    """A model that maps each unit (a word, a character) to its id, unknown ones to `unk_token`.

    Subclasses give `_is_unit(token, specials)` (which vocabulary entries are looked up) and
    `_units(counts, min_frequency, special_tokens)` (training: the units to keep, in order).
    """

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>", special_tokens=()):
        super().__init__(vocab, special_tokens)
        if unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.unk_token, self.unk_id = unk_token, self.vocab[unk_token]
        if unk_token not in self.special_tokens:
            self.special_tokens.append(unk_token)
        specials = set(self.special_tokens)
        self._lookup = {t: i for t, i in self.vocab.items() if self._is_unit(t, specials)}

    def _is_unit(self, token: str, specials: set) -> bool:
        return token not in specials

    def to_dict(self) -> dict:
        return {"vocab": self._ordered_vocab(), "unk_token": self.unk_token, "special_tokens": list(self.special_tokens)}

    @classmethod
    def from_dict(cls, d: dict):
        return cls({t: i for i, t in enumerate(d["vocab"])}, unk_token=d["unk_token"], special_tokens=d["special_tokens"])

    @classmethod
    def train_from_counts(cls, counts: Mapping[str, int], *, vocab_size: int | None = None, min_frequency: int = 1,
                          special_tokens=("<pad>", "<unk>", "<bos>", "<eos>"), unk_token: str = "<unk>"):
        special_tokens = list(dict.fromkeys([*special_tokens, unk_token]))
        kept = cls._units(counts, min_frequency, special_tokens)
        if vocab_size is not None:
            kept = kept[: max(vocab_size - len(special_tokens), 0)]
        return cls({t: i for i, t in enumerate(special_tokens + kept)}, unk_token=unk_token, special_tokens=special_tokens)
