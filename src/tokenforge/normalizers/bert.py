"""BERT's normalizer (Hugging Face's BertNormalizer), character for character."""

from __future__ import annotations

from .base import Normalizer
from .unicode import _BERT_MARK_RE, _CJK_RE, _CONTROL_RE, _SPACE_RE, _nfd_as_hf


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

