"""Exchange formats: every file a tokenizer travels in, recognised by its content.

| format          | files                          | module          | load | save |
| --------------- | ------------------------------ | --------------- | ---- | ---- |
| "tokenforge"    | tokenforge's own JSON          | tokenforge.io   | yes  | yes  |
| "huggingface"   | tokenizer.json                 | huggingface (byte-level BPE), hf_families (WordPiece, char BPE, WordLevel, Unigram) | yes | yes |
| "tiktoken"      | name.tiktoken (ranks only)     | tiktoken_bpe    | yes  | yes  |
| "gpt2"          | encoder.json + vocab.bpe       | bpe_files       | yes  | yes  |
| "vocab_merges"  | vocab.json + merges.txt        | bpe_files, char_bpe_files | yes | yes |
| "bert_vocab"    | BERT's vocab.txt (WordPiece)   | bert_vocab      | yes  | yes  |
| "listing"       | name.vocab, for people         | listing         | no   | yes  |

`tokenforge.load(path, **overrides)` (tokenforge.io) reads any of them; keywords supply what a format lacks
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
from . import bert_vocab, bpe_files, char_bpe_files, hf_families, hf_stages, huggingface, listing, tiktoken_bpe
from ._common import fail, parse_json


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


SAVERS = {
    "huggingface": _save_huggingface,
    "tiktoken": tiktoken_bpe.save,
    "gpt2": lambda tok, path: bpe_files.save(tok, path, "gpt2"),
    "vocab_merges": _save_vocab_merges,
    "bert_vocab": bert_vocab.save,
    "listing": listing.save,
}
ALIASES = {"hf": "huggingface", "tokenizer.json": "huggingface", "vocab": "listing", "vocab.txt": "bert_vocab"}
FORMATS = ("tokenforge", *SAVERS)
BYTE_LEVEL_ONLY = ("tiktoken", "gpt2", "listing")


def detect(path, data: bytes) -> tuple[str, object]:
    """(the kind of file, its parsed JSON or None), by content; ValueError if no format fits."""
    head = data.lstrip()
    if not head:
        fail(path, None, "the file is empty")
    if head.startswith(b"[") and bert_vocab.looks_like(data):  # "[PAD]" on the first line is not JSON
        return "bert_vocab", None
    if head.startswith((b"{", b"[")):
        obj = parse_json(data, path)
        return _detect_json(path, obj), obj
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    if first.startswith(listing.HEADER.encode()):
        return "listing", None
    if tiktoken_bpe.looks_like(first):
        return "tiktoken", None
    try:
        first_text = first.decode("utf-8")
    except UnicodeDecodeError:
        fail(path, None, "not a tokenizer file: not JSON, and not UTF-8 text")
    if bert_vocab.looks_like(data):
        return "bert_vocab", None
    if bpe_files.looks_like_merges(first_text):
        return "merges", None
    fail(path, "line 1", f"not a tokenizer file in any known format ({', '.join(FORMATS[:-1])}); it starts with {first_text[:60]!r}")


def _detect_json(path, obj) -> str:
    if not isinstance(obj, dict):
        fail(path, None, f"a JSON {type(obj).__name__}, not a tokenizer (an object)")
    if bpe_files.looks_like_vocab(obj):
        return "vocab"
    if isinstance(obj.get("format"), str):
        fail(path, "format", f"unknown format {obj['format']!r} (this tokenforge reads 'tokenforge')")
    if "model" in obj:
        return "huggingface"
    fail(path, None, "a JSON object that is neither a tokenforge file, a Hugging Face tokenizer.json, "
                     "nor a vocabulary (token -> id)")


def load_foreign(path, data: bytes, **overrides):
    """Loads a file that is not tokenforge's own (called by tokenforge.load)."""
    path = Path(path)
    kind, obj = detect(path, data)
    if kind == "huggingface":
        return _load_huggingface(path, obj, overrides)
    if kind == "bert_vocab":
        return bert_vocab.load(path, data, **overrides)
    if kind == "tiktoken":
        return tiktoken_bpe.load(path, data, **overrides)
    if kind == "vocab":
        return bpe_files.load_from_vocab(path, obj, **overrides)
    if kind == "merges":
        return bpe_files.load_from_merges(path, data, **overrides)
    fail(path, None, "a .vocab listing is for people and cannot be loaded; load the file it was made from")


# Refusals of the two readers of common shapes that are about a component they do not take, not
# about a broken file: hf_stages reads those files (any combination of components).
_FEATURE_REFUSALS = ("not supported", "TemplateProcessing adds", "ignore=", "with a normalizer", "must be false",
                     "must be true", "a Split must be followed", "tokenforge reads", "Sequence of several",
                     "tokenforge makes no special token", "not the decoder of", "can make a piece containing",
                     "adds no tokens outside the model", "without ByteLevel", "byte fallback",
                     "without the normalizer stripping", "which Metaspace(split=true) never", "is not Metaspace")


def _load_huggingface(path, obj, overrides):
    """The readers of common shapes first (stricter: broken files are refused with their reason,
    and the byte-level reader keeps the fast tiktoken-compatible form); a component they do not
    take sends the file to hf_stages, which reads any combination of components."""
    try:
        if hf_families.handles(obj):
            return hf_families.load(path, obj, **dict(overrides))
        return huggingface.load(path, obj, **dict(overrides))
    except ValueError as e:
        if not any(words in str(e) for words in _FEATURE_REFUSALS):
            raise
    return hf_stages.load(path, obj, **dict(overrides))


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
