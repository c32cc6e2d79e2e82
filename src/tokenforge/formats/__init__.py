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

from . import bert_vocab, bpe_files, char_bpe_files, hf_families, huggingface, listing, model_folder, tekken, tiktoken_bpe
from . import detect


def _save_sentencepiece(tok, path):
    from ._common import write_atomic

    to_model_bytes = getattr(tok, "to_model_bytes", None)  # sentencepiece models have it
    if to_model_bytes is None:
        raise ValueError(f"sentencepiece: a .model file holds a sentencepiece model, not a {type(tok).__name__}")
    write_atomic(path, to_model_bytes())


def _save_huggingface(tok, path):
    from ..tokenizer import Tokenizer

    return huggingface.save(tok, path) if isinstance(tok, Tokenizer) else hf_families.save(tok, path)


def _save_vocab_merges(tok, path):
    from ..tokenizer import Tokenizer

    if isinstance(tok, Tokenizer):
        return bpe_files.save(tok, path, "vocab_merges")
    return char_bpe_files.save(tok, path)


SAVERS = {
    "huggingface": _save_huggingface,
    "tiktoken": tiktoken_bpe.save,
    "tekken": tekken.save,
    "gpt2": lambda tok, path: bpe_files.save(tok, path, "gpt2"),
    "vocab_merges": _save_vocab_merges,
    "bert_vocab": bert_vocab.save,
    "sentencepiece": _save_sentencepiece,
    "transformers": model_folder.save,
    "listing": listing.save,
}
ALIASES = {"hf": "huggingface", "tokenizer.json": "huggingface", "vocab": "listing", "vocab.txt": "bert_vocab",
           "spm": "sentencepiece", "model_folder": "transformers"}
FORMATS = ("tokenforge", *SAVERS)
BYTE_LEVEL_ONLY = ("tiktoken", "tekken", "gpt2", "listing")


def _load_huggingface(path, obj, overrides):
    """A parsed tokenizer.json: the byte-level reader, or hf_families for the other families (the
    one place detect.py and clip.py read tokenizer.json through)."""
    if hf_families.handles(obj):
        return hf_families.load(path, obj, **dict(overrides))
    return huggingface.load(path, obj, **dict(overrides))


def load_foreign(path, data: bytes, **overrides):
    """Loads a file that is not tokenforge's own, from its bytes (detect.py)."""
    return detect.load_bytes(Path(path), data, **overrides)


def save_foreign(tok, path, format: str) -> None:
    """Writes tok in an exchange format (called by Tokenizer.save)."""
    from ..tokenizer import Tokenizer

    name = ALIASES.get(format, format)
    if name not in SAVERS:
        raise ValueError(f"unknown format {format!r}; known: {', '.join(repr(f) for f in FORMATS)}")
    if name in BYTE_LEVEL_ONLY and not isinstance(tok, Tokenizer):
        raise ValueError(f"{name}: the format holds byte-level BPE only, not a {type(tok).__name__}; "
                         "see the support matrix in docs/format.md")
    SAVERS[name](tok, path)


def convert(in_path, out_path, to_format: str, **overrides):
    """Reads any supported file and writes it in `to_format`; returns the tokenizer.

    What `tokenforge convert IN OUT --to FORMAT` runs. `overrides` go to tokenforge.load (e.g. the
    pattern and special tokens a .tiktoken file lacks).
    """
    from ..io import load

    tok = load(in_path, **overrides)
    tok.save(out_path, format=to_format)
    return tok
