"""Named split patterns, and which of them the native scanners implement.

A split pattern cuts text into *pieces* before BPE; merges never cross a piece boundary. The three
named patterns come from OpenAI's tiktoken (`tiktoken_ext/openai_public.py`); the native core has a
hand-written scanner for each (cpp/pretokenize.cc), exact to the regex semantics. Any other regex,
in the syntax of the `regex` module, runs through `regex` instead: correct, but slower.
"""

from __future__ import annotations

# GPT-2, r50k_base and p50k_base. The original GPT-2 release wrote it as
# 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+  (equivalent).
GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
GPT2_ORIGINAL = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# cl100k_base (GPT-4, GPT-3.5): case-insensitive contractions, digits in groups of up to three.
CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# o200k_base (GPT-4o): words split at case changes, contractions attached to the word.
O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

NAMED = {"gpt2": GPT2, "r50k": GPT2, "p50k": GPT2, "cl100k": CL100K, "gpt4": CL100K, "o200k": O200K}

# Pattern string -> the native scanner's number (cpp/pretokenize.h SplitPattern).
NATIVE = {GPT2: 0, GPT2_ORIGINAL: 0, CL100K: 1, O200K: 2}

# The name each native scanner is saved under.
CANONICAL_NAME = {0: "gpt2", 1: "cl100k", 2: "o200k"}


# Encoding names (tokenforge.get_encoding's) that stand for their split pattern.
ENCODING_PATTERNS = {"gpt2": "gpt2", "r50k_base": "r50k", "p50k_base": "p50k", "p50k_edit": "p50k",
                     "cl100k_base": "cl100k", "o200k_base": "o200k", "o200k_harmony": "o200k"}

_NAME = None


def lookup(pattern: str) -> str | None:
    """The regex of a pattern name or encoding name ("cl100k", "cl100k_base"), or None."""
    if pattern in NAMED:
        return NAMED[pattern]
    name = ENCODING_PATTERNS.get(pattern)
    return NAMED.get(name) if name is not None else None


def looks_like_name(pattern: str) -> bool:
    """True for a string that reads as a name, not a regex ("cl100k_bse", "llama-3")."""
    global _NAME
    if _NAME is None:
        import re

        _NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")
    return bool(_NAME.fullmatch(pattern)) and any(c.isdigit() or c in "_-." for c in pattern)


def resolve(pattern: str) -> tuple[str, int]:
    """Returns (regex string, native scanner number or -1) for a pattern name, an encoding name
    ("cl100k_base" means its pattern) or a regex. A string that reads as a name but is none
    ("cl100k_bas") is a ValueError listing the names, never taken as a regex; so is a regex that
    does not compile."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a name or a regex), got {type(pattern).__name__}")
    if pattern == "":
        raise ValueError("the split pattern is empty")
    pat_str = lookup(pattern)
    if pat_str is None:
        if looks_like_name(pattern):
            raise ValueError(f"unknown pattern name {pattern!r}; known names: "
                             f"{', '.join(sorted({*NAMED, *ENCODING_PATTERNS}))} (or pass a regex)")
        import regex

        try:
            regex.compile(pattern)
        except regex.error as e:
            raise ValueError(f"the split pattern {pattern[:80]!r} does not compile ({e}), and is no pattern "
                             f"name either (known names: {', '.join(sorted(NAMED))})") from None
        pat_str = pattern
    return pat_str, NATIVE.get(pat_str, -1)
