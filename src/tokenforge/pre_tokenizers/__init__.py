"""Pre-tokenizers: cut normalized text into *pieces*; the model never merges across them.

| module        | pre-tokenizers                                                           |
| ------------- | ------------------------------------------------------------------------ |
| base.py       | PreTokenizer (the base), Hugging Face's split behaviors                  |
| words.py      | Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit, NoPreTokenizer |
| split.py      | Split (pattern, behavior, invert), Regex (tiktoken's: the matches only)  |
| byte_level.py | ByteLevel (GPT-2's bytes-as-characters, with or without its regex)       |
| metaspace.py  | Metaspace (sentencepiece's "▁", every prepend_scheme, split or not)       |
| matcher.py    | compile_split: the one place a split pattern is compiled                 |

    >>> from tokenforge import pre_tokenizers as P
    >>> P.Whitespace().split("Hello, world!")
    ['Hello', ',', 'world', '!']
    >>> P.Sequence([P.Digits(individual_digits=True), P.WhitespaceSplit()]).split("in 2024")
    ['in', '2', '0', '2', '4']

Whitespace is dropped by Whitespace, WhitespaceSplit and BertPreTokenizer, so decoding rebuilds
spaces from the model's markers or the decoder's rule: the round trip is exact only for text whose
words are separated by single spaces. Not handled: UnicodeScripts (a ValueError naming it).
"""

from __future__ import annotations

from ..stage import REQUIRED, StageError, pattern_of, read_fields
from .base import PreTokenizer, behavior_of
from .byte_level import ByteLevel
from .metaspace import SCHEMES, Metaspace
from .split import Regex, Split
from .words import BertPreTokenizer, CharDelimiterSplit, Digits, NoPreTokenizer, Punctuation, Whitespace, WhitespaceSplit

__all__ = ["BertPreTokenizer", "ByteLevel", "CharDelimiterSplit", "Digits", "Metaspace", "NoPreTokenizer", "PreTokenizer",
           "Punctuation", "Regex", "Sequence", "Split", "Whitespace", "WhitespaceSplit", "from_dict", "resolve"]


class Sequence(PreTokenizer):
    """Applies pre-tokenizers in order, each to every piece of the one before."""

    kind = "Sequence"

    def __init__(self, pretokenizers):
        self.pretokenizers = [resolve(p) for p in pretokenizers]
        # Each ByteLevel maps every byte of its input to a character, two bytes of UTF-8 for most
        # of them: chained, they double the text's length each time (a hostile tokenizer.json
        # with 50 of them never finished encoding a short sentence). One is what any real file has.
        if _byte_levels(self) > 1:
            raise StageError(f"a Sequence with {_byte_levels(self)} ByteLevel pre-tokenizers would map the bytes "
                             "again and again (the text doubling each time); tokenforge reads at most one")

    def pieces(self, text: str, at_start: bool = True):
        pieces = [(text, 0, len(text))] if text else []
        for p in self.pretokenizers:
            pieces = p.pieces_of(pieces, at_start)
        return pieces

    def split_one(self, text: str, at_start: bool):
        return self.pieces(text, at_start)

    def to_dict(self) -> dict:
        return {"type": self.kind, "pretokenizers": [p.to_dict() for p in self.pretokenizers]}


def _byte_levels(p: PreTokenizer) -> int:
    """The ByteLevel stages in p, Sequences inside it included."""
    if isinstance(p, Sequence):
        return sum(_byte_levels(q) for q in p.pretokenizers)
    return isinstance(p, ByteLevel)


_SIMPLE = {c.kind: c for c in (Whitespace, WhitespaceSplit, BertPreTokenizer)}


