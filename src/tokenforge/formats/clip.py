"""CLIP's merges file, `bpe_simple_vocab_16e6.txt` (plain or gzipped; gunzipping is detect.py's).

The file holds only merges, in GPT-2's byte-to-character alphabet with `</w>` closing a word; its
first line is a header (`"bpe_simple_vocab_16e6.txt#version: 0.2`). The vocabulary is what CLIP's
code builds from it (openai/CLIP and open_clip, SimpleTokenizer.__init__):
the 256 byte characters, the same with `</w>`, one token per merge in order, then
`<|startoftext|>` and `<|endoftext|>`, using the first 49152 - 256 - 2 merges (so 49408 ids).

The pipeline is the one Hugging Face's CLIPTokenizerFast uses (transformers' CLIPConverter), which
tokenforge can express: NFC, runs of whitespace to one space, lowercase; CLIP's split pattern
(pieces outside it are dropped); byte-level characters; BPE with `</w>` ending each word, the unknown
token `<|endoftext|>`; `<|startoftext|>` ... `<|endoftext|>` around the ids when special tokens are
added. CLIP's own Python tokenizer also runs ftfy.fix_text and html.unescape first (heuristic repairs
of broken text); those are not reproduced, so text that ftfy would change can differ from it.

Keywords: `merges_count=` (another number of merges than CLIP's), `name=`.
"""

from __future__ import annotations

from ._common import BYTE_TO_CHAR, fail

CLIP_MERGES = 49152 - 256 - 2
CLIP_PATTERN = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
START, END = "<|startoftext|>", "<|endoftext|>"


def looks_like(path, data: bytes) -> bool:
    """CLIP's header line: a file name, then `#version` (`"bpe_simple_vocab_16e6.txt#version: 0.2`).
    Merges files without it (vocab.json + merges.txt pairs, with or without `</w>`) are bpe_files'
    and char_bpe_files': a vocabulary built CLIP's way from another merges file would give other ids."""
    first = data[:4096].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    head, sep, _ = first.partition("#version")
    return bool(sep) and bool(head.strip('"').strip()) and " " not in head


def merges_of(path, data: bytes, count: int = CLIP_MERGES) -> list[tuple[str, str]]:
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as e:
        fail(path, None, f"not UTF-8 text ({e})")
    body = lines[1:] if "#version" in lines[0] else lines
    merges = []
    for n, line in enumerate(body[:count]):
        parts = line.split()
        if len(parts) != 2:
            fail(path, f"line {n + 2}", f"expected 'left right', got {line[:80]!r}")
        merges.append((parts[0], parts[1]))
    if len(merges) < count and count != CLIP_MERGES:
        fail(path, None, f"{len(merges)} merges, fewer than merges_count={count}")
    return merges


def vocabulary(merges) -> list[str]:
    """CLIP's token list, in id order."""
    chars = list(BYTE_TO_CHAR.values())
    return chars + [c + "</w>" for c in chars] + ["".join(m) for m in merges] + [START, END]


def to_hf_json(merges, vocab: list[str]) -> dict:
    """The tokenizer.json that transformers' CLIPConverter writes for these merges."""
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": vocab.index(s), "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True} for s in (START, END)
        ],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFC"}, {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "}, {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": CLIP_PATTERN}, "behavior": "Removed", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "RobertaProcessing", "sep": [END, vocab.index(END)],
                           "cls": [START, vocab.index(START)], "trim_offsets": False, "add_prefix_space": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": END, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "</w>", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(vocab)}, "merges": [list(m) for m in merges]},
    }


def load(path, data: bytes, **overrides):
    from . import _load_huggingface

    count = overrides.pop("merges_count", CLIP_MERGES)
    merges = merges_of(path, data, count)
    vocab = vocabulary(merges)
    if len(set(vocab)) != len(vocab):
        fail(path, None, "two merges make the same token; not a CLIP merges file")
    return _load_huggingface(path, to_hf_json(merges, vocab), overrides)
