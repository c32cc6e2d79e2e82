"""Greedy longest match over bytes: RWKV's "world" tokenizer.

At each position of the text's UTF-8 the longest vocabulary token the bytes start with is taken,
then the search goes on after it. Every single byte is a token, so there is always a match; a token
may end inside a character (RWKV's vocabulary has tokens of partial UTF-8), which is why the
vocabulary is bytes, spelled in GPT-2's byte alphabet where a str is needed (id_to_token, get_vocab,
as the byte-level models do) and decoded by the ByteLevel decoder.

    >>> m = LongestMatch({bytes([b]): b for b in range(256)} | {b"ab": 256, b"abc": 257})
    >>> m.encode_bytes(b"abcab!")
    [257, 256, 33]

The work runs natively (`_core.LongestMatch`, cpp/longest_match.h: every prefix of every token a
key of its own, so the lookups at one position are asked for together); `encode_word_reference` is
the readable version, the oracle of the property tests.
"""

from __future__ import annotations

import base64
from typing import Mapping

from .. import _core
from ..byte_alphabet import from_chars, to_chars
from .base import tokens_of


MAX_TOKEN_BYTES = 1 << 16  # (cpp/longest_match.h kMaxLength)


class LongestMatch:
    kind = "longest_match"

    def __init__(self, tokens: Mapping[bytes, int]):
        tokens = dict(tokens)
        ids = list(tokens.values())
        # whole columns first (no Python code per token); the loop names a problem
        if not (set(map(type, tokens)) <= {bytes} and set(map(type, ids)) <= {int} and min(ids, default=0) >= 0
                and max(ids, default=0) < 2**31 and len(set(ids)) == len(ids) and b"" not in tokens):
            by_id: dict[int, bytes] = {}
            for b, i in tokens.items():
                if not isinstance(b, (bytes, bytearray)) or not b:
                    raise TypeError(f"a longest-match vocabulary maps non-empty bytes to ids, got {b!r:.40}")
                if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**31:
                    raise ValueError(f"token {b!r} has an invalid id {i!r} (ids are ints in [0, 2**31))")
                if i in by_id:
                    raise ValueError(f"tokens {by_id[i]!r} and {b!r} have the same id {i}")
                by_id[i] = bytes(b)
            tokens = {b: i for i, b in by_id.items()}
        longest = max(map(len, tokens), default=0)
        if longest > MAX_TOKEN_BYTES:  # (each byte of a token is a table entry: a hostile file's megabyte token)
            raise ValueError(f"a token of {longest} bytes: longer than {MAX_TOKEN_BYTES} bytes")
        missing = [b for b in range(256) if bytes((b,)) not in tokens]
        if missing:
            raise ValueError(f"byte {missing[0]} (0x{missing[0]:02X}) is not a token; greedy longest match needs "
                             "every single byte as one")
        self.tokens = tokens
        self._by_id = dict(zip(tokens.values(), tokens))
        self._native = _core.LongestMatch(list(zip(tokens.values(), tokens)))

    # -- the model stage ---------------------------------------------------------------------------
    def encode_bytes(self, data: bytes) -> list[int]:
        return self._native.encode(data)

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        """Each piece of text (its UTF-8) on its own; RWKV's pipeline has no pre-tokenizer, so the
        piece is the whole text between added tokens."""
        out: list[int] = []
        for p in pieces:
            out += self._native.encode(p)
        return out

    def encode_batch_texts(self, texts: list[str], num_threads: int) -> list[list[int]]:
        return self._native.encode_batch(texts, num_threads)

    def encode_word_reference(self, piece: str) -> list[int]:
        """The rule, readable: the longest token at each position (the oracle of the tests)."""
        data = piece.encode("utf-8")
        longest = max(map(len, self.tokens))
        ids, i = [], 0
        while i < len(data):
            n = next(n for n in range(min(longest, len(data) - i), 0, -1) if data[i:i + n] in self.tokens)
            ids.append(self.tokens[data[i:i + n]])
            i += n
        return ids

    # -- vocabulary --------------------------------------------------------------------------------
    @property
    def vocab(self) -> dict[str, int]:
        return {to_chars(b): i for b, i in self.tokens.items()}

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def token_to_id(self, token: str) -> int | None:
        b = from_chars(token)
        return None if b is None else self.tokens.get(b)

    def id_to_token(self, i: int) -> str | None:
        b = self._by_id.get(i)
        return None if b is None else to_chars(b)

    def token_bytes(self, i: int) -> bytes | None:
        return self._by_id.get(i)

    def tokens_of(self, ids) -> list[str]:
        return tokens_of(self.id_to_token, ids)

    def default_decoder(self):
        from ..decoders import ByteLevel

        return ByteLevel()

    def to_dict(self) -> dict:
        return {"vocab": [[i, base64.b64encode(b).decode("ascii")] for i, b in sorted(self._by_id.items())]}

    @classmethod
    def from_dict(cls, d: dict) -> "LongestMatch":
        return cls({base64.b64decode(b, validate=True): int(i) for i, b in d["vocab"]})

    def __repr__(self) -> str:
        return f"LongestMatch(vocab_size={len(self.tokens)})"
