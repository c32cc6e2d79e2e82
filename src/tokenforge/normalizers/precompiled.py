"""Precompiled (sentencepiece's charsmap, as Hugging Face applies it) and the ByteLevel normalizer.

HF's Precompiled differs from sentencepiece's own normalizer in how it walks the text: per grapheme
cluster (a cluster shorter than 6 bytes is first looked up whole), else per character; each chunk is
replaced by the rule of the first (shortest) trie entry that is a prefix of it. sentencepiece
instead takes the longest rule at each byte position (spm/normalizer.py). Both are implemented;
this module is HF's, for tokenizer.json files.
"""

from __future__ import annotations

import base64

import regex

from ..spm.normalizer import Charsmap
from .base import Normalizer

_GRAPHEME = regex.compile(r"\X")


class Precompiled(Normalizer):
    kind = "Precompiled"

    def __init__(self, precompiled_charsmap: bytes):
        self.precompiled_charsmap = bytes(precompiled_charsmap)
        self._map = Charsmap(self.precompiled_charsmap) if self.precompiled_charsmap else None
        self._cache: dict[str, str | None] = {}

    def _transform(self, chunk: str) -> str | None:
        hit = self._cache.get(chunk, False)
        if hit is not False:
            return hit
        b = chunk.encode("utf-8")
        out = None
        rule = self._map.shortest_prefix(b) if self._map is not None else None
        if rule is not None:
            out = rule.decode("utf-8", "replace")
        if len(self._cache) < 100_000:
            self._cache[chunk] = out
        return out

    def normalize(self, text: str) -> str:
        if self._map is None or not text:
            return text
        out = []
        for g in _GRAPHEME.findall(text):
            if len(g.encode("utf-8")) < 6:
                t = self._transform(g)
                if t is not None:
                    out.append(t)
                    continue
            for c in g:
                t = self._transform(c)
                out.append(c if t is None else t)
        return "".join(out)

    def to_dict(self) -> dict:
        return {"type": self.kind, "precompiled_charsmap": base64.b64encode(self.precompiled_charsmap).decode("ascii")}

    def __repr__(self) -> str:
        return f"Precompiled(<{len(self.precompiled_charsmap)} bytes>)"


class ByteLevel(Normalizer):
    """Every UTF-8 byte of the text becomes GPT-2's printable character for it."""

    kind = "ByteLevel"

    def normalize(self, text: str) -> str:
        from ..byte_alphabet import text_to_chars

        return text_to_chars(text)
