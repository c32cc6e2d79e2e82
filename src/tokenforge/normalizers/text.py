"""Normalizers that edit text: Strip, Replace, Prepend, and tokenforge's CollapseWhitespace."""

from __future__ import annotations

import re

from .. import _hf_unicode, regex_budget
from ..stage import char_class
from .base import Normalizer

_SPACE_CLASS = char_class(_hf_unicode.SPACE)  # no astral characters
_SPACE_RUN_RE = re.compile(_SPACE_CLASS + "+")
_LEFT_RE = re.compile(r"\A" + _SPACE_CLASS + "+")
_RIGHT_RE = re.compile(_SPACE_CLASS + r"+\Z")


class Strip(Normalizer):
    """Removes whitespace at the left and/or right end."""

    kind = "Strip"

    def __init__(self, left: bool = True, right: bool = True):
        self.left, self.right = bool(left), bool(right)

    def normalize(self, text: str) -> str:
        if self.left:
            text = _LEFT_RE.sub("", text)
        if self.right:
            text = _RIGHT_RE.sub("", text)
        return text

    def to_dict(self) -> dict:
        return {"type": self.kind, "strip_left": self.left, "strip_right": self.right}


class CollapseWhitespace(Normalizer):
    """Every run of whitespace (tabs, newlines, no-break spaces... ) becomes one space.

    The tutorials' first clean-up step (`re.sub(r"\\s+", " ", line)`); not a Hugging Face component.
    It does not strip the ends: follow it with Strip() for that.
    """

    kind = "CollapseWhitespace"

    def normalize(self, text: str) -> str:
        return _SPACE_RUN_RE.sub(" ", text)


class Replace(Normalizer):
    """Replaces every match of `pattern` with `content` (a literal string, not a template).

    `pattern` is a regex in Python's `re` syntax (use re.escape for a literal), or, as read from a
    tokenizer.json, `literal=True` for HF's {"String": ...} pattern.
    """

    kind = "Replace"

    def __init__(self, pattern: str, content: str, *, literal: bool = False):
        if not isinstance(pattern, str) or not isinstance(content, str):
            raise TypeError("Replace(pattern, content) takes two str")
        if pattern == "":
            raise ValueError("Replace: the pattern is empty")
        self.pattern, self.content, self.literal = pattern, content, bool(literal)
        if self.literal:
            self._re = None
        else:
            import regex

            try:
                self._re = regex.compile(pattern)
            except regex.error as e:
                raise ValueError(f"Replace: the pattern {pattern!r} does not compile: {e}") from None

    def normalize(self, text: str) -> str:
        if self._re is None:
            return text.replace(self.pattern, self.content)
        try:  # in bounded time: the pattern may come from an untrusted file
            return self._re.sub(lambda m: self.content, text, timeout=regex_budget.budget(len(text)))
        except TimeoutError:
            raise regex_budget.too_slow(self.pattern) from None

    def to_dict(self) -> dict:
        return {"type": self.kind, "pattern": {"String" if self.literal else "Regex": self.pattern}, "content": self.content}


class Prepend(Normalizer):
    """Puts `prepend` before any non-empty text (HF's Prepend, used by Llama-style files with "▁")."""

    kind = "Prepend"

    def __init__(self, prepend: str):
        if not isinstance(prepend, str):
            raise TypeError("Prepend takes a str")
        self.prepend = prepend

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def to_dict(self) -> dict:
        return {"type": self.kind, "prepend": self.prepend}
