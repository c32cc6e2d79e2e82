"""Named split patterns of real tokenizers, with where each comes from.

A split pattern cuts text into *pieces* before BPE; merges never cross a piece boundary. Patterns
are regexes in the syntax of the `regex` module. The native core compiles any pattern of its subset
(cpp/split_regex.h, docs/design.md) and runs GPT-2's, cl100k's and o200k's (and any pattern meaning
the same) with hand-written scanners; a pattern outside the subset runs through `regex`: the same
pieces, slower.
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

# Llama 3 (Meta's tiktoken-based tokenizer; the pre-2024 form of cl100k's pattern, without
# possessive quantifiers), also GLM-4 (llama.cpp's CHATGLM4 pre-tokenizer), OLMo 2 and Phi-4, whose
# tokenizer.json files carry this Split regex.
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

# Qwen2, Qwen2.5 and Qwen3 (tokenizer.json Split regex; transformers' tokenization_qwen2.py
# PRETOKENIZE_REGEX): Llama 3's with single digits.
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

# Qwen3.5 (tokenizer.json of the Qwen3.5 family; llama.cpp's QWEN35 pre-tokenizer): marks join the
# letter run and leave the punctuation class.
QWEN3_5 = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# Mistral's tekken (mistral-common; also the Split of Mistral's tokenizer.json files): o200k's case
# split without contractions, single digits.
TEKKEN = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
    r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
    r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# DeepSeek V3 (and R1): three Split pre-tokenizers applied one after the other, each `Isolated`
# (tokenizer.json; llama.cpp's DEEPSEEK3_LLM). They cannot be written as one regex, so this is a
# tuple; each part is a split pattern of its own.
DEEPSEEK_V3 = (
    r"""\p{N}{1,3}""",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
)

# Falcon (llama.cpp's FALCON pre-tokenizer, from its tokenizer.json Sequence of Punctuation,
# ByteLevel and Digits): three splits in sequence, as for DeepSeek V3.
FALCON = (
    r"""[\p{P}\$\+<=>\^~\|`]+""",
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)""",
    r"""[0-9][0-9][0-9]""",
)

# Kimi K2 (Moonshot's tokenization_kimi.py pat_str): o200k with Han split off, written with the
# script property \p{Han} and class intersections (`&&`, which only tiktoken's engine and the
# `regex` module's V1 mode read as such). Outside the native engine's subset: runs through `regex`.
KIMI_K2 = (
    r"""[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"""
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"""
    r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

NAMED = {
    "gpt2": GPT2, "r50k": GPT2, "p50k": GPT2, "cl100k": CL100K, "gpt4": CL100K, "o200k": O200K,
    "llama3": LLAMA3, "glm4": LLAMA3, "olmo2": LLAMA3, "phi4": LLAMA3,
    "qwen2": QWEN2, "qwen3": QWEN2, "qwen3.5": QWEN3_5, "tekken": TEKKEN,
    # GPT-NeoX, OLMo (1) and Phi-2 use Hugging Face's ByteLevel pre-tokenizer: GPT-2's original regex.
    "gpt_neox": GPT2_ORIGINAL, "olmo": GPT2_ORIGINAL, "phi2": GPT2_ORIGINAL,
    # V1 mode: `regex` then reads `&&` as an intersection, as tiktoken's engine does.
    "kimi_k2": "(?V1)" + KIMI_K2,
}

# Patterns made of several splits in sequence (not one regex): resolve() refuses them.
SEQUENCES = {"deepseek_v3": DEEPSEEK_V3, "falcon": FALCON}

# Pattern string -> the hand-written scanner's number (cpp/pretokenize.h SplitPattern). The native
# engine recognizes these (and any pattern compiling to the same program) by itself; this table
# remains for the file formats, which ask whether a pattern is one of the named ones.
NATIVE = {GPT2: 0, GPT2_ORIGINAL: 0, CL100K: 1, O200K: 2}

# Patterns that match every character, so Hugging Face's `Isolated` split (matches and the gaps
# between them) and tiktoken's rule (only matches) give the same pieces (tests/test_formats_hf.py
# checks each): a Split(Isolated) of one runs on the native engine as written, not wrapped in
# isolated()'s lookahead, which the engine cannot compile (a Qwen2 tokenizer.json split through
# `regex` at 3 MB/s).
TOTAL = frozenset({*NATIVE, LLAMA3, QWEN2, QWEN3_5, TEKKEN})

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


def resolve(pattern: str) -> str:
    """The regex string of a pattern name, an encoding name ("cl100k_base" means its pattern) or a
    regex. A string that reads as a name but is none ("cl100k_bas") is a ValueError listing the
    names, never taken as a regex; so is a regex that does not compile, and a name that stands for
    several splits in sequence (patterns.SEQUENCES)."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a str (a name or a regex), got {type(pattern).__name__}")
    if pattern == "":
        raise ValueError("the split pattern is empty")
    if pattern in SEQUENCES:
        raise ValueError(f"the {pattern} pattern is {len(SEQUENCES[pattern])} splits in sequence, not one regex; "
                         f"pass one of patterns.SEQUENCES[{pattern!r}]")
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
    return pat_str
