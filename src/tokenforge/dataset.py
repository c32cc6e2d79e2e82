"""Encoding a corpus into one flat array of token ids for model training (nanoGPT's train.bin).

    encode_files(tok, ["a.txt", "b.txt"], "train.bin")

Each input file is a document, or several if `separator` is given (e.g. "<|endoftext|>"): every
document is encoded with `encode_ordinary` and followed by the end-of-text token. Files are read in
bounded chunks cut where a piece boundary is certain (streaming.safe_cut), and each batch of chunks
is encoded on all cores by the native core, so memory stays constant and the ids are exactly those
of encoding each document whole.

Output: raw `.bin` (native-endian uint16 when the vocabulary fits, else uint32) or `.npy`, plus a
JSON sidecar `<output>.json` with dtype, count, tokenizer and sources. Both are written to temporary
files and renamed into place at the end: an interrupted run leaves no partial output, and an
existing output is refused unless overwrite=True.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

import numpy as np

from .vocab_cache import write_atomic
from .streaming import safe_cut

CHUNK_CHARS = 1 << 20  # characters per chunk handed to a thread
BATCH_CHARS = 8 << 20  # characters encoded together (bounded memory in flight)


def dtype_for(n_vocab: int) -> np.dtype:
    return np.dtype(np.uint16) if n_vocab <= 1 << 16 else np.dtype(np.uint32)


def _segments(path: Path, separator: str | None, special_tokens, errors: str) -> Iterator[tuple[str, bool]]:
    """Yields (text, ends_document) segments of a file, each cut at a safe cut or a document end,
    holding at most about two chunks of text at a time."""
    with open(path, encoding="utf-8", errors=errors, newline="") as f:
        yield from _segments_of(f, separator, special_tokens)


def _segments_of(f, separator: str | None, special_tokens, final: bool = True) -> Iterator[tuple[str, bool]]:
    """_segments of an open text stream. With final=False the stream is a range of a file that does not
    reach its end (distributed.py): the text after the last separator does not end a document."""
    pending = ""
    while True:
        block = f.read(CHUNK_CHARS)
        pending += block
        if separator is not None:
            *docs, pending = pending.split(separator)
            for doc in docs:
                yield doc, True
        if not block:
            if not final:
                if pending:
                    yield pending, False
            elif pending or separator is None:
                yield pending, True
            return
        while len(pending) >= CHUNK_CHARS:
            cut = safe_cut(pending, special_tokens)
            if cut <= 0:
                break  # no certain boundary yet: read more
            yield pending[:cut], False
            pending = pending[cut:]


def encode_files(
    tok,
    files: Iterable[str | os.PathLike],
    output: str | os.PathLike,
    *,
    separator: str | None = None,
    add_eot: bool = True,
    num_threads: int | None = None,
    overwrite: bool = False,
    errors: str = "strict",
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Encodes files into `output` (.bin or .npy) and returns the sidecar metadata."""
    output = Path(output)
    files = [Path(f) for f in files]
    if not files:
        raise ValueError("no input files")
    for f in files:
        if f.is_dir():
            raise ValueError(f"{f}: is a directory")
        if not f.exists():
            raise FileNotFoundError(f"{f}: no such file")
    sidecar = output.with_name(output.name + ".json")
    if not overwrite and (output.exists() or sidecar.exists()):
        raise FileExistsError(f"{output} already exists; pass overwrite=True (--overwrite) to replace it")
    eot = None
    if add_eot:
        eot = tok.eot_token if "<|endoftext|>" in tok.special_tokens_set else None
        if eot is None:
            raise ValueError("the tokenizer has no <|endoftext|> token; pass add_eot=False")
    dtype = dtype_for(tok.n_vocab)
    threads = num_threads or os.cpu_count() or 1
    specials = tok.special_tokens_set
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, raw_tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".partial")
    count = 0
    sources = []
    try:
        with os.fdopen(fd, "wb") as out:
            for path in files:
                file_tokens = 0
                batch: list[tuple[str, bool]] = []
                batch_chars = 0

                def flush():
                    nonlocal count, file_tokens, batch_chars
                    ids = _encode_flat(tok, batch, eot, threads)
                    ids.astype(dtype, copy=False).tofile(out)
                    count += len(ids)
                    file_tokens += len(ids)
                    if progress:
                        progress(sum(len(c.encode("utf-8")) for c, _ in batch), len(ids))
                    batch.clear()
                    batch_chars = 0

                try:
                    for item in _segments(path, separator, specials, errors):
                        batch.append(item)
                        batch_chars += len(item[0])
                        if batch_chars >= BATCH_CHARS:
                            flush()
                    flush()
                except UnicodeDecodeError as e:
                    raise ValueError(f"{path}: not UTF-8 ({e.reason} in a chunk near byte offset {e.start}); "
                                     f"pass errors='replace' to replace invalid bytes") from None
                sources.append({"path": str(path), "bytes": path.stat().st_size, "tokens": file_tokens})
        final_tmp = raw_tmp
        if output.suffix == ".npy":
            final_tmp = _raw_to_npy(raw_tmp, dtype, count, output.parent, output.name)
            os.unlink(raw_tmp)
        meta = {
            "format": "npy" if output.suffix == ".npy" else "bin",
            "dtype": dtype.name,
            "byteorder": "little" if np.little_endian else "big",
            "count": count,
            "tokenizer": getattr(tok, "name", "tokenizer"),
            "n_vocab": tok.n_vocab,
            "eot_token": eot,
            "separator": separator,
            "sources": sources,
        }
        os.replace(final_tmp, output)
    except BaseException:
        for p in (raw_tmp,):
            try:
                os.unlink(p)
            except OSError:
                pass
        raise
    write_atomic(sidecar, json.dumps(meta, indent=1).encode())
    return meta


def _encode_flat(tok, batch: list[tuple[str, bool]], eot: int | None, threads: int) -> np.ndarray:
    """The ids of a batch of segments, one flat array, eot after each segment that ends a document."""
    texts = [t for t, _ in batch]
    suffix = [eot if ends and eot is not None else -1 for _, ends in batch]
    if tok._native_pattern < 0 or getattr(tok, "_normalizer", None) is not None:  # the Python path
        return np.asarray([i for t, s in zip(texts, suffix) for i in tok.encode_ordinary(t) + ([s] if s >= 0 else [])],
                          dtype=np.uint32)
    try:
        ids, _ = tok._core.encode_ordinary_batch_flat(texts, suffix, threads)
    except UnicodeEncodeError:
        from .tokenizer import _replace_surrogates

        ids, _ = tok._core.encode_ordinary_batch_flat([_replace_surrogates(t) for t in texts], suffix, threads)
    return ids


def _raw_to_npy(raw_path: str, dtype: np.dtype, count: int, folder: Path, name: str) -> str:
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as out, open(raw_path, "rb") as src:
            np.lib.format.write_array_header_1_0(out, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                       "fortran_order": False, "shape": (count,)})
            while block := src.read(1 << 24):
                out.write(block)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def read_ids(path: str | os.PathLike) -> np.ndarray:
    """Memory-maps an output of encode_files (using its sidecar for a .bin)."""
    path = Path(path)
    if path.suffix == ".npy":
        return np.load(path, mmap_mode="r")
    meta = json.loads(path.with_name(path.name + ".json").read_text())
    return np.memmap(path, dtype=np.dtype(meta["dtype"]), mode="r")
