"""Character-level model: every character is one token; unknown characters become `<unk>`.

    >>> m = CharLevel.train_from_counts({"abca": 1})
    >>> m.encode_words(["abcz"])
    [4, 5, 6, 1]

Training keeps the characters seen at least `min_frequency` times, most frequent first (ties: by
code point), up to `vocab_size` tokens with the special tokens. With no pre-tokenizer (the default
for CharTokenizer) decoding is exact except for characters that became "<unk>".
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from .base import Model

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


class CharLevel(Model):
    kind = "char"

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>", special_tokens=SPECIAL_TOKENS):
        super().__init__(vocab, special_tokens)
        if unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.unk_token, self.unk_id = unk_token, self.vocab[unk_token]
        if unk_token not in self.special_tokens:
            self.special_tokens.append(unk_token)
        for t in self.vocab:
            if len(t) != 1 and t not in self.special_tokens:
                raise ValueError(f"a character vocabulary holds single characters, not {t!r}")
        self._lookup = {t: i for t, i in self.vocab.items() if len(t) == 1}

    def encode_words(self, words: list[str]) -> list[int]:
        get, unk = self._lookup.get, self.unk_id
        return [get(c, unk) for w in words for c in w]

    def encode_word_reference(self, word: str) -> list[int]:
        return [self._lookup.get(c, self.unk_id) for c in word]

    def decode_tokens(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def to_dict(self) -> dict:
        return {"vocab": self._ordered_vocab(), "unk_token": self.unk_token, "special_tokens": list(self.special_tokens)}

    @classmethod
    def from_dict(cls, d: dict) -> "CharLevel":
        return cls({t: i for i, t in enumerate(d["vocab"])}, unk_token=d["unk_token"], special_tokens=d["special_tokens"])

    @classmethod
    def train_from_counts(cls, counts: Mapping[str, int], *, vocab_size: int | None = None, min_frequency: int = 1,
                          special_tokens=SPECIAL_TOKENS, unk_token: str = "<unk>") -> "CharLevel":
        special_tokens = list(dict.fromkeys([*special_tokens, unk_token]))
        chars: Counter = Counter()
        for w, c in counts.items():
            for ch in w:
                chars[ch] += c
        kept = sorted((ch for ch, c in chars.items() if c >= min_frequency), key=lambda ch: (-chars[ch], ch))
        if vocab_size is not None:
            kept = kept[: max(vocab_size - len(special_tokens), 0)]
        return cls({t: i for i, t in enumerate(special_tokens + kept)}, unk_token=unk_token, special_tokens=special_tokens)
