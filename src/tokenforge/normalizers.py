"""Normalizers: the first stage of the pipeline, text -> text, composable.

    >>> from tokenforge import normalizers as N
    >>> N.Sequence([N.NFKC(), N.Lowercase(), N.CollapseWhitespace(), N.Strip()])("  Héllo\\t\\tWORLD ")
    'héllo world'

Each stage is a small object: call it on a str, describe it with to_dict(), rebuild it with
normalizers.from_dict(). The stages that Hugging Face `tokenizers` also has give the same strings as
HF (its Unicode classes, not Python's: see _hf_unicode.py), with two documented exceptions: Unicode
the NFC/NFD/NFKC/NFKD stages and Lowercase use Python's `unicodedata` tables, so characters whose
decomposition or case mapping is newer in one set of tables than the other differ (with Python
3.11: U+11938 in NFD, ~70 rare characters in NFKC/NFKD, ~50 code points unassigned in Python in
Lowercase). BertNormalizer has no such exception.

Normalization is not reversible: after Lowercase, StripAccents, NFK* or CollapseWhitespace,
decode(encode(text)) gives the normalized text, not the original.

What this module does not do: track offsets back to the original text (HF's alignments).
"""

from __future__ import annotations

import re
import unicodedata

from . import _hf_unicode


def char_class(ranges, *, negate: bool = False) -> str:
    """A regex character class (for `re`) from inclusive code point ranges."""
    parts = []
    for a, b in ranges:
        parts.append(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}")
    return "[" + ("^" if negate else "") + "".join(parts) + "]"


_ASTRAL_RE = re.compile("[\U00010000-\U0010FFFF]")


class _ClassSub:
    """re.sub over a character class, fast: `re` matches a class of BMP characters with a bitmap
    but walks a list for one with astral ranges (50x slower), so the astral part runs only on text
    that has astral characters."""

    def __init__(self, ranges):
        bmp = [(a, min(b, 0xFFFF)) for a, b in ranges if a <= 0xFFFF]
        astral = [(max(a, 0x10000), b) for a, b in ranges if b > 0xFFFF]
        self.bmp = re.compile(char_class(bmp)) if bmp else None
        self.astral = re.compile(char_class(astral)) if astral else None

    def sub(self, repl: str, text: str) -> str:
        if self.bmp is not None:
            text = self.bmp.sub(repl, text)
        if self.astral is not None and _ASTRAL_RE.search(text):
            text = self.astral.sub(repl, text)
        return text


_CONTROL_RE = _ClassSub(_hf_unicode.CONTROL)
_SPACE_CLASS = char_class(_hf_unicode.SPACE)  # no astral characters
_SPACE_RUN_RE = re.compile(_SPACE_CLASS + "+")
_SPACE_RE = re.compile(_SPACE_CLASS)
_MARK_RE = _ClassSub(_hf_unicode.MARK)
# BertNormalizer strips a different set than StripAccents (HF: is_mark_nonspacing vs is_combining_mark).
_BERT_MARK_RE = _ClassSub(_hf_unicode.BERT_MARK)
# BERT's "Chinese characters": the CJK Unified Ideographs blocks (HF's is_chinese_char).
CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip
_CJK_RE = _ClassSub(CJK_RANGES)


# Characters that Python's Unicode tables decompose but HF's (older) normalization tables do not.
_HF_NOT_DECOMPOSED = re.compile("[\U00011938]")


def _nfd_as_hf(text: str) -> str:
    """NFD, leaving alone the characters HF's tables do not decompose (BertNormalizer parity)."""
    if not _HF_NOT_DECOMPOSED.search(text):
        return unicodedata.normalize("NFD", text)
    out, start = [], 0
    for m in _HF_NOT_DECOMPOSED.finditer(text):
        out += [unicodedata.normalize("NFD", text[start : m.start()]), m.group()]
        start = m.end()
    out.append(unicodedata.normalize("NFD", text[start:]))
    return "".join(out)


class Stage:
    """What every pipeline stage has: a `kind`, a JSON description (to_dict; subclasses with options
    extend it), equality by that description, and a repr made from it. (Also the base of
    pre_tokenizers.PreTokenizer.)"""

    kind = ""

    def to_dict(self) -> dict:
        return {"type": self.kind}

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        args = {k: v for k, v in self.to_dict().items() if k != "type"}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


class Normalizer(Stage):
    """Base of the normalizers: a callable str -> str with a JSON description."""

    def __call__(self, text: str) -> str:
        return self.normalize(text)

    def normalize(self, text: str) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError



class _Unicode(Normalizer):
    form = ""

    def normalize(self, text: str) -> str:
        return unicodedata.normalize(self.form, text)


class NFC(_Unicode):
    kind = form = "NFC"


class NFD(_Unicode):
    kind = form = "NFD"


class NFKC(_Unicode):
    kind = form = "NFKC"


class NFKD(_Unicode):
    kind = form = "NFKD"


class Lowercase(Normalizer):
    """Lowercases each character on its own (Unicode full case mapping, as HF does).

    Unlike str.lower(), a final capital sigma becomes 'σ', not 'ς': HF maps character by character.
    """

    kind = "Lowercase"

    def normalize(self, text: str) -> str:
        return text.replace("Σ", "σ").lower()


