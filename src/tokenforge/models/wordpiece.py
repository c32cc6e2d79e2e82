"""WordPiece (BERT): greedy longest-match-first inside each word, `##` marks a continuation.

    >>> wp = WordPiece({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "aff": 4})
    >>> wp.encode_words(["unaffable", "xyz"])
    [1, 2, 3, 0]

Encoding a word: take the longest vocabulary token that starts the word; then repeatedly the
longest continuation token (written "##piece" in the vocabulary) that starts the rest. If none
matches, or the word has more than `max_input_chars_per_word` characters (100), the whole word is
`[UNK]` (never a part of it). This is exactly Hugging Face's `models.WordPiece`; the native version
(cpp/wordpiece.h) walks a trie instead of trying ever shorter substrings.

Decoding joins a "##" piece to the previous one and puts a space before any other token (HF's
WordPiece decoder, with its `cleanup` of spaces before punctuation and in contractions, on by
default). Lossy: case and accents (if the normalizer removed them), the spacing between words and
punctuation, and the text of any word that became `[UNK]`.

Training: WordPiece's likelihood score, count(pair) / (count(left) * count(right)), over the
pre-token count, starting from the characters (continuation characters written "##c"). Note that
HF's WordPieceTrainer instead trains BPE (by pair count); the score here is Google's/the HF course's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from .. import _core
from .base import NativeWordModel, pre_token_counts, train_pairs

BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class WordPiece(NativeWordModel):
    kind = "wordpiece"

    def __init__(self, vocab: Mapping[str, int], *, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
                 max_input_chars_per_word: int = 100, special_tokens=BERT_SPECIAL_TOKENS):
        super().__init__(vocab, special_tokens)
        for name, value in (("unk_token", unk_token), ("continuing_subword_prefix", continuing_subword_prefix)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        if unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        if not isinstance(max_input_chars_per_word, int) or max_input_chars_per_word < 1:
            raise ValueError("max_input_chars_per_word must be a positive int")
        self.unk_token = unk_token
        self.unk_id = self.vocab[unk_token]
        self.prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        if unk_token not in self.special_tokens:
            self.special_tokens.append(unk_token)
        # Special tokens are never matched inside text (a literal "[UNK]" word is encoded as text).
        self._native = _core.WordPiece(self.vocab, set(self.special_tokens), self.prefix, self.unk_id,
                                       max_input_chars_per_word)
        self._matchable_made = None

    @property
    def _matchable(self) -> dict[str, int]:
        """token -> id without the special tokens, for the reference below (made on first use)."""
        if self._matchable_made is None:
            matchable = dict(self.vocab)
            for t in self.special_tokens:
                matchable.pop(t, None)
            self._matchable_made = matchable
        return self._matchable_made

    # -- encoding ---------------------------------------------------------------------------------
    def encode_word_reference(self, word: str) -> list[int]:
        """HF's loop, transcribed: the oracle of the native trie walk."""
        if not word:
            return []
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_id]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self._matchable:
                    found = self._matchable[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk_id]
            ids.append(found)
            start = end
        return ids

    def default_decoder(self):
        from ..decoders import WordPiece as WordPieceDecoder

        return WordPieceDecoder(self.prefix, cleanup=True)

    # -- decoding ---------------------------------------------------------------------------------
    def decode_tokens(self, tokens: list[str], *, cleanup: bool = True) -> str:
        out = []
        for n, t in enumerate(tokens):
            if n:
                t = t[len(self.prefix):] if self.prefix and t.startswith(self.prefix) else " " + t
            out.append(_cleanup(t) if cleanup else t)
        return "".join(out)

    # -- files ------------------------------------------------------------------------------------
    @classmethod
    def from_vocab_file(cls, path, **kwargs) -> "WordPiece":
        """A BERT `vocab.txt`: one token per line, the line number (from 0) is the id."""
        vocab: dict[str, int] = {}
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the file's final newline
        for n, line in enumerate(lines):
            token = line.rstrip("\r")
            if not token:
                raise ValueError(f"{path}, line {n + 1}: empty token")
            if token in vocab:
                raise ValueError(f"{path}, line {n + 1}: token {token!r} appears twice")
            vocab[token] = n
        return cls(vocab, **kwargs)

    def save_vocab_file(self, path) -> None:
        ids = sorted(self._by_id)
        if ids != list(range(len(ids))):
            raise ValueError("a vocab.txt needs ids 0..n-1 without gaps")
        from ..outputs import write_atomic

        write_atomic(Path(path), "".join(self._by_id[i] + "\n" for i in ids).encode("utf-8"))

    def to_dict(self) -> dict:
        return {
            "vocab": self._ordered_vocab(),
            "unk_token": self.unk_token,
            "continuing_subword_prefix": self.prefix,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "special_tokens": list(self.special_tokens),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "WordPiece":
        return cls({t: i for i, t in enumerate(d["vocab"])}, unk_token=d["unk_token"],
                   continuing_subword_prefix=d["continuing_subword_prefix"],
                   max_input_chars_per_word=d["max_input_chars_per_word"], special_tokens=d["special_tokens"])

    # -- training ---------------------------------------------------------------------------------
    @classmethod
    def train_from_counts(cls, counts: Mapping[str, int], *, vocab_size: int = 30000, min_frequency: int = 1,
                          special_tokens=BERT_SPECIAL_TOKENS, unk_token: str = "[UNK]",
                          continuing_subword_prefix: str = "##", max_input_chars_per_word: int = 100,
                          native: bool = True) -> "WordPiece":
        """Trains on a pre-token count {word: count} (see the pipeline's train for text)."""
        special_tokens = list(dict.fromkeys([*special_tokens, unk_token]))
        p = continuing_subword_prefix
        items = pre_token_counts(counts)
        split = [[w[0]] + [p + c for c in w[1:]] for w, _ in items]
        alphabet = sorted({s for w in split for s in w} - set(special_tokens))
        index = {s: i for i, s in enumerate(alphabet)}
        room = vocab_size - len(special_tokens) - len(alphabet)
        new, _ = train_pairs(alphabet, [[index[s] for s in w] for w in split], [c for _, c in items],
                             score="wordpiece", min_frequency=min_frequency, max_new_tokens=max(room, 0),
                             markers=special_tokens, strip_prefix=p, native=native)
        tokens = special_tokens + alphabet + [t for t in new if t not in special_tokens]
        return cls({t: i for i, t in enumerate(tokens)}, unk_token=unk_token, continuing_subword_prefix=p,
                   max_input_chars_per_word=max_input_chars_per_word, special_tokens=special_tokens)


def _cleanup(s: str) -> str:
    # HF's decoders::wordpiece::cleanup, applied token by token.
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
                 (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        s = s.replace(a, b)
    return s
