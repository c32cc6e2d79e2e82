"""What the pipeline needs from a model: ids for a list of pieces (words), tokens for ids, a file
description. Shared helpers for vocabularies and the pair trainer.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from .. import _core


class Model:
    """A vocabulary (token text <-> id) and a rule that turns a word into ids.

    Subclasses give: encode_words (native where it counts), encode_word_reference (the pure-Python
    oracle, one word), decode_tokens (token texts -> text), to_dict / from_dict.
    """

    kind = ""

    def __init__(self, vocab: Mapping[str, int], special_tokens: Iterable[str] = ()):
        vocab = dict(vocab)
        ids = {}
        for t, i in vocab.items():
            if not isinstance(t, str) or not t:
                raise TypeError(f"vocabulary tokens must be non-empty str, got {t!r}")
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**32 - 1:
                raise ValueError(f"token {t!r} has an invalid id {i!r}")
            if i in ids:
                raise ValueError(f"tokens {ids[i]!r} and {t!r} have the same id {i}")
            ids[i] = t
        self.vocab = vocab
        self._by_id = ids
        self.special_tokens = [s for s in special_tokens if s in vocab]

    # -- vocabulary -------------------------------------------------------------------------------
    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, i: int) -> str | None:
        return self._by_id.get(i)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def tokens_of(self, ids) -> list[str]:
        out = []
        for i in ids:
            t = self._by_id.get(i) if isinstance(i, int) and not isinstance(i, bool) else None
            if t is None:
                from ..tokenizer import UnknownTokenError

                raise UnknownTokenError(f"invalid token id {i!r} (not in the vocabulary)")
            out.append(t)
        return out

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
