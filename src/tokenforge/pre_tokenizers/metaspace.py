"""Metaspace (sentencepiece's whitespace as Hugging Face does it): spaces become "▁" (the
replacement), "▁" goes in front of the text per `prepend_scheme`, and with `split` each "▁" starts
a new piece.

prepend_scheme: "always" (every stretch of text not starting with "▁"), "first" (only the stretch
that starts the input, not one after an added token), "never".
"""

from __future__ import annotations

from .base import PreTokenizer, apply_behavior

SCHEMES = ("always", "first", "never")


class Metaspace(PreTokenizer):
    kind = "Metaspace"

    def __init__(self, replacement: str = "\u2581", prepend_scheme: str = "always", split: bool = True):
        if not isinstance(replacement, str) or len(replacement) != 1:
            raise ValueError(f"Metaspace: the replacement must be one character, got {replacement!r}")
        if prepend_scheme not in SCHEMES:
            raise ValueError(f"Metaspace: prepend_scheme must be one of {', '.join(SCHEMES)}, got {prepend_scheme!r}")
        self.replacement, self.prepend_scheme, self.split_pieces = replacement, prepend_scheme, bool(split)

    def split_one(self, text: str, at_start: bool):
        r = self.replacement
        text = text.replace(" ", r)
        shift = 0
        if not text.startswith(r) and (self.prepend_scheme == "always" or (self.prepend_scheme == "first" and at_start)):
            text, shift = r + text, 1
        if not self.split_pieces:
            return [(text, 0, len(text) - shift)] if text else []
        spans = [(i, i + 1) for i, c in enumerate(text) if c == r]
        return [(t, max(s - shift, 0), e - shift) for t, s, e in apply_behavior(text, spans, "merged_with_next")]

    def to_dict(self) -> dict:
        return {"type": self.kind, "replacement": self.replacement, "prepend_scheme": self.prepend_scheme,
                "split": self.split_pieces}
