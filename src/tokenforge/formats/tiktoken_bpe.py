"""tiktoken's rank files (`base64(token) rank` per line: `name.tiktoken`, and Meta's `tokenizer.model`
for Llama 3 and 4), both ways, and `Tokenizer.to_tiktoken()`.

A rank file holds only the ranks. The files the model families publish are recognised by content
(rank_families.py: OpenAI's, Whisper's, Llama 3/4, Qwen) and get their family's pattern, special
tokens and normalizer; for any other file the split pattern and the special tokens must be passed,
`load("x.tiktoken", pattern="cl100k", special_tokens={"<|endoftext|>": 100257})` (`special_tokens={}`
for none; `pattern=` also takes the family names "llama3", "qwen", "whisper", ...). Saving writes the
ranks only.

What tiktoken accepts is read: an empty token (Whisper's multilingual file has a line `= 50256`) holds
its rank but can never be produced by encoding nor is it kept (the native core needs non-empty
tokens): its id decodes to nothing. A token listed twice is an error (tiktoken keeps the last).

The ranks mean tiktoken's rule: any two adjacent parts whose concatenation is a token may merge,
the lowest rank first. A tokenizer with explicit merges (Hugging Face's rule) is written only if its
ranks imply exactly its merges (the merges tiktoken's rule would make are the listed ones, in order:
true of GPT-2, of the tiktoken encodings, and of plainly trained BPE); otherwise the ValueError
names the first merge that differs.
"""

from __future__ import annotations

import base64

from .. import _core
from ..outputs import write_atomic
from ..vocab_cache import dump_tiktoken_bpe
from ._common import build, check_every_byte, fail

FORMAT = "tiktoken"


def _b64(token: bytes) -> bytes:
    """base64 as tiktoken reads it; a lone "=" is the empty token."""
    if token == b"=":
        return b""
    return base64.b64decode(token, validate=True)


def looks_like(first_line: bytes) -> bool:
    parts = first_line.split()
    if len(parts) != 2 or not parts[1].isdigit():
        return False
    try:
        _b64(parts[0])
    except ValueError:
        return False
    return True


def parse(data: bytes, source) -> dict[bytes, int]:
    """The ranks of a file, without an empty token."""
    ranks, _ = parse_counted(data, source)
    return ranks


def parse_counted(data: bytes, source) -> tuple[dict[bytes, int], int]:
    """(the ranks without an empty token, the number of lines with a rank, the empty token's too)."""
    fast = _core.parse_tiktoken(data)  # None unless well formed: then the loop below names the error
    if fast:
        count = len(fast)
        fast.pop(b"", None)  # an empty token, as below
        check_every_byte(fast, source, "ranks")
        return fast, count
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
            b = _b64(parts[0])
        except ValueError:
            fail(source, f"line {lineno}", f"{parts[0][:80].decode('ascii', 'replace')!r} is not valid base64")
        if not parts[1].isdigit() or len(parts[1]) > 10:  # ids are 32-bit: at most 10 digits
            fail(source, f"line {lineno}", f"the rank {parts[1][:20].decode('ascii', 'replace')!r} is not a non-negative "
                                           "integer below 2**32")
        rank = int(parts[1])
        if b in ranks:
            fail(source, f"line {lineno}", f"token {b!r} appears twice (first at rank {ranks[b]})")
        if rank in lines_of:
            fail(source, f"line {lineno}", f"duplicate rank {rank} (also on line {lines_of[rank]})")
        ranks[b] = rank
        lines_of[rank] = lineno
    if not ranks:
        fail(source, None, "no ranks in the file")
    count = len(ranks)
    ranks.pop(b"", None)  # tiktoken accepts an empty token; no piece is ever empty (see above)
    check_every_byte(ranks, source, "ranks")
    return ranks, count


def load(path, data: bytes, **overrides):
    from . import rank_families

    family = rank_families.family_of(data)
    ranks, count = parse_counted(data, path)
    if family is not None:
        kwargs = dict(pattern=rank_families.resolve_pattern(family.pattern), name=family.name,
                      special_tokens=family.specials(count), normalizer=family.normalizer)
    else:
        missing = [k for k in ("pattern", "special_tokens") if k not in overrides]
        if missing:
            names = ", ".join(repr(n) for n in rank_families.known_pattern_names())
            fail(path, None, f"a tiktoken rank file holds only the ranks, and this one is not a known model's; pass "
                             f"{' and '.join(f'{k}=' for k in missing)} (pattern= a regex or one of the known "
                             f"patterns {names}, e.g. pattern='llama3'; special_tokens={{'<|endoftext|>': 100257}}, "
                             "or special_tokens={} for none)")
        kwargs = dict(name=path.name.split(".")[0] if hasattr(path, "name") else "tokenizer")
    kwargs["mergeable_ranks"] = ranks
    if "pattern" in overrides:
        overrides = {**overrides, "pattern": rank_families.resolve_pattern(overrides["pattern"])}
    return build(path, kwargs, overrides)


def ranks_of(tok, state: dict | None = None) -> dict[bytes, int]:
    """The tokenizer's ids as tiktoken ranks; ValueError if tiktoken's rule gives other ids."""
    state = state or tok._state()
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
    """Writes the ranks. A normalizer is refused (the file cannot say it) unless the file written is a
    known model's whose family has this normalizer, pattern and special tokens (then it reads back whole)."""
    from . import rank_families

    state = tok._state()
    normalizer = state["normalizer"]
    if normalizer is not None:
        state = {**state, "normalizer": None}
    data = dump_tiktoken_bpe(ranks_of(tok, state))
    if normalizer is not None:
        family = rank_families.family_of(data)
        if family is None or not rank_families.matches(family, tok, parse_counted(data, path)[1]):
            raise ValueError(f"tiktoken has no normalizer; this tokenizer applies {normalizer}")
    write_atomic(path, data)


def to_encoding(tok):
    """A working `tiktoken.Encoding` with the same ranks, pattern and special tokens."""
    try:
        import tiktoken
    except ImportError:
        raise ImportError("to_tiktoken() needs the tiktoken package: pip install tiktoken") from None
    return tiktoken.Encoding(tok.name, pat_str=tok.pattern, mergeable_ranks=ranks_of(tok), special_tokens=tok.special_tokens)
