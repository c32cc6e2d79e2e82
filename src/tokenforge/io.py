"""Saving and loading tokenizers: tokenforge's own self-describing file, and the dispatch to the
exchange formats (tokenforge.formats).

tokenforge's file is JSON (a person can read it; loading never executes anything):

    {"format": "tokenforge", "version": 1, "model": "byte_bpe", "name": ..., "normalizer": null | "NFKC" | ...,
     "pattern": ...,
     "special_tokens": {"<|endoftext|>": 256, ...},
     "vocab": [[id, base64 bytes], ...], "merges": [[left id, right id], ...] | null,
     "ignore_merges": bool}

"merges": null means tiktoken's rule (ids are ranks, see cpp/bpe.h). "normalizer" may be absent (null).
The exchange formats are described in docs/format.md.

The other models ("model": "wordpiece" | "char_bpe" | "word" | "char", see tokenforge.pipeline, and
"unigram" | "sp_bpe", see tokenforge.spm) use the same envelope; docs/design.md describes them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from .load import write_atomic

FORMAT_NAME = "tokenforge"
FORMAT_VERSION = 1
# Models of tokenforge.pipeline, stored in the same envelope with "normalizer", "pre_tokenizer",
# "post_processor" and the model's own fields (docs/design.md, "Other tokenizer families").
OTHER_MODELS = ("wordpiece", "char_bpe", "word", "char")


def save(tok, path, *, format: str = FORMAT_NAME) -> None:
    if format != FORMAT_NAME:
        from . import formats

        return formats.save_foreign(tok, path, format)
    write_atomic(Path(path), json.dumps(to_dict(tok), ensure_ascii=False, indent=1).encode("utf-8"))


def to_dict(tok) -> dict:
    from .spm.tokenizer import SentencePieceTokenizer
    from .tokenizer import Tokenizer

    if isinstance(tok, SentencePieceTokenizer):  # "model": "unigram" / "sp_bpe" (spm/files.py)
        from .spm import files

        return files.to_dict(tok, {"format": FORMAT_NAME, "version": FORMAT_VERSION})
    if hasattr(tok, "_to_file_dict"):  # the other model families (tokenforge.pipeline)
        return tok._to_file_dict()

    if not isinstance(tok, Tokenizer):
        raise TypeError(f"cannot save a {type(tok).__name__}")
    state = tok._state()
    ranks = state["mergeable_ranks"]
    merges = state["merges"]
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "model": "byte_bpe",
        "name": state["name"],
        "normalizer": state["normalizer"],
        "pattern": state["pattern"],
        "special_tokens": state["special_tokens"],
        "ignore_merges": state["ignore_merges"],
        "vocab": [[i, base64.b64encode(b).decode("ascii")] for b, i in sorted(ranks.items(), key=lambda kv: kv[1])],
        "merges": None if merges is None else [[ranks[a], ranks[b]] for a, b in merges],
    }


def load(path, **overrides):
    """Loads a tokenizer from any supported file or model folder, recognised by its content
    (tokenforge.formats.detect)."""
    from .formats import detect

    return detect.load(path, read_own=from_dict, **overrides)


def from_dict(obj: dict, *, source: str = "<dict>", **overrides):
    from .tokenizer import Tokenizer

    def fail(where: str, what: str):
        raise ValueError(f"{source}: {where}: {what}")

    version = obj.get("version")
    if version != FORMAT_VERSION:
        fail("version", f"unsupported format version {version!r} (this tokenforge reads {FORMAT_VERSION})")
    if obj.get("model") in ("unigram", "sp_bpe"):  # SentencePiece-style models (spm/files.py)
        from .spm import files

        return files.from_dict(obj, source=source)
    if obj.get("model") in OTHER_MODELS:
        from .pipeline import from_file_dict

        if overrides:
            raise TypeError(f"{source}: a {obj['model']} tokenizer takes no overrides ({', '.join(overrides)})")
        return from_file_dict(obj, source=source)
    if obj.get("model") != "byte_bpe":
        fail("model", f"unknown model {obj.get('model')!r}")
    vocab = obj.get("vocab")
    if not isinstance(vocab, list):
        fail("vocab", "missing or not a list")
    ranks: dict[bytes, int] = {}
    by_id: dict[int, bytes] = {}
    for n, entry in enumerate(vocab):
        try:
            i, b64 = entry
            b = base64.b64decode(b64, validate=True)
        except Exception:
            fail(f"vocab[{n}]", f"expected [id, base64 bytes], got {entry!r:.80}")
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            fail(f"vocab[{n}]", f"invalid id {i!r}")
        if i in by_id:
            fail(f"vocab[{n}]", f"duplicate id {i}")
        if b in ranks:
            fail(f"vocab[{n}]", f"duplicate token {b!r}")
        ranks[b] = i
        by_id[i] = b
    merges = obj.get("merges")
    if merges is not None:
        if not isinstance(merges, list):
            fail("merges", "not a list (or null)")
        pairs = []
        for n, m in enumerate(merges):
            if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in m)):
                fail(f"merges[{n}]", f"expected [left id, right id], got {m!r:.80}")
            if m[0] not in by_id or m[1] not in by_id:
                fail(f"merges[{n}]", f"id {m[0] if m[0] not in by_id else m[1]} is not in the vocabulary")
            pairs.append((by_id[m[0]], by_id[m[1]]))
        merges = pairs
    special = obj.get("special_tokens") or {}
    if not isinstance(special, dict):
        fail("special_tokens", "not an object")
    kwargs = dict(
        pattern=obj.get("pattern"),
        mergeable_ranks=ranks,
        special_tokens=special,
        merges=merges,
        ignore_merges=obj.get("ignore_merges"),
        name=obj.get("name") or "tokenizer",
        normalizer=obj.get("normalizer"),
    )
    kwargs.update(overrides)
    try:
        return Tokenizer(**kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{source}: {e}") from None
