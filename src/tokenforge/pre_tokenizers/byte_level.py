"""ByteLevel (GPT-2's): optionally a space before the text, optionally GPT-2's split regex, then
every piece's UTF-8 bytes spelled as GPT-2's printable characters (byte_alphabet.py), so that a
byte-level BPE model sees 256 symbols and never an unknown character.

    >>> ByteLevel().split("Hello wörld")
    ['Hello', 'Ġw\u00c3\u00b6rld']
"""

from __future__ import annotations

from .. import patterns
from ..byte_alphabet import text_to_chars
from .base import PreTokenizer, apply_behavior
from .matcher import compile_split

GPT2_REGEX = patterns.GPT2_ORIGINAL


class ByteLevel(PreTokenizer):
    kind = "ByteLevel"

    def __init__(self, add_prefix_space: bool = False, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space, self.trim_offsets, self.use_regex = bool(add_prefix_space), bool(trim_offsets), bool(use_regex)
        self._matcher = compile_split(GPT2_REGEX) if self.use_regex else None

    def split_one(self, text: str, at_start: bool):
        shift = 0
        if self.add_prefix_space and not text.startswith(" "):
            text, shift = " " + text, 1
        if self._matcher is not None:
            parts = apply_behavior(text, self._matcher.spans(text), "isolated")
        else:
            parts = [(text, 0, len(text))] if text else []
        return [(text_to_chars(t), max(s - shift, 0), e - shift) for t, s, e in parts]

    def tiktoken_pattern(self, total: frozenset = frozenset()) -> str | None:
        """GPT-2's regex matches every character, so isolated pieces are its matches."""
        return GPT2_REGEX if self.use_regex and not self.add_prefix_space else None

    def to_dict(self) -> dict:
        return {"type": self.kind, "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}
