"""Split (Hugging Face's: a pattern, a behavior, invert) and Regex (tokenforge's: the matches of a
split pattern, as tiktoken keeps them; the text between matches is dropped).

    >>> Split(" ", "merged_with_next").split("a b  c")
    ['a', ' b', ' ', ' c']
    >>> Regex("gpt2").split("Hello world!")
    ['Hello', ' world', '!']

Patterns are compiled by matcher.compile_split: the native engine where it runs the pattern, the
`regex` module otherwise (Python's syntax; a tokenizer.json written for Oniguruma is translated or
refused by formats/huggingface.py). `^` and `$` see each stretch of text between added tokens as
the whole text, as tiktoken and tokenizers do.
"""

from __future__ import annotations

import regex

from .. import patterns
from .base import BEHAVIOR_NAMES, PreTokenizer, apply_behavior, behavior_of
from .matcher import compile_split


def isolated(pattern: str) -> str:
    """A pattern whose matches are `pattern`'s matches and the gaps between them (HF's Isolated)."""
    return f"(?:{pattern})|(?s:(?!(?:{pattern})).)+"


class Split(PreTokenizer):
    kind = "Split"

    def __init__(self, pattern: str, behavior: str = "isolated", invert: bool = False, *, literal: bool = False):
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"Split: the pattern must be a non-empty str, got {pattern!r:.60}")
        self.pattern, self.literal, self.invert = pattern, bool(literal), bool(invert)
        self.behavior = behavior_of(behavior, "Split.behavior")
        self._matcher = compile_split(regex.escape(pattern) if literal else pattern)

    def split_one(self, text: str, at_start: bool):
        return apply_behavior(text, self._matcher.spans(text), self.behavior, self.invert)

    def tiktoken_pattern(self, total: frozenset = frozenset()) -> str | None:
        """A pattern whose matches are exactly this stage's pieces, if there is one: the pattern
        itself when only matches are kept (removed + invert); for isolated, the pattern if it
        matches every character (`total`, checked by the caller), else its isolated() form."""
        source = regex.escape(self.pattern) if self.literal else self.pattern
        if self.behavior == "removed" and self.invert:
            return source
        if self.behavior == "isolated" and not self.invert:
            return source if source in total else isolated(source)
        return None

    def to_dict(self) -> dict:
        return {"type": self.kind, "pattern": {"String" if self.literal else "Regex": self.pattern},
                "behavior": BEHAVIOR_NAMES[self.behavior], "invert": self.invert}


class Regex(PreTokenizer):
    """The pieces of a split pattern: a name from tokenforge.patterns ("gpt2", "cl100k", "o200k",
    "cl100k_base", ...) or a regex. Whitespace is kept inside the pieces; text no match covers is
    dropped (tiktoken's rule; Split(pattern, "removed", invert=True) in Hugging Face's words)."""

    kind = "Regex"

    def __init__(self, pattern: str = "gpt2"):
        self.pattern = pattern
        self.pat_str = patterns.resolve(pattern)
        self._matcher = compile_split(self.pat_str)

    def split_one(self, text: str, at_start: bool):
        return [(text[s:e], s, e) for s, e in self._matcher.spans(text) if e > s]

    def tiktoken_pattern(self, total: frozenset = frozenset()) -> str:
        return self.pat_str

    def to_dict(self) -> dict:
        return {"type": self.kind, "pattern": self.pattern}
