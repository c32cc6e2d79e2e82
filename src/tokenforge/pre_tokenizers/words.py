"""Pre-tokenizers by character class: Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation,
Digits, CharDelimiterSplit (Hugging Face's, with its character classes: _hf_unicode.py).

    >>> Whitespace().split("Hello, world!")
    ['Hello', ',', 'world', '!']
    >>> BertPreTokenizer().split("don't stop")
    ['don', "'", 't', 'stop']

The first four also run natively (cpp/pre_split.h; `native` is their number there) when the model
can take text directly; the regexes here are the readable definition and the oracle.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from .. import _core, _hf_unicode
from ..stage import char_class, replace_surrogates
from .base import BEHAVIOR_NAMES, PreTokenizer, apply_behavior

_core.set_word_classes(list(_hf_unicode.WORD), list(_hf_unicode.SPACE), list(_hf_unicode.PUNCT))


# The regexes are compiled on first use (their character classes are long: compiling them all made
# `import tokenforge` 13 ms slower).
@functools.cache
def _compiled(kind: str) -> re.Pattern:
    word, space, punct = _hf_unicode.WORD, _hf_unicode.SPACE, _hf_unicode.PUNCT
    return re.compile({
        "Whitespace": f"{char_class(word)}+|{char_class(word + space, negate=True)}+",
        "WhitespaceSplit": f"{char_class(space, negate=True)}+",
        "BertPreTokenizer": f"{char_class(punct)}|{char_class(punct + space, negate=True)}+",
        "Punctuation": char_class(punct),
    }[kind])


class _ByRegex(PreTokenizer):
    """Pieces are the matches of `_re` (whatever is between them is dropped)."""

    @property
    def _re(self) -> re.Pattern:
        return _compiled(self.kind)

    def split_one(self, text: str, at_start: bool):
        return [(m.group(), m.start(), m.end()) for m in self._re.finditer(text)]

    def split(self, text: str) -> list[str]:
        if self.native is not None:
            try:
                return _core.split_words(text, self.native)
            except UnicodeEncodeError:  # lone surrogates: as U+FFFD, like everywhere in tokenforge
                return _core.split_words(replace_surrogates(text), self.native)
        return self._re.findall(text)

    def split_reference(self, text: str) -> list[str]:
        return self._re.findall(text)


class Whitespace(_ByRegex):
    """Runs of word characters, and runs of other non-space characters (`\\w+|[^\\w\\s]+`)."""

    kind = "Whitespace"
    native = 0


class WhitespaceSplit(_ByRegex):
    """Runs of non-whitespace."""

    kind = "WhitespaceSplit"
    native = 1


class BertPreTokenizer(_ByRegex):
    """Whitespace removed, each punctuation character alone."""

    kind = "BertPreTokenizer"
    native = 2


class Punctuation(PreTokenizer):
    """Each punctuation character is a delimiter; `behavior` (default "isolated") decides."""

    kind = "Punctuation"

    def __init__(self, behavior: str = "isolated"):
        from .base import behavior_of

        self.behavior = behavior_of(behavior, "Punctuation.behavior")
        self.native = 3 if self.behavior == "isolated" else None

    def split_one(self, text: str, at_start: bool):
        return apply_behavior(text, [m.span() for m in _compiled("Punctuation").finditer(text)], self.behavior)

    def split(self, text: str) -> list[str]:
        if self.native is not None:
            try:
                return _core.split_words(text, self.native)
            except UnicodeEncodeError:
                return _core.split_words(replace_surrogates(text), self.native)
        return super().split(text)

    def split_reference(self, text: str) -> list[str]:
        return PreTokenizer.split(self, text)

    def to_dict(self) -> dict:
        return {"type": self.kind, "behavior": BEHAVIOR_NAMES[self.behavior]}


def _is_numeric(c: str) -> bool:  # Rust's char::is_numeric: general categories Nd, Nl, No
    return unicodedata.category(c) in ("Nd", "Nl", "No")


class Digits(PreTokenizer):
    """Digits apart from the rest: each digit alone (individual_digits) or runs of digits."""

    kind = "Digits"

    def __init__(self, individual_digits: bool = False):
        self.individual_digits = bool(individual_digits)

    def split_one(self, text: str, at_start: bool):
        spans = [(i, i + 1) for i, c in enumerate(text) if _is_numeric(c)]
        return apply_behavior(text, spans, "isolated" if self.individual_digits else "contiguous")

    def to_dict(self) -> dict:
        return {"type": self.kind, "individual_digits": self.individual_digits}


class CharDelimiterSplit(PreTokenizer):
    """Splits on one character, which is removed."""

    kind = "CharDelimiterSplit"

    def __init__(self, delimiter: str):
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise ValueError(f"CharDelimiterSplit takes one character, got {delimiter!r}")
        self.delimiter = delimiter

    def split_one(self, text: str, at_start: bool):
        d = self.delimiter
        return apply_behavior(text, [(i, i + 1) for i, c in enumerate(text) if c == d], "removed")

    def to_dict(self) -> dict:
        return {"type": self.kind, "delimiter": self.delimiter}


class NoPreTokenizer(PreTokenizer):
    """The whole text is one piece (empty text: no piece)."""

    kind = "None"

    def split_one(self, text: str, at_start: bool):
        return [(text, 0, len(text))] if text else []

    def split(self, text: str) -> list[str]:
        return [text] if text else []

    split_reference = split

    def to_dict(self) -> dict:
        return {"type": "None"}
