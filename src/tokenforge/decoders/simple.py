"""Hugging Face's decoders, one rule each: ByteLevel, ByteFallback, Metaspace, WordPiece,
BPEDecoder, Fuse, Strip, Replace, CTC."""

from __future__ import annotations

import itertools

from ..byte_alphabet import CHAR_TO_BYTE
from .base import Decoder


class ByteLevel(Decoder):
    """GPT-2 characters back to bytes, then UTF-8 (invalid bytes as U+FFFD); a token with a character
    outside the alphabet (an added token) contributes its own UTF-8."""

    kind = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space, self.trim_offsets, self.use_regex = bool(add_prefix_space), bool(trim_offsets), bool(use_regex)

    def decode_chain(self, tokens):
        out = bytearray()
        for t in tokens:
            try:
                out += bytes(CHAR_TO_BYTE[c] for c in t)
            except KeyError:
                out += t.encode("utf-8")
        return [out.decode("utf-8", "replace")]

    def to_dict(self) -> dict:
        return {"type": self.kind, "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}


def _byte_of(token: str) -> int | None:
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        try:
            return int(token[3:5], 16)
        except ValueError:
            return None
    return None


class ByteFallback(Decoder):
    """Runs of <0xNN> tokens become their UTF-8 text (U+FFFD per byte if invalid)."""

    kind = "ByteFallback"

    def decode_chain(self, tokens):
        out, pending = [], bytearray()

        def flush():
            if pending:
                try:
                    out.append(pending.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" for _ in pending)
                pending.clear()

        for t in tokens:
            b = _byte_of(t)
            if b is not None:
                pending.append(b)
            else:
                flush()
                out.append(t)
        flush()
        return out


class Metaspace(Decoder):
    """"▁" back to spaces; the first token's "▁" dropped unless prepend_scheme="never"."""

    kind = "Metaspace"

    def __init__(self, replacement: str = "\u2581", prepend_scheme: str = "always", split: bool = True):
        self.replacement, self.prepend_scheme, self.split_pieces = replacement, prepend_scheme, bool(split)

    def decode_chain(self, tokens):
        r = self.replacement
        out = []
        for i, t in enumerate(tokens):
            t = t.replace(r, " ")
            if i == 0 and self.prepend_scheme != "never" and t.startswith(" "):
                t = t[1:]
            out.append(t)
        return out

    def to_dict(self) -> dict:
        return {"type": self.kind, "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split_pieces}


_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def cleanup(s: str) -> str:
    """HF's clean-up of spaces before punctuation and in English contractions."""
    for a, b in _CLEANUP:
        s = s.replace(a, b)
    return s


class WordPiece(Decoder):
    """"##" pieces join the previous token, others get a space before them."""

    kind = "WordPiece"

    def __init__(self, prefix: str = "##", cleanup: bool = True):
        self.prefix, self.cleanup = prefix, bool(cleanup)

    def decode_chain(self, tokens):
        out = []
        for i, t in enumerate(tokens):
            if i:
                t = t.replace(self.prefix, "", 1) if t.startswith(self.prefix) else " " + t
            out.append(cleanup(t) if self.cleanup else t)
        return out

    def to_dict(self) -> dict:
        return {"type": self.kind, "prefix": self.prefix, "cleanup": self.cleanup}


class BPEDecoder(Decoder):
    """The end-of-word suffix becomes a space (none after the last token)."""

    kind = "BPEDecoder"

    def __init__(self, suffix: str = "</w>"):
        self.suffix = suffix

    def decode_chain(self, tokens):
        n = len(tokens)
        return [t.replace(self.suffix, "" if i == n - 1 else " ") for i, t in enumerate(tokens)]

    def to_dict(self) -> dict:
        return {"type": self.kind, "suffix": self.suffix}


class Fuse(Decoder):
    kind = "Fuse"

    def decode_chain(self, tokens):
        return ["".join(tokens)]


class Strip(Decoder):
    """Removes up to `start` leading and `stop` trailing `content` characters from every token."""

    kind = "Strip"

    def __init__(self, content: str = " ", start: int = 0, stop: int = 0):
        self.content, self.start, self.stop = content, int(start), int(stop)

    def decode_chain(self, tokens):
        out = []
        for t in tokens:
            a = 0
            while a < min(self.start, len(t)) and t[a] == self.content:
                a += 1
            b, k = len(t), 0
            while k < self.stop and b > a and t[b - 1] == self.content:
                b -= 1
                k += 1
            out.append(t[a:b])
        return out

    def to_dict(self) -> dict:
        return {"type": self.kind, "content": self.content, "start": self.start, "stop": self.stop}


class Replace(Decoder):
    """Replaces a literal string (or a regex) with `content` in every token."""

    kind = "Replace"

    def __init__(self, pattern: str, content: str, *, literal: bool = True):
        self.pattern, self.content, self.literal = pattern, content, bool(literal)
        if not self.literal:
            import regex

            self._re = regex.compile(pattern)

    def decode_chain(self, tokens):
        if self.literal:
            return [t.replace(self.pattern, self.content) for t in tokens]
        return [self._re.sub(lambda m: self.content, t) for t in tokens]

    def to_dict(self) -> dict:
        return {"type": self.kind, "pattern": {"String" if self.literal else "Regex": self.pattern}, "content": self.content}


class CTC(Decoder):
    """CTC output: repeated tokens collapse, the pad token goes, the word delimiter becomes a space."""

    kind = "CTC"

    def __init__(self, pad_token: str = "<pad>", word_delimiter_token: str = "|", cleanup: bool = True):
        self.pad_token, self.word_delimiter_token, self.cleanup = pad_token, word_delimiter_token, bool(cleanup)

    def decode_chain(self, tokens):
        out = []
        for t, _ in itertools.groupby(tokens):
            t = t.replace(self.pad_token, "")
            if self.cleanup:
                t = cleanup(t).replace(self.word_delimiter_token, " ")
            if t:
                out.append(t)
        return out

    def to_dict(self) -> dict:
        return {"type": self.kind, "pad_token": self.pad_token, "word_delimiter_token": self.word_delimiter_token,
                "cleanup": self.cleanup}
