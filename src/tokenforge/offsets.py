"""Token offsets: for each id of encode(text), the (start, end) characters of text it stands for.

Where the tokens' bytes concatenate back to the text (byte-level BPE with no normalizer or prefix
space changing it, the tiktoken-style tokenizers), offsets follow from the bytes: a token inside a
multi-byte character gets that character's span. Elsewhere tokenforge keeps no alignment through
normalizers and markers, and says so with a ValueError rather than guess.
"""

from __future__ import annotations


def encode_with_offsets(tok, text: str, **kwargs) -> tuple[list[int], list[tuple[int, int]]]:
    kwargs.setdefault("add_special_tokens", False)
    ids = tok.encode(text, **kwargs)
    pieces = tok.decode_tokens_bytes(ids)
    data = text.encode("utf-8", "surrogatepass")
    if b"".join(pieces) != data:
        raise ValueError(f"{tok.name}: offsets need tokens whose bytes make up the text (byte-level BPE without a "
                         "normalizer or added prefix); this tokenizer's stages change the text")
    # character index of every byte position
    char_at = []
    for k, c in enumerate(text):
        char_at.extend([k] * len(c.encode("utf-8", "surrogatepass")))
    char_at.append(len(text))
    offsets, pos = [], 0
    for p in pieces:
        start, end = pos, pos + len(p)
        offsets.append((char_at[start], char_at[end - 1] + 1 if end > start else char_at[start]))
        pos = end
    return ids, offsets
