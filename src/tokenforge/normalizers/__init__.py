"""Normalizers: the first stage of the pipeline, text -> text, composable; Hugging Face's names.

    >>> from tokenforge import normalizers as N
    >>> N.Sequence([N.NFKC(), N.Lowercase(), N.CollapseWhitespace(), N.Strip()])("  Héllo\\t\\tWORLD ")
    'héllo world'

| module         | normalizers                                                      |
| -------------- | ---------------------------------------------------------------- |
| base.py        | Normalizer (the base), Sequence                                  |
| unicode.py     | NFC, NFD, NFKC, NFKD, Lowercase, StripAccents                    |
| bert.py        | BertNormalizer                                                   |
| text.py        | Strip, Replace, Prepend, CollapseWhitespace (tokenforge's own)   |
| precompiled.py | Precompiled (sentencepiece's charsmap as HF applies it), ByteLevel |

`to_dict()` gives each one's tokenizer.json description; `from_dict()` reads it back (and reads
Hugging Face's), with errors that name the JSON path.
"""

from __future__ import annotations

import base64
import binascii

from ..stage import REQUIRED, StageError, pattern_of, read_fields
from .base import Normalizer, Sequence
from .bert import BertNormalizer
from .precompiled import ByteLevel, Precompiled
from .text import CollapseWhitespace, Prepend, Replace, Strip
from .unicode import NFC, NFD, NFKC, NFKD, Lowercase, StripAccents

__all__ = ["BertNormalizer", "ByteLevel", "CollapseWhitespace", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "Normalizer",
           "Precompiled", "Prepend", "Replace", "Sequence", "Strip", "StripAccents", "from_dict", "resolve"]

_BOOL = bool
_SIMPLE = {c.kind: c for c in (NFC, NFD, NFKC, NFKD, Lowercase, CollapseWhitespace, ByteLevel)}


def from_dict(d, where: str = "normalizer") -> Normalizer | None:
    """Rebuilds a normalizer from its description (None stays None); StageError names the path."""
    if d is None:
        return None
    kind = d.get("type") if isinstance(d, dict) else None
    if kind in _SIMPLE:
        read_fields(d, where, {})
        return _SIMPLE[kind]()
    if kind == "StripAccents":
        f = read_fields(d, where, {"decompose": (False, bool)})
        return StripAccents(decompose=f["decompose"])
    if kind == "Strip":
        f = read_fields(d, where, {"strip_left": (None, (bool, type(None))), "strip_right": (None, (bool, type(None))),
                                   "left": (True, bool), "right": (True, bool)})
        left = f["left"] if f["strip_left"] is None else f["strip_left"]
        right = f["right"] if f["strip_right"] is None else f["strip_right"]
        return Strip(left=left, right=right)
    if kind == "Replace":
        f = read_fields(d, where, {"pattern": (REQUIRED, (dict, str)), "content": (REQUIRED, str), "literal": (False, bool)})
        text, is_regex = pattern_of(f["pattern"], f"{where}.pattern")
        if text == "":
            raise StageError(f"{where}.pattern: empty")
        try:
            return Replace(text, f["content"], literal=f["literal"] or not is_regex)
        except ValueError as e:
            raise StageError(f"{where}.pattern: {e}") from None
    if kind == "Prepend":
        return Prepend(read_fields(d, where, {"prepend": (REQUIRED, str)})["prepend"])
    if kind == "BertNormalizer":
        f = read_fields(d, where, {"clean_text": (True, bool), "handle_chinese_chars": (True, bool),
                                   "strip_accents": (None, (bool, type(None))), "lowercase": (True, bool)})
        return BertNormalizer(**f)
    if kind == "Precompiled":
        f = read_fields(d, where, {"precompiled_charsmap": (REQUIRED, (str, type(None)))})
        try:
            blob = base64.b64decode(f["precompiled_charsmap"] or "", validate=True)
            return Precompiled(blob)
        except (binascii.Error, ValueError) as e:
            raise StageError(f"{where}.precompiled_charsmap: not a charsmap ({e})") from None
    if kind == "Sequence":
        f = read_fields(d, where, {"normalizers": (REQUIRED, list)})
        return Sequence([from_dict(n, f"{where}.normalizers[{i}]") for i, n in enumerate(f["normalizers"])])
    raise StageError(f"{where}: unknown normalizer {kind!r} (tokenforge has {', '.join(sorted([*_SIMPLE, 'StripAccents', 'Strip', 'Replace', 'Prepend', 'BertNormalizer', 'Precompiled', 'Sequence']))})")


def resolve(n) -> Normalizer | None:
    """A normalizer from an instance, a list of them (a Sequence), a Unicode form name ("NFC",
    "NFD", "NFKC", "NFKD") or None."""
    if n is None or isinstance(n, Normalizer):
        return n
    if isinstance(n, (list, tuple)):
        return Sequence([resolve(x) for x in n])
    if isinstance(n, str):
        forms = {"NFC": NFC, "NFD": NFD, "NFKC": NFKC, "NFKD": NFKD}
        if n in forms:
            return forms[n]()
        raise TypeError(f"expected a normalizer (or a Unicode form: {', '.join(forms)}), got the str {n!r}")
    raise TypeError(f"expected a normalizer, got {type(n).__name__}")
