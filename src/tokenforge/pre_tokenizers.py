"""Pre-tokenizers: cut normalized text into *pieces* (words); the model never merges across them.

    >>> from tokenforge import pre_tokenizers as P
    >>> P.Whitespace().split("Hello, world!")
    ['Hello', ',', 'world', '!']
    >>> P.BertPreTokenizer().split("don't stop")
    ['don', "'", 't', 'stop']

| name                | pieces                                                   | same as HF's          |
| ------------------- | -------------------------------------------------------- | --------------------- |
| Whitespace          | `\\w+|[^\\w\\s]+` (word runs, runs of other non-spaces)   | pre_tokenizers.Whitespace |
| WhitespaceSplit     | runs of non-whitespace                                   | WhitespaceSplit       |
| BertPreTokenizer    | whitespace removed, each punctuation character alone     | BertPreTokenizer      |
| Punctuation         | each punctuation character alone, everything else kept   | Punctuation("isolated") |
| Regex(pattern)      | the matches of a split pattern ("gpt2", "cl100k", "o200k" or a regex), kept whole | Split(..., "isolated") without byte mapping |
| None                | the whole text as one piece                              |                       |

Whitespace is dropped by all but Regex and Punctuation, so decoding rebuilds spaces from the model's
markers (character BPE) or joins pieces with spaces (WordPiece, word level): the round trip is exact
only for text whose words are separated by single spaces. The character classes are HF's
(_hf_unicode.py), so pieces equal HF's pieces.
"""

from __future__ import annotations

import re

from . import _core, _hf_unicode, regex_budget
from .normalizers import Stage, char_class

# The native splitter (cpp/pre_split.h) gets HF's classes once; Whitespace, WhitespaceSplit,
# BertPreTokenizer and Punctuation then split in C++ (`native` is their number there). The regexes
# below are the readable definition, and the tests' oracle for the native splitter.
_core.set_word_classes(list(_hf_unicode.WORD), list(_hf_unicode.SPACE), list(_hf_unicode.PUNCT))

_WORD = char_class(_hf_unicode.WORD)
_NOT_WORD_OR_SPACE = char_class(_hf_unicode.WORD + _hf_unicode.SPACE, negate=True)
_NOT_SPACE = char_class(_hf_unicode.SPACE, negate=True)
_PUNCT = char_class(_hf_unicode.PUNCT)
_NOT_PUNCT_OR_SPACE = char_class(_hf_unicode.PUNCT + _hf_unicode.SPACE, negate=True)
_NOT_PUNCT = char_class(_hf_unicode.PUNCT, negate=True)


class PreTokenizer(Stage):
    """Base: split(text) -> list of pieces, to_dict() for the file format."""
    native: int | None = None
    _re: re.Pattern

    def split(self, text: str) -> list[str]:
        if self.native is not None:
            try:
                return _core.split_words(text, self.native)
            except UnicodeEncodeError:  # lone surrogates: as U+FFFD, like everywhere in tokenforge
                return _core.split_words(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), self.native)
        return self._re.findall(text)

    def split_reference(self, text: str) -> list[str]:
        """split through the regex (the definition), not the native splitter."""
        return self._re.findall(text)

    def __call__(self, text: str) -> list[str]:
        return self.split(text)



class Whitespace(PreTokenizer):
    kind = "Whitespace"
    native = 0
    _re = re.compile(f"{_WORD}+|{_NOT_WORD_OR_SPACE}+")


class WhitespaceSplit(PreTokenizer):
    kind = "WhitespaceSplit"
    native = 1
    _re = re.compile(f"{_NOT_SPACE}+")


class BertPreTokenizer(PreTokenizer):
    kind = "BertPreTokenizer"
    native = 2
    _re = re.compile(f"{_PUNCT}|{_NOT_PUNCT_OR_SPACE}+")


class Punctuation(PreTokenizer):
    kind = "Punctuation"
    native = 3
    _re = re.compile(f"{_PUNCT}|{_NOT_PUNCT}+")


class Regex(PreTokenizer):
    """The pieces of a split pattern: a name from tokenforge.patterns ("gpt2", "cl100k", "o200k")
    or a regex in the syntax of the `regex` module. Whitespace is kept inside the pieces."""

    kind = "Regex"

    def __init__(self, pattern: str = "gpt2"):
        import regex

        from . import patterns

        self.pattern = pattern
        self._re = regex.compile(patterns.resolve(pattern))

    def split(self, text: str) -> list[str]:
        # whole matches (findall would give the groups of a pattern with capture groups), in bounded
        # time: the pattern may come from an untrusted file
        return [m.group() for m in regex_budget.finditer(self._re, text)]

    split_reference = split

    def to_dict(self) -> dict:
        return {"type": self.kind, "pattern": self.pattern}


class NoPreTokenizer(PreTokenizer):
    """The whole text is one piece (empty text: no piece)."""

    kind = "None"

    def split(self, text: str) -> list[str]:
        return [text] if text else []

    split_reference = split


_KINDS = {c.kind: c for c in (Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Regex, NoPreTokenizer)}


def from_dict(d: dict | None) -> PreTokenizer:
    if d is None:
        return NoPreTokenizer()
    if not isinstance(d, dict) or d.get("type") not in _KINDS:
        raise ValueError(f"unknown pre-tokenizer {d!r:.80}")
    return _KINDS[d["type"]](**{k: v for k, v in d.items() if k != "type"})


def resolve(p) -> PreTokenizer:
    """A pre-tokenizer from an instance, a name ("whitespace", "whitespace_split", "bert",
    "punctuation", "gpt2"/"cl100k"/"o200k") or None."""
    if p is None:
        return NoPreTokenizer()
    if isinstance(p, PreTokenizer):
        return p
    if isinstance(p, str):
        names = {"whitespace": Whitespace, "whitespace_split": WhitespaceSplit, "bert": BertPreTokenizer, "punctuation": Punctuation, "none": NoPreTokenizer}
        if p.lower() in names:
            return names[p.lower()]()
        from .patterns import NAMED

        if p in NAMED:
            return Regex(p)
        raise ValueError(f"unknown pre-tokenizer {p!r}: use one of {sorted(names) + sorted(NAMED)}, "
                         "or pre_tokenizers.Regex(pattern) for a regex")
    raise TypeError(f"expected a pre-tokenizer, got {type(p).__name__}")
