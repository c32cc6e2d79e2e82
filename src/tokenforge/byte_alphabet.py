"""GPT-2's byte-to-character alphabet: each of the 256 bytes as a printable character.

Byte-level BPE vocabularies in JSON (tokenizer.json, vocab.json, encoder.json) spell token bytes
with it ("Ġthe" is b" the"); Hugging Face's ByteLevel pre-tokenizer maps the text's UTF-8 bytes to
it before the model, and the ByteLevel decoder maps back.
"""

from __future__ import annotations


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table: printable Latin-1 bytes stand for themselves, the others are shifted to 256+."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


BYTE_TO_CHAR: dict[int, str] = bytes_to_unicode()
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in BYTE_TO_CHAR.items()}
# str.translate tables: bytes (as Latin-1 characters) <-> GPT-2 characters.
_TO_CHARS = {b: c for b, c in BYTE_TO_CHAR.items()}
_TO_LATIN1 = {ord(c): b for c, b in CHAR_TO_BYTE.items()}
# Latin-1 characters outside the alphabet (controls, space, soft hyphen) must not pass as bytes.
_TO_LATIN1.update({x: 0x100 for x in range(256) if chr(x) not in CHAR_TO_BYTE})


def to_chars(b: bytes) -> str:
    """b" the" -> "Ġthe"."""
    return b.decode("latin-1").translate(_TO_CHARS)


def text_to_chars(text: str) -> str:
    """The UTF-8 bytes of text as GPT-2 characters."""
    return text.encode("utf-8").decode("latin-1").translate(_TO_CHARS)


def from_chars(s: str) -> bytes | None:
    """"Ġthe" -> b" the"; None if s has a character outside the alphabet."""
    t = s.translate(_TO_LATIN1)
    try:
        return t.encode("latin-1")
    except UnicodeEncodeError:
        return None


# The bytes no UTF-8 text holds (C0, C1: overlong two-byte forms; F5-FF: past U+10FFFF). Some
# byte-level vocabularies have no token for them (MPT's, Falcon's, StarCoder's).
NOT_IN_UTF8 = frozenset([0xC0, 0xC1, *range(0xF5, 0x100)])


def missing_bytes(tokens) -> list[int]:
    """The byte values that are not a one-byte token in `tokens` (a dict or set of token bytes)."""
    return [b for b in range(256) if bytes((b,)) not in tokens]
