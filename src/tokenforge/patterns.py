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


def resolve(pattern: str) -> tuple[str, int]:
    """Returns (regex string, native scanner number or -1) for a pattern name or regex."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a name or a regex), got {type(pattern).__name__}")
    pat_str = NAMED.get(pattern, pattern)
    if pat_str == "":
        raise ValueError("the split pattern is empty")
    return pat_str, NATIVE.get(pat_str, -1)
