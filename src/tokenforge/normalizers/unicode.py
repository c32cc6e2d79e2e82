"""Unicode normalizers: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents (Hugging Face's names).

NFC/NFD/NFKC/NFKD and Lowercase use Python's `unicodedata` tables, HF uses its own (Rust crates):
characters whose decomposition or case mapping is newer in one set of tables than the other differ
(with Python 3.11: U+11938 in NFD, ~70 rare characters in NFKC/NFKD, ~50 code points unassigned in
Python in Lowercase). The character classes (marks, spaces, controls) are HF's (_hf_unicode.py).
"""

from __future__ import annotations

import re
import unicodedata

from .. import _hf_unicode
from ..stage import char_class
from .base import Normalizer


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


def normalize_lines(form: str, text: str, min_length: int = 4096) -> str:
    """unicodedata.normalize(form, text), normalizing only the lines that are not in that form.

    A line break never composes with what follows it and is its own normal form, so the text may be
    cut after each one. NFKC uses it: on a megabyte of English documentation where some lines hold a
    "…" or a ligature, one call took 20 ms and this 5.5 (multilingual: 33 -> 10). The other forms
    are as fast or faster in one call (NFC 1.3 ms against 3.4; NFD, NFKD 7-9 against 6-13)."""
    if len(text) < min_length or unicodedata.is_normalized(form, text):
        return unicodedata.normalize(form, text)
    lines = text.splitlines(keepends=True)
    is_normalized, normalize = unicodedata.is_normalized, unicodedata.normalize
    return "".join([line if is_normalized(form, line) else normalize(form, line) for line in lines])


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

    def normalize(self, text: str) -> str:
        return normalize_lines("NFKC", text)


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
        return {"type": self.kind, "decompose": True} if self.decompose else {"type": self.kind}




def _form_eq(self, other):  # NFC() == "NFC": the form's name stands for it (Tokenizer(normalizer="NFC"))
    if isinstance(other, str):
        return other == self.kind
    return type(self) is type(other)


for _cls in (NFC, NFD, NFKC, NFKD):
    _cls.__eq__ = _form_eq
    _cls.__hash__ = lambda self: hash(self.kind)
