"""The normalizer stage: text -> text, before anything else looks at the text.

Normalization is not reversible: after Lowercase, StripAccents, NFK* or Replace, decode(encode(text))
gives the normalized text, not the original. What the normalizers do not do: track offsets back to
the original text (HF's alignments); Tokenizer.encode_with_offsets says so where it matters.
"""

from __future__ import annotations

from ..stage import Stage


class Normalizer(Stage):
    """Base of the normalizers: a callable str -> str with a JSON description."""

    def __call__(self, text: str) -> str:
        return self.normalize(text)

    def normalize(self, text: str) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError


class Sequence(Normalizer):
    """Applies normalizers in order."""

    kind = "Sequence"

    def __init__(self, normalizers):
        self.normalizers = list(normalizers)
        for n in self.normalizers:
            if not isinstance(n, Normalizer):
                raise TypeError(f"a Sequence holds normalizers, not {type(n).__name__}")

    def normalize(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize(text)
        return text

    def to_dict(self) -> dict:
        return {"type": self.kind, "normalizers": [n.to_dict() for n in self.normalizers]}