class StripAccents(Normalizer):
    """Removes combining marks. Apply NFD (or NFKD) first, as HF requires, to reach composed accents;
    StripAccents(decompose=True) does both in one stage."""

    kind = "StripAccents"

    def __init__(self, decompose: bool = False):
        self.decompose = bool(decompose)

    def normalize(self, text: str) -> str:
        if self.decompose:
            text = unicodedata.normalize("NFD", text)
        return _MARK_RE.sub("", text)

    def to_dict(self) -> dict:
        return {"type": self.kind, "decompose": self.decompose}


class Strip(Normalizer):
    """Removes whitespace at the left and/or right end."""

    kind = "Strip"

    def __init__(self, left: bool = True, right: bool = True):
        self.left, self.right = bool(left), bool(right)

    def normalize(self, text: str) -> str:
        if self.left:
            text = re.sub(r"\A" + _SPACE_CLASS + "+", "", text)
        if self.right:
            text = re.sub(_SPACE_CLASS + r"+\Z", "", text)
        return text

    def to_dict(self) -> dict:
        return {"type": self.kind, "left": self.left, "right": self.right}


class CollapseWhitespace(Normalizer):
    """Every run of whitespace (tabs, newlines, no-break spaces... ) becomes one space.

    The tutorials' first clean-up step (`re.sub(r"\\s+", " ", line)`). It does not strip the ends:
    follow it with Strip() for that.
    """

    kind = "CollapseWhitespace"

    def normalize(self, text: str) -> str:
        return _SPACE_RUN_RE.sub(" ", text)


class Replace(Normalizer):
    """Replaces every match of `pattern` (a regex in `re` syntax; use re.escape for a literal) with
    `content` (a literal string, not a template)."""

    kind = "Replace"

    def __init__(self, pattern: str, content: str):
        if not isinstance(pattern, str) or not isinstance(content, str):
            raise TypeError("Replace(pattern, content) takes two str")
        if pattern == "":
            raise ValueError("Replace: the pattern is empty")
        self.pattern, self.content = pattern, content
        self._re = re.compile(pattern)

    def normalize(self, text: str) -> str:
        return self._re.sub(lambda m: self.content, text)

    def to_dict(self) -> dict:
        return {"type": self.kind, "pattern": self.pattern, "content": self.content}


class BertNormalizer(Normalizer):
    """BERT's normalizer, identical to HF's BertNormalizer: removes control characters and maps
    whitespace to ' ' (clean_text), puts spaces around CJK ideographs, strips accents (default: when
    lowercasing) and lowercases, in that order."""

    kind = "BertNormalizer"

    def __init__(self, clean_text: bool = True, handle_chinese_chars: bool = True, strip_accents: bool | None = None, lowercase: bool = True):
        self.clean_text = bool(clean_text)
        self.handle_chinese_chars = bool(handle_chinese_chars)
        self.strip_accents = None if strip_accents is None else bool(strip_accents)
        self.lowercase = bool(lowercase)

    def normalize(self, text: str) -> str:
        ascii = text.isascii()
        if self.clean_text:
            text = _CONTROL_RE.sub("", text)
            if ascii:
                text = text.replace("\t", " ").replace("\n", " ").replace("\r", " ")
            else:
                text = _SPACE_RE.sub(" ", text)
        if self.handle_chinese_chars and not ascii:
            text = _CJK_RE.sub(r" \g<0> ", text)
        if (self.lowercase if self.strip_accents is None else self.strip_accents) and not ascii:
            text = _BERT_MARK_RE.sub("", _nfd_as_hf(text))
        if self.lowercase:
            text = text.replace("Σ", "σ").lower()
        return text

    def to_dict(self) -> dict:
        return {
            "type": self.kind,
            "clean_text": self.clean_text,
            "handle_chinese_chars": self.handle_chinese_chars,
            "strip_accents": self.strip_accents,
            "lowercase": self.lowercase,
        }


class Sequence(Normalizer):
    """Applies normalizers in order."""

    kind = "Sequence"

    def __init__(self, normalizers):
        self.normalizers = [resolve(n) for n in normalizers]

    def normalize(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize(text)
        return text

    def to_dict(self) -> dict:
        return {"type": self.kind, "normalizers": [n.to_dict() for n in self.normalizers]}


_KINDS = {cls.kind: cls for cls in (NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, CollapseWhitespace, Replace, BertNormalizer, Sequence)}


def from_dict(d: dict | None) -> Normalizer | None:
    """Rebuilds a normalizer from its to_dict() description (None stays None)."""
    if d is None:
        return None
    if not isinstance(d, dict) or d.get("type") not in _KINDS:
        raise ValueError(f"unknown normalizer {d!r:.80}")
    args = {k: v for k, v in d.items() if k != "type"}
    if d["type"] == "Sequence":
        return Sequence([from_dict(x) for x in args.get("normalizers", [])])
    return _KINDS[d["type"]](**args)


def resolve(n) -> Normalizer | None:
    """A normalizer from an instance, a list of them (a Sequence), or None."""
    if n is None or isinstance(n, Normalizer):
        return n
    if isinstance(n, (list, tuple)):
        return Sequence(n)
    raise TypeError(f"expected a normalizer, got {type(n).__name__}")
