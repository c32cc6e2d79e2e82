"""Fuzz target: decoding arbitrary lists of ids (negative, huge, unknown, special, partial UTF-8).

Checked: only the documented exceptions (UnknownTokenError, which is a ValueError and a KeyError,
for an unknown or out-of-range id; UnicodeDecodeError from errors="strict" and decode_with_offsets
on bytes that are not UTF-8); decode_bytes == the join of decode_tokens_bytes; decode ==
decode_bytes decoded with errors="replace"; decode_batch == decode one by one.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:
    atheris = None

if atheris is not None and __name__ == "__main__":
    with atheris.instrument_imports(include=["tokenforge"]):
        import tokenforge
else:
    import tokenforge

import _common  # noqa: E402

_TOKS = None


def ids_of(data: bytes) -> list[int]:
    """5 bytes per id: a kind byte and 4 value bytes (small ids, near the vocabulary size, huge, negative)."""
    ids = []
    for i in range(0, len(data) - 4, 5):
        kind, value = data[i] % 8, int.from_bytes(data[i + 1:i + 5], "little")
        if kind <= 3:
            ids.append(value % 512)  # bytes, merges, specials of the small tokenizers
        elif kind == 4:
            ids.append(value % 200_000)  # around cl100k's size
        elif kind == 5:
            ids.append(value)  # up to 2^32 - 1
        elif kind == 6:
            ids.append(-(value % 1000) - 1)
        else:
            ids.append(value << (value % 40))  # beyond 64 bits too
    return ids


def TestOneInput(data: bytes) -> None:
    global _TOKS
    if _TOKS is None:
        _TOKS = [*_common.small_tokenizers().values(), _common.cl100k()]
    if not data:
        return
    tok = _TOKS[data[0] % len(_TOKS)]
    ids = ids_of(data[1:])
    try:
        raw = tok.decode_bytes(ids)
    except tokenforge.UnknownTokenError:
        bad = [i for i in ids if not (0 <= i < 2**32 and _known(tok, i))]
        assert bad, f"decode_bytes refused only known ids: {ids}"
        for f in (tok.decode, tok.decode_tokens_bytes, tok.decode_with_offsets):
            try:
                f(ids)
            except tokenforge.UnknownTokenError:
                continue
            raise AssertionError(f"{f.__name__} accepted an unknown id")
        return
    assert raw == b"".join(tok.decode_tokens_bytes(ids))
    text = tok.decode(ids)
    assert text == raw.decode("utf-8", "replace")
    assert tok.decode_batch([ids, ids[:1]]) == [text, tok.decode(ids[:1])]
    try:
        strict = tok.decode(ids, errors="strict")
        assert strict == text
        offsets_text, offsets = tok.decode_with_offsets(ids)
        assert offsets_text == text and len(offsets) == len(ids)
        assert offsets == sorted(offsets) and all(0 <= o <= len(text) for o in offsets)
    except UnicodeDecodeError:
        assert "\ufffd" in text or raw.decode("utf-8", "replace") != raw.decode("utf-8", "ignore")
    if ids:
        assert tok.decode_single_token_bytes(ids[0]) == tok.decode_tokens_bytes(ids[:1])[0]


def _known(tok, i: int) -> bool:
    return i in tok._special_ids or i in _ids_of(tok)


_ID_SETS = {}


def _ids_of(tok):
    key = id(tok)
    if key not in _ID_SETS:
        _ID_SETS[key] = frozenset(tok._mergeable_ranks.values())
    return _ID_SETS[key]


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
