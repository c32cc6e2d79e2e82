"""A `.vocab` listing for people to read (write-only; load the file it was made from instead).

One line per id, in id order: the id, the token between brackets, and for a merged token the two
parts it was merged from (in merge order; a tiktoken-rule tokenizer gets the merges its ranks
imply). Any tokenizer can be listed: other models' tokens are shown as their text. Bytes that are printable UTF-8 are shown as text; control, format and separator
characters other than the space, invalid UTF-8 and the backslash are escaped:

    # tokenforge vocabulary listing: gpt2, 50257 tokens
    198	[\\n]
    262	[ the]	[ t] + [he]
    50256	[<|endoftext|>]	special
"""

from __future__ import annotations

import unicodedata

from ..outputs import write_atomic
from ..reference import bpe_piece

FORMAT = "listing"
HEADER = "# tokenforge vocabulary listing"

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def render(b: bytes) -> str:
    """Token bytes as readable text: b"a\\n\\xff" -> 'a\\\\n\\\\xff'."""
    out = []
    i = 0
    while i < len(b):
        for n in (1, 2, 3, 4):  # the shortest valid UTF-8 character at i, if any
            try:
                c = b[i : i + n].decode("utf-8")
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append(f"\\x{b[i]:02x}")
            i += 1
            continue
        i += n
        if c in _NAMED:
            out.append(_NAMED[c])
        elif unicodedata.category(c)[0] in "CZ" and c != " ":
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        else:
            out.append(c)
    return "".join(out)


def dumps(tok) -> str:
    """The listing of any tokenizer: a byte-level one's tokens as bytes, with the two parts each
    merged token is made from (its merges, or for ranks alone the two lower-ranked tokens BPE
    leaves; a token that is no merge, as some of Llama 3's, has none); another model's tokens as
    text, with the parts of its merges if it has merges."""
    from ..models import ByteBPE

    model = tok.model
    special = {t.id for t in tok._added if t.special}
    if isinstance(model, ByteBPE):
        entries = list(tok.vocab.items())  # id -> bytes, in id order
        if model.merges_given is not None:
            parts = {a + b: (a, b) for a, b in reversed(model.merges_given)}  # the first merge that makes a token
        else:
            parts = {}
            for b, rank in model.ranks.items():
                if len(b) > 1 and len(pair := bpe_piece(model.ranks, b, max_rank=rank)) == 2:
                    parts[b] = tuple(pair)
    elif hasattr(model, "token_bytes"):  # tokens of bytes (RWKV's greedy longest match)
        entries = sorted((i, model.token_bytes(i) or t.encode("utf-8", "surrogatepass")) for t, i in tok.get_vocab().items())
        parts = {}
    else:
        entries = sorted((i, t.encode("utf-8", "surrogatepass")) for t, i in tok.get_vocab().items())
        merges = getattr(model, "merges", None) or ()
        parts = {(a + b).encode("utf-8", "surrogatepass"): (a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))
                 for a, b in reversed(list(merges))}
    lines = [f"{HEADER}: {tok.name}, {len(entries)} tokens"]
    for i, b in entries:
        line = f"{i}\t[{render(b)}]"
        if i in special:
            line += "\tspecial"
        elif b in parts:
            a, c = parts[b]
            line += f"\t[{render(a)}] + [{render(c)}]"
        lines.append(line)
    return "\n".join(lines) + "\n"


def save(tok, path) -> None:
    write_atomic(path, dumps(tok).encode("utf-8"))
