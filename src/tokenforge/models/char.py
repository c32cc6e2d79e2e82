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

from .base import LookupModel

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


class CharLevel(LookupModel):
    kind = "char"

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>", special_tokens=SPECIAL_TOKENS):
        super().__init__(vocab, unk_token=unk_token, special_tokens=special_tokens)
        for t in self.vocab:
            if len(t) != 1 and t not in self.special_tokens:
                raise ValueError(f"a character vocabulary holds single characters, not {t!r}")

    def _is_unit(self, token: str, specials: set) -> bool:
        return len(token) == 1

    def encode_words(self, words: list[str]) -> list[int]:
        get, unk = self._lookup.get, self.unk_id
        return [get(c, unk) for w in words for c in w]

    def encode_word_reference(self, word: str) -> list[int]:
        return [self._lookup.get(c, self.unk_id) for c in word]

    def default_decoder(self):
        from ..decoders import Fuse

        return Fuse()

    def decode_tokens(self, tokens: list[str]) -> str:
        return "".join(tokens)

    @staticmethod
    def _units(counts: Mapping[str, int], min_frequency: int, special_tokens: list) -> list[str]:
        chars: Counter = Counter()
        for w, c in counts.items():
            for ch in w:
                chars[ch] += c
        return sorted((ch for ch, c in chars.items() if c >= min_frequency), key=lambda ch: (-chars[ch], ch))