def from_dict(d, where: str = "pre_tokenizer") -> PreTokenizer:
    """Rebuilds a pre-tokenizer from its description (tokenforge's or tokenizer.json's; None is
    NoPreTokenizer); StageError names the JSON path."""
    if d is None:
        return NoPreTokenizer()
    kind = d.get("type") if isinstance(d, dict) else None
    if kind in _SIMPLE:
        read_fields(d, where, {})
        return _SIMPLE[kind]()
    if kind == "None":
        read_fields(d, where, {})
        return NoPreTokenizer()
    if kind == "Punctuation":
        f = read_fields(d, where, {"behavior": ("Isolated", str)})
        return Punctuation(behavior_of(f["behavior"], f"{where}.behavior"))
    if kind == "Digits":
        return Digits(**read_fields(d, where, {"individual_digits": (False, bool)}))
    if kind == "CharDelimiterSplit":
        f = read_fields(d, where, {"delimiter": (REQUIRED, str)})
        if len(f["delimiter"]) != 1:
            raise StageError(f"{where}.delimiter: one character, got {f['delimiter']!r}")
        return CharDelimiterSplit(f["delimiter"])
    if kind == "Split":
        f = read_fields(d, where, {"pattern": (REQUIRED, (dict, str)), "behavior": (REQUIRED, str), "invert": (False, bool)})
        text, is_regex = pattern_of(f["pattern"], f"{where}.pattern")
        try:
            return Split(text, behavior_of(f["behavior"], f"{where}.behavior"), f["invert"], literal=not is_regex)
        except ValueError as e:
            raise StageError(f"{where}.pattern: {e}") from None
    if kind == "Regex":
        f = read_fields(d, where, {"pattern": (REQUIRED, str)})
        try:
            return Regex(f["pattern"])
        except ValueError as e:
            raise StageError(f"{where}.pattern: {e}") from None
    if kind == "ByteLevel":
        return ByteLevel(**read_fields(d, where, {"add_prefix_space": (False, bool), "trim_offsets": (True, bool),
                                                  "use_regex": (True, bool)}))
    if kind == "Metaspace":
        f = read_fields(d, where, {"replacement": ("\u2581", str), "prepend_scheme": (None, (str, type(None))),
                                   "add_prefix_space": (None, (bool, type(None))), "split": (True, bool),
                                   "str_rep": (None, (str, type(None)))})
        scheme = f["prepend_scheme"]
        if scheme is None:  # files of tokenizers < 0.19: add_prefix_space
            scheme = "never" if f["add_prefix_space"] is False else "always"
        if scheme not in SCHEMES:
            raise StageError(f"{where}.prepend_scheme: {scheme!r} is not one of {', '.join(SCHEMES)}")
        if len(f["replacement"]) != 1:
            raise StageError(f"{where}.replacement: one character, got {f['replacement']!r}")
        return Metaspace(f["replacement"], scheme, f["split"])
    if kind == "Sequence":
        f = read_fields(d, where, {"pretokenizers": (REQUIRED, list)})
        return Sequence([from_dict(p, f"{where}.pretokenizers[{i}]") for i, p in enumerate(f["pretokenizers"])])
    raise StageError(f"{where}: pre-tokenizer {kind!r} is not supported (tokenforge has BertPreTokenizer, ByteLevel, "
                     "CharDelimiterSplit, Digits, Metaspace, Punctuation, Sequence, Split, Whitespace, WhitespaceSplit)")


def resolve(p) -> PreTokenizer:
    """A pre-tokenizer from an instance, a name ("whitespace", "whitespace_split", "bert",
    "punctuation", "none"), a split-pattern name ("gpt2", "cl100k", "o200k", ...), a list (a
    Sequence) or None."""
    if p is None:
        return NoPreTokenizer()
    if isinstance(p, PreTokenizer):
        return p
    if isinstance(p, (list, tuple)):
        return Sequence(p)
    if isinstance(p, str):
        names = {"whitespace": Whitespace, "whitespace_split": WhitespaceSplit, "bert": BertPreTokenizer,
                 "punctuation": Punctuation, "none": NoPreTokenizer}
        if p.lower() in names:
            return names[p.lower()]()
        from .. import patterns

        if patterns.lookup(p) is not None:
            return Regex(p)
        raise ValueError(f"unknown pre-tokenizer {p!r}: use one of {sorted(names) + sorted(patterns.NAMED)}, "
                         "or pre_tokenizers.Regex(pattern) / Split(pattern, behavior) for a regex")
    raise TypeError(f"expected a pre-tokenizer, got {type(p).__name__}")
