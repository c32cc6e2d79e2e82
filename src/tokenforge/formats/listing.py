"""A `.vocab` listing for people to read (write-only; load the file it was made from instead).

One line per id, in id order: the id, the token between brackets, and for a merged token the two
parts it was merged from (in merge order; a tiktoken-rule tokenizer gets the merges its ranks
imply). Bytes that are printable UTF-8 are shown as text; control, format and separator
characters other than the space, invalid UTF-8 and the backslash are escaped:

    # tokenforge vocabulary listing: gpt2, 50257 tokens
    198	[\\n]
    262	[ the]	[ t] + [he]
    50256	[<|endoftext|>]	special
"""

from __future__ import annotations

import unicodedata

from ..outputs import write_atomic
from ._common import explicit_merges

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
    state = tok._state()
    merges, _ = explicit_merges(tok)
    parts = {a + b: (a, b) for a, b in reversed(merges)}  # the first merge that makes a token
    lines = [f"{HEADER}: {tok.name}, {len(state['mergeable_ranks']) + len(state['special_tokens'])} tokens"]
    special = {i for i in state["special_tokens"].values()}
    for i, b in tok.vocab.items():
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
