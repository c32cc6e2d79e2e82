"""tiktoken's `.tiktoken` rank files (`base64(token) rank` per line), both ways, and
`Tokenizer.to_tiktoken()`.

A `.tiktoken` file holds only the ranks: the split pattern and the special tokens must be passed
when loading, `load("x.tiktoken", pattern="cl100k", special_tokens={"<|endoftext|>": 100257})`
(`special_tokens={}` for none). Saving writes the ranks only.

The ranks mean tiktoken's rule: any two adjacent parts whose concatenation is a token may merge,
the lowest rank first. A tokenizer with explicit merges (Hugging Face's rule) is written only if its
ranks imply exactly its merges (the merges tiktoken's rule would make are the listed ones, in order:
true of GPT-2, of the tiktoken encodings, and of plainly trained BPE); otherwise the ValueError
names the first merge that differs.
"""

from __future__ import annotations

import base64

from ..vocab_cache import dump_tiktoken_bpe, write_atomic
from ._common import build, check_every_byte, fail

FORMAT = "tiktoken"


def looks_like(first_line: bytes) -> bool:
    parts = first_line.split()
    if len(parts) != 2 or not parts[1].isdigit():
        return False
    try:
        base64.b64decode(parts[0], validate=True)
    except ValueError:
        return False
    return True


def parse(data: bytes, source) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    lines_of: dict[int, int] = {}
    for lineno, line in enumerate(data.split(b"\n"), 1):
        line = line.rstrip(b"\r")
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            fail(source, f"line {lineno}", f"expected 'base64-token rank', got {line[:80].decode('utf-8', 'replace')!r}")
        try:
            b = base64.b64decode(parts[0], validate=True)
        except ValueError:
            fail(source, f"line {lineno}", f"{parts[0][:80].decode('ascii', 'replace')!r} is not valid base64")
        if not parts[1].isdigit() or len(parts[1]) > 10:  # ids are 32-bit: at most 10 digits
            fail(source, f"line {lineno}", f"the rank {parts[1][:20].decode('ascii', 'replace')!r} is not a non-negative "
                                           "integer below 2**32")
        rank = int(parts[1])
        if not b:
            fail(source, f"line {lineno}", "empty token")
        if b in ranks:
            fail(source, f"line {lineno}", f"token {b!r} appears twice (first at rank {ranks[b]})")
        if rank in lines_of:
            fail(source, f"line {lineno}", f"duplicate rank {rank} (also on line {lines_of[rank]})")
        ranks[b] = rank
        lines_of[rank] = lineno
    if not ranks:
        fail(source, None, "no ranks in the file")
    check_every_byte(ranks, source, "ranks")
    return ranks


def load(path, data: bytes, **overrides):
    missing = [k for k in ("pattern", "special_tokens") if k not in overrides]
    if missing:
        fail(path, None, f"a .tiktoken file holds only the ranks; pass {' and '.join(f'{k}=' for k in missing)} "
                         "(e.g. pattern='cl100k' or a regex, special_tokens={'<|endoftext|>': 100257}, "
                         "or special_tokens={} for none)")
    ranks = parse(data, path)
    name = path.name.split(".")[0] if hasattr(path, "name") else "tokenizer"
    return build(path, dict(mergeable_ranks=ranks, name=name), overrides)


def ranks_of(tok) -> dict[bytes, int]:
    """The tokenizer's ids as tiktoken ranks; ValueError if tiktoken's rule gives other ids."""
    state = tok._state()
    ranks = state["mergeable_ranks"]
    if state["merges"] is not None:
        from ..reference import recover_merges

        try:
            implied = recover_merges(ranks)
        except ValueError as e:
            raise ValueError(f"tiktoken's rule cannot reproduce this tokenizer: {e}") from None
        listed = state["merges"]
        if implied != listed:
            n = next((n for n, (a, b) in enumerate(zip(implied, listed)) if a != b), min(len(implied), len(listed)))
            got = implied[n] if n < len(implied) else None
            want = listed[n] if n < len(listed) else None
            raise ValueError(
                f"tiktoken's rule cannot reproduce this tokenizer: its ranks imply merge {n} = {got!r}, "
                f"but its merge {n} is {want!r} (ids must follow the merge order, and each token must "
                "be made from the two parts its merge names)")
    if state["merges"] is None and not state["ignore_merges"]:
        raise ValueError("tiktoken's rule keeps a piece that is a token whole; this tokenizer does not")
    if state["normalizer"] is not None:
        raise ValueError(f"tiktoken has no normalizer; this tokenizer applies {state['normalizer']}")
    return ranks


def save(tok, path) -> None:
    write_atomic(path, dump_tiktoken_bpe(ranks_of(tok)))


def to_encoding(tok):
    """A working `tiktoken.Encoding` with the same ranks, pattern and special tokens."""
    try:
        import tiktoken
    except ImportError:
        raise ImportError("to_tiktoken() needs the tiktoken package: pip install tiktoken") from None
    return tiktoken.Encoding(tok.name, pat_str=tok.pattern, mergeable_ranks=ranks_of(tok), special_tokens=tok.special_tokens)
