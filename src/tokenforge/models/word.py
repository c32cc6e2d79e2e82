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

from .base import LookupModel

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


class WordLevel(LookupModel):
    kind = "word"

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "<unk>", special_tokens=SPECIAL_TOKENS):
        super().__init__(vocab, unk_token=unk_token, special_tokens=special_tokens)

    def encode_words(self, words: list[str]) -> list[int]:
        get, unk = self._lookup.get, self.unk_id
        return [get(w, unk) for w in words]

    def encode_word_reference(self, word: str) -> list[int]:
        return [self._lookup.get(word, self.unk_id)] if word else []

    def default_decoder(self):
        return None  # tokens joined with spaces, as Hugging Face does without a decoder

    def decode_tokens(self, tokens: list[str]) -> str:
        return " ".join(tokens)

    @staticmethod
    def _units(counts: Mapping[str, int], min_frequency: int, special_tokens: list) -> list[str]:
        return sorted((w for w, c in counts.items() if w and c >= min_frequency and w not in special_tokens),
                      key=lambda w: (-counts[w], w))
