"""Exchange formats: every file a tokenizer travels in, recognised by its content.

| format          | files                          | module          | load | save |
| --------------- | ------------------------------ | --------------- | ---- | ---- |
| "tokenforge"    | tokenforge's own JSON          | tokenforge.io   | yes  | yes  |
| "huggingface"   | tokenizer.json                 | huggingface (byte-level BPE), hf_families (WordPiece, char BPE, WordLevel, Unigram) | yes | yes |
| "tiktoken"      | name.tiktoken, Meta's tokenizer.model (ranks only; known files by content: rank_families) | tiktoken_bpe | yes | yes |
| "tekken"        | Mistral's tekken.json          | tekken          | yes  | yes  |
| "sentencepiece" | any name: tokenizer.model.v3, spiece.model, ... | sentencepiece_model (tokenforge.spm) | yes | yes |
| (clip)          | CLIP's bpe_simple_vocab_16e6.txt(.gz) | clip     | yes  | no   |
| "transformers"  | a model folder as transformers lays it out | model_folder | yes | yes |
| "gpt2"          | encoder.json + vocab.bpe       | bpe_files       | yes  | yes  |
| "vocab_merges"  | vocab.json + merges.txt        | bpe_files, char_bpe_files | yes | yes |
| "bert_vocab"    | BERT's vocab.txt (WordPiece)   | bert_vocab      | yes  | yes  |
| "rwkv"          | RWKV's rwkv_vocab_v20230424.txt (greedy longest match) | rwkv | yes | yes |
| "listing"       | name.vocab, for people         | listing         | no   | yes  |

`tokenforge.load(path, **overrides)` reads any of them, told apart by content (detect.py); keywords supply what a format lacks
(`pattern=`, `special_tokens=`) or replace what it says (`name=`, ...); format-specific ones are
`ignore=` (huggingface) and `merges_file=` / `vocab_file=` (the two-file formats). `tok.save(path,
format=...)` writes any of them, atomically per file. Each module's docstring says what it does not
handle; those inputs are a ValueError naming the file and the place (JSON path or line), never a
tokenizer that differs. docs/format.md describes every format.
"""

from __future__ import annotations

from pathlib import Path

from .. import tokenizer as _tokenizer
from ..models import ByteBPE
from . import bert_vocab, bpe_files, char_bpe_files, detect, hf_families, hf_stages, huggingface, listing
from . import model_folder, rwkv, tekken, tiktoken_bpe
from ._common import UnsupportedComponent, apply_hf_limits


def _byte_level(tok) -> bool:
    return isinstance(tok.model, ByteBPE)


def _save_huggingface(tok, path):
    """The writers of common shapes first (they keep files as before); a tokenizer they cannot
    express goes through hf_stages (each stage as tokenizers' component)."""
    try:
        return huggingface.save(tok, path) if _byte_level(tok) else hf_families.save(tok, path)
    except ValueError as e:
        first = e
    try:
        return hf_stages.save(tok, path)
    except ValueError:
        raise first from None


def _save_vocab_merges(tok, path):
    if _byte_level(tok):
        return bpe_files.save(tok, path, "vocab_merges")
    return char_bpe_files.save(tok, path)


def _save_sentencepiece(tok, path):
    from ._common import write_atomic

    to_model_bytes = getattr(tok, "to_model_bytes", None)  # sentencepiece models have it
    if to_model_bytes is None:
        raise ValueError(f"sentencepiece: a .model file holds a sentencepiece model, not a {type(tok).__name__}")
    write_atomic(path, to_model_bytes())


SAVERS = {
    "huggingface": _save_huggingface,
    "tiktoken": tiktoken_bpe.save,
    "tekken": tekken.save,
    "gpt2": lambda tok, path: bpe_files.save(tok, path, "gpt2"),
    "vocab_merges": _save_vocab_merges,
    "bert_vocab": bert_vocab.save,
    "sentencepiece": _save_sentencepiece,
    "transformers": model_folder.save,
    "rwkv": rwkv.save,
    "listing": listing.save,
}
ALIASES = {"hf": "huggingface", "tokenizer.json": "huggingface", "vocab": "listing", "vocab.txt": "bert_vocab",
           "spm": "sentencepiece", "model_folder": "transformers"}
FORMATS = ("tokenforge", *SAVERS)
BYTE_LEVEL_ONLY = ("tiktoken", "tekken", "gpt2")


def load_foreign(path, data: bytes, **overrides):
    """Loads a file that is not tokenforge's own, from its bytes (detect.py)."""
    return detect.load_bytes(Path(path), data, **overrides)


def _load_huggingface(path, obj, overrides):
    """The readers of common shapes first (stricter: broken files are refused with their reason,
    and the byte-level reader keeps the fast tiktoken-compatible form); a component they do not
    take (UnsupportedComponent) sends the file to hf_stages, which reads any combination of components."""
    tok = None
    try:
        if hf_families.handles(obj):
            tok = hf_families.load(path, obj, **dict(overrides))
        else:
            tok = huggingface.load(path, obj, **dict(overrides))
    except UnsupportedComponent:
        pass
    if tok is None:
        tok = hf_stages.load(path, obj, **dict(overrides))
    ignore = overrides.get("ignore", ())
    return apply_hf_limits(tok, path, obj, {ignore} if isinstance(ignore, str) else set(ignore))


def save_foreign(tok, path, format: str) -> None:
    """Writes tok in an exchange format (called by Tokenizer.save)."""
    name = ALIASES.get(format, format)
    if name not in SAVERS:
        raise ValueError(f"unknown format {format!r}; known: {', '.join(repr(f) for f in FORMATS)}")
    if name in BYTE_LEVEL_ONLY and not _byte_level(tok):
        raise ValueError(f"{name}: the format holds byte-level BPE only, not a {type(tok).__name__}; "
                         "see the support matrix in docs/format.md")
    SAVERS[name](tok, path)


def _register() -> None:
    """The Tokenizer's save(format=...) writes through these (the pipeline never imports formats)."""
    for name in SAVERS:
        _tokenizer.WRITERS[name] = lambda tok, path, name=name: save_foreign(tok, path, name)
    _tokenizer.WRITERS["to_tiktoken"] = tiktoken_bpe.to_encoding


_register()
