"""A vocabulary file and its merges file, as one pair: their names (GPT-2's `encoder.json` +
`vocab.bpe`, Hugging Face's `vocab.json` + `merges.txt`), writing both at once, and the fingerprint
that tells whether two files on disk belong together. Used by the byte-level (bpe_files.py) and the
character-level (char_bpe_files.py) readers and writers.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..outputs import write_atomic_group
from ._common import fail

FORMATS = {"gpt2": ("encoder.json", "vocab.bpe"), "vocab_merges": ("vocab.json", "merges.txt")}
_PAIRS = list(FORMATS.values())


def companion(path: Path) -> Path | None:
    """The other file of the pair, by name; None if the name follows neither convention."""
    for a, b in _PAIRS:
        for mine, other in ((a, b), (b, a)):
            if path.name.endswith(mine):
                return path.with_name(path.name[: -len(mine)] + other)
    return None


# The two files of a pair are renamed into place one after the other; a save killed between the two
# renames would leave a new merges file beside an old vocabulary. So the merges header names the
# vocabulary it was written with ("#version: 0.2 vocab:<fingerprint>": GPT-2's, HF's and
# transformers' readers all skip the whole first line), and reading checks it.
_VOCAB_TAG = " vocab:"


def vocab_fingerprint(vocab: dict) -> str:
    """A short hash of a token -> id table, independent of how the JSON was laid out."""
    h = hashlib.sha256()
    for token, i in sorted(vocab.items(), key=lambda kv: (kv[1], kv[0])):
        h.update(f"{i}\t{token}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


def merges_header(vocab: dict) -> str:
    return f"#version: 0.2{_VOCAB_TAG}{vocab_fingerprint(vocab)}"


def check_pair(vocab: dict, vocab_path: Path, merges_data: bytes, merges_path: Path) -> None:
    """Refuses a merges file written by tokenforge with another vocabulary (an interrupted save)."""
    first = merges_data[:200].split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")
    if first.startswith("#version") and _VOCAB_TAG in first:
        written_with = first.split(_VOCAB_TAG, 1)[1].strip()
        if written_with != vocab_fingerprint(vocab):
            fail(merges_path, "line 1", f"written for another vocabulary than {vocab_path.name} (fingerprint "
                                        f"{written_with}, the file has {vocab_fingerprint(vocab)}): the two files "
                                        "are not a pair (an interrupted save?); save the tokenizer again")


def write_pair(vocab_path: Path, vocab: dict, merges_path: Path, merge_lines: list[str]) -> None:
    """Writes vocab.json + merges.txt, both complete on disk before either is renamed into place."""
    merges_text = "".join(line + "\n" for line in [merges_header(vocab)] + merge_lines)
    write_atomic_group({vocab_path: json.dumps(vocab, ensure_ascii=False).encode("utf-8"),
                        merges_path: merges_text.encode("utf-8")})


def paths(path, format: str) -> tuple[Path, Path]:
    """(vocabulary file, merges file) that save(path, format=...) writes."""
    p = Path(path)
    if p.is_dir() or str(path).endswith(("/", "\\")) or not p.suffix:
        return tuple(p / n for n in FORMATS[format])
    other = companion(p)
    if other is None or not p.name.endswith(".json"):
        raise ValueError(f"{path}: name the vocabulary file '...encoder.json' or '...vocab.json' "
                         "(its merges file is named after it), or give a directory")
    return p, other
