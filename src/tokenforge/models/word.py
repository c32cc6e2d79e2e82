"""Word-level model: every piece is one token; unknown pieces become `<unk>`.

    >>> m = WordLevel.train_from_counts({"the": 5, "cat": 2, "sat": 1}, min_frequency=2)
    >>> m.encode_words(["the", "cat", "sat"])
    [4, 5, 1]

Training keeps the pieces seen at least `min_frequency` times, most frequent first (ties: in text
order), up to `vocab_size` tokens with the special tokens. Decoding joins the pieces with single
spaces: exact only for text whose pieces were separated by one space; an out-of-vocabulary word
decodes as "<unk>".
"""

from __future__ import annotations

from typing import Mapping

from .base import Model

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


class WordLevel(Model):
    kind = "word"

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>", special_tokens=SPECIAL_TOKENS):
        super().__init__(vocab, special_tokens)
        if unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.unk_token, self.unk_id = unk_token, self.vocab[unk_token]
        if unk_token not in self.special_tokens:
            self.special_tokens.append(unk_token)
        specials = set(self.special_tokens)
        self._lookup = {t: i for t, i in self.vocab.items() if t not in specials}

    def encode_words(self, words: list[str]) -> list[int]:
        get, unk = self._lookup.get, self.unk_id
        return [get(w, unk) for w in words]

    def encode_word_reference(self, word: str) -> list[int]:
        return [self._lookup.get(word, self.unk_id)] if word else []

    def decode_tokens(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    def to_dict(self) -> dict:
        return {"vocab": self._ordered_vocab(), "unk_token": self.unk_token, "special_tokens": list(self.special_tokens)}

    @classmethod
    def from_dict(cls, d: dict) -> "WordLevel":
        return cls({t: i for i, t in enumerate(d["vocab"])}, unk_token=d["unk_token"], special_tokens=d["special_tokens"])

    @classmethod
    def train_from_counts(cls, counts: Mapping[str, int], *, vocab_size: int | None = None, min_frequency: int = 1,
                          special_tokens=SPECIAL_TOKENS, unk_token: str = "<unk>") -> "WordLevel":
        special_tokens = list(dict.fromkeys([*special_tokens, unk_token]))
        words = sorted((w for w, c in counts.items() if w and c >= min_frequency and w not in special_tokens),
                       key=lambda w: (-counts[w], w))
        if vocab_size is not None:
            words = words[: max(vocab_size - len(special_tokens), 0)]
        return cls({t: i for i, t in enumerate(special_tokens + words)}, unk_token=unk_token, special_tokens=special_tokens)
