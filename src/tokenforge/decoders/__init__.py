"""Decoders: token texts -> text (Hugging Face's components; see simple.py).

    >>> from tokenforge import decoders as D
    >>> D.Sequence([D.Replace("▁", " "), D.ByteFallback(), D.Fuse(), D.Strip(" ", 1, 0)]).decode(["▁H", "i", "<0x21>"])
    'Hi!'
"""

from __future__ import annotations

from ..stage import REQUIRED, StageError, pattern_of, read_fields
from .base import Decoder, Sequence
from .simple import BPEDecoder, ByteFallback, ByteLevel, CTC, Fuse, Metaspace, Replace, Strip, WordPiece, cleanup

__all__ = ["BPEDecoder", "ByteFallback", "ByteLevel", "CTC", "Decoder", "Fuse", "Metaspace", "Replace", "Sequence", "Strip",
           "WordPiece", "cleanup", "from_dict"]


def from_dict(d, where: str = "decoder") -> Decoder | None:
    """Rebuilds a decoder from its tokenizer.json description; StageError names the JSON path."""
    if d is None:
        return None
    kind = d.get("type") if isinstance(d, dict) else None
    if kind == "ByteLevel":
        return ByteLevel(**read_fields(d, where, {"add_prefix_space": (True, bool), "trim_offsets": (True, bool),
                                                  "use_regex": (True, bool)}))
    if kind in ("ByteFallback", "Fuse"):
        read_fields(d, where, {})
        return ByteFallback() if kind == "ByteFallback" else Fuse()
    if kind == "Metaspace":
        f = read_fields(d, where, {"replacement": ("\u2581", str), "prepend_scheme": (None, (str, type(None))),
                                   "add_prefix_space": (None, (bool, type(None))), "split": (True, bool),
                                   "str_rep": (None, (str, type(None)))})
        scheme = f["prepend_scheme"] or ("never" if f["add_prefix_space"] is False else "always")
        if scheme not in ("always", "first", "never"):
            raise StageError(f"{where}.prepend_scheme: {scheme!r} is not one of always, first, never")
        return Metaspace(f["replacement"], scheme, f["split"])
    if kind == "WordPiece":
        return WordPiece(**read_fields(d, where, {"prefix": ("##", str), "cleanup": (True, bool)}))
    if kind == "BPEDecoder":
        return BPEDecoder(**read_fields(d, where, {"suffix": ("</w>", str)}))
    if kind == "Strip":
        f = read_fields(d, where, {"content": (REQUIRED, str), "start": (0, int), "stop": (0, int)})
        if len(f["content"]) != 1:
            raise StageError(f"{where}.content: one character, got {f['content']!r}")
        return Strip(**f)
    if kind == "Replace":
        f = read_fields(d, where, {"pattern": (REQUIRED, dict), "content": (REQUIRED, str)})
        text, is_regex = pattern_of(f["pattern"], f"{where}.pattern")
        return Replace(text, f["content"], literal=not is_regex)
    if kind == "CTC":
        return CTC(**read_fields(d, where, {"pad_token": ("<pad>", str), "word_delimiter_token": ("|", str),
                                            "cleanup": (True, bool)}))
    if kind == "Sequence":
        f = read_fields(d, where, {"decoders": (REQUIRED, list)})
        return Sequence([from_dict(x, f"{where}.decoders[{i}]") for i, x in enumerate(f["decoders"])])
    raise StageError(f"{where}: decoder {kind!r} is not supported (tokenforge has BPEDecoder, ByteFallback, ByteLevel, "
                     "CTC, Fuse, Metaspace, Replace, Sequence, Strip, WordPiece)")
