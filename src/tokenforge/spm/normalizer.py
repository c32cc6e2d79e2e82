"""SentencePiece normalization in pure Python: the precompiled charsmap and the whitespace rules.

A `.model` stores its normalizer (e.g. the default `nmt_nfkc`) as a *precompiled charsmap*:

    uint32 little-endian trie size | darts-clone double-array trie | NUL-terminated replacement strings

At each position the longest byte prefix found in the trie is replaced by its string (the trie value
is the string's offset); otherwise one UTF-8 character is copied. Then, as sentencepiece's
`Normalizer::Normalize` does: leading whitespace is dropped and runs of spaces collapse
(`remove_extra_whitespaces`), `▁` is put in front (`add_dummy_prefix`; behind with
`treat_whitespace_as_suffix`), spaces become `▁` (`escape_whitespaces`), trailing spaces are dropped.
The native core (cpp/unigram.cc) does the same; this module is its oracle and the metaspace
pre-tokenizer of the Hugging Face path.

Not handled here: user-defined symbols, which bypass normalization in sentencepiece; the native
normalizer (cpp/unigram.cc) handles them.
"""

from __future__ import annotations

import struct

SPACE = "\u2581"  # ▁


class Charsmap:
    """The precompiled charsmap of a model: longest-prefix replacement rules over UTF-8 bytes."""

    def __init__(self, blob: bytes):
        if len(blob) < 4:
            raise ValueError("precompiled charsmap is too short")
        (size,) = struct.unpack_from("<I", blob, 0)
        if size % 4 or 4 + size > len(blob):
            raise ValueError("precompiled charsmap: bad trie size")
        self.units = struct.unpack_from(f"<{size // 4}I", blob, 4)
        self.strings = blob[4 + size :]

    def longest_prefix(self, s: bytes, pos: int) -> tuple[int, bytes]:
        """(length of the longest rule matching s[pos:], its replacement), or (0, b"")."""
        units = self.units
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)  # darts-clone: offset of the root
        best_len, best_value = 0, -1
        for i in range(pos, len(s)):
            c = s[i]
            node ^= c
            if node >= len(units):
                break
            unit = units[node]
            if (unit & ((1 << 31) | 0xFF)) != c:  # label
                break
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:  # has a leaf: its value is the replacement's offset
                best_len, best_value = i + 1 - pos, units[node] & 0x7FFFFFFF
        if not best_len:
            return 0, b""
        end = self.strings.index(b"\0", best_value)
        return best_len, self.strings[best_value:end]


    def shortest_prefix(self, s: bytes) -> bytes | None:
        """The replacement of the shortest rule that is a prefix of s, or None (Hugging Face's
        Precompiled takes this one and replaces the whole chunk with it)."""
        units = self.units
        unit = units[0]
        node = (unit >> 10) << ((unit & (1 << 9)) >> 6)
        for i, c in enumerate(s):
            node ^= c
            if node >= len(units):
                return None
            unit = units[node]
            if (unit & ((1 << 31) | 0xFF)) != c:
                return None
            node ^= (unit >> 10) << ((unit & (1 << 9)) >> 6)
            if (unit >> 8) & 1:
                value = units[node] & 0x7FFFFFFF
                return self.strings[value:self.strings.index(b"\0", value)]
        return None


def _utf8_len(b: int) -> int:
    return 1 if b < 0x80 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4


class Normalizer:
    def __init__(
        self,
        charsmap: bytes = b"",
        *,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
    ):
        self.charsmap = Charsmap(charsmap) if charsmap else None
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        self.treat_whitespace_as_suffix = treat_whitespace_as_suffix

    def _rules(self, s: bytes):
        """Yields the replacement of each step of the input, as sentencepiece's NormalizePrefix."""
        pos = 0
        while pos < len(s):
            n, rep = self.charsmap.longest_prefix(s, pos) if self.charsmap else (0, b"")
            if not n:
                n = min(_utf8_len(s[pos]), len(s) - pos)
                rep = s[pos : pos + n]
            yield rep
            pos += n

    def normalize(self, text: str) -> str:
        space = SPACE.encode() if self.escape_whitespaces else b" "
        steps = list(self._rules(text.encode("utf-8")))
        i = 0
        if self.remove_extra_whitespaces:
            while i < len(steps) and steps[i] == b" ":
                i += 1
        if i == len(steps):
            return ""
        out = bytearray()
        if self.add_dummy_prefix and not self.treat_whitespace_as_suffix:
            out += space
        prev_space = self.remove_extra_whitespaces
        for rep in steps[i:]:
            if prev_space:
                rep = rep.lstrip(b" ")
            if rep:
                out += rep.replace(b" ", space) if self.escape_whitespaces else rep
                prev_space = rep.endswith(b" ")
            if not self.remove_extra_whitespaces:
                prev_space = False
        if self.remove_extra_whitespaces:
            while out.endswith(space):
                del out[-len(space) :]
        if self.add_dummy_prefix and self.treat_whitespace_as_suffix:
            out += space
        return out.decode("utf-8")
