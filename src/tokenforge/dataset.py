"""Encoding a corpus into flat arrays of token ids for model training (nanoGPT's train.bin).

    encode_dataset(tok, ["corpus/*.jsonl.zst"], "out/", shard_size=100_000_000, val_fraction=0.005)
    encode_files(tok, ["a.txt", "b.txt"], "train.bin")          # one file, each file a document

Inputs (tokenforge.dataset_readers): text, JSON lines (`field`), Parquet (a column), gzip / zstd,
folders, globs, "-" for standard input and fsspec URLs. Every document is encoded as
`encode_ordinary` would (special-token text is ordinary text) and followed by the end-of-text token
(`eot`: "auto" picks <|endoftext|>, <|end_of_text|>, </s> or <eos>; a token name, an id, or None).
Text is read in bounded blocks and cut where a piece boundary is certain (streaming.safe_cut);
a reader thread reads ahead, batches of about a million characters are encoded by one native
thread per core, and the main thread writes them in order (`encoded`): memory stays constant and
the ids are exactly those of encoding each document whole. With the native core no str is made
for a document: JSON lines go to the encoding threads as blocks of bytes, parsed there
(_JsonlBlock, cpp/jsonl.cc), and text files as UTF-8 bytes cut at safe cuts found in the bytes;
the Python readers serve the rest and every line the native parser is not sure of. Tokenizers that are not byte-level BPE (sentencepiece,
WordPiece, ...) get each document whole.

Outputs: uint16 when the vocabulary fits, else uint32, native byte order.
- One file (`OUT.bin`, raw ids: `np.memmap(OUT, dtype=np.uint16, mode="r")`, or `OUT.npy`) with a
  JSON sidecar `OUT.bin.json`: dtype, count, bytes, crc32, tokenizer, eot, sources.
- Shards (`shard_size` tokens, cut at document ends) in a folder: `train-000000.bin`, ... and
  `index.json` listing each shard with its count, bytes and crc32 (the index is the shards' sidecar).
  The index is rewritten after every completed shard, so `resume=True` continues an interrupted run
  after its last complete shard, never rewriting one.
- `val_fraction`: that share of the documents (evenly spread, deterministic) goes to a validation
  split (`OUT_val.bin`, or `val-*.bin` shards).
The files are written and read by tokenforge.dataset_files (read_ids, open_shards and read_shards
are re-exported here): every file is written as a partial file and renamed into place after an
fsync, and readers refuse a data file whose sidecar is missing or does not match its size.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from .dataset_files import (_SHARD_NAME, INDEX_NAME, READABLE_DTYPES, SHARDS_FORMAT, _Part, _read_index,
                            _ShardedOutput, _SingleOutput, dtype_for, open_shards, read_ids, read_shards)
from . import _core
from .dataset_readers import (CHUNK_CHARS, expand_inputs, is_url, jsonl_documents, native_units, require_fsspec,
                              segments, utf8_error)
from .stage import replace_surrogates
from .streaming import safe_cut

BATCH_CHARS = 1 << 20  # characters per batch: what one encoding thread takes at a time
IN_FLIGHT = 4  # batches per encoding thread queued or being encoded (bounds the memory in flight)
EOT_CANDIDATES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>")

__all__ = ["encode_dataset", "encode_files", "read_ids", "open_shards", "read_shards", "dtype_for", "CHUNK_CHARS",
           "INDEX_NAME", "READABLE_DTYPES", "SHARDS_FORMAT", "_Part", "_read_index"]


# --------------------------------------------------------------------------------------------------
# The tokenizer, as the dataset encoder sees it


class _Encoder:
    """Encodes batches of segments into one flat array, for every tokenizer family.

    encoded() calls encode from `workers` threads at once: for the native core one thread per core,
    each encoding whole batches alone (the core releases the GIL, writes the ids of one thread
    straight into the flat array, and its per-thread piece cache stays warm from batch to batch, as
    the threads live as long as the run); other tokenizers get one caller, which hands `threads`
    to their own batch encoder. With the native core a segment may be UTF-8 bytes (validated by the
    core) and a work item a _JsonlBlock (parsed by the core): no str is made for the text."""

    def __init__(self, tok, threads: int):
        self.tok = tok
        self.threads = threads
        core = getattr(tok, "_core", None)
        byte_level = hasattr(tok, "encode_ordinary") and getattr(tok, "_normalizer", None) is None
        self.native = (byte_level and getattr(tok, "_native_pattern", -1) >= 0
                       and hasattr(core, "encode_ordinary_batch_flat"))
        self.cuttable = byte_level  # documents may be cut at safe cuts (streaming.py)
        self.workers = threads if self.native else 1
        self.native_reader = self.native and _reaches_native_encoder(core)

    def cut(self, buffer: str, start: int, end: int) -> int:
        return safe_cut(buffer, (), start=start, end=end)  # encode_ordinary: no special token is matched

    def encode(self, texts, suffix: list[int]) -> tuple[np.ndarray, list[int]]:
        """(flat uint32 ids, ids per text): text k's ids, then suffix[k] if it is >= 0. `texts` is a
        list of str (or, natively, UTF-8 bytes) or a _JsonlBlock (one count per document)."""
        if isinstance(texts, _JsonlBlock):
            return texts.encode(self)
        if self.native:  # one thread here: `workers` callers run at once (see encoded())
            encode = _core.encode_segments if self.native_reader else _encode_str_batch
            try:
                ids, counts, bad = encode(self.tok._core, texts, suffix)
            except UnicodeEncodeError:  # lone surrogates: U+FFFD, as encode_ordinary does
                texts = [replace_surrogates(t) if isinstance(t, str) else t for t in texts]
                ids, counts, bad = encode(self.tok._core, texts, suffix)
            if bad >= 0:  # bytes read by byte_segments: the error names the file and the byte
                _, _, name, offset = texts.meta[bad]
                raise utf8_error(name, texts[bad], offset)
            return ids, counts
        per_text = [ids + [s] if s >= 0 else ids for ids, s in zip(self._encode_many(texts), suffix)]
        flat = np.fromiter((i for ids in per_text for i in ids), dtype=np.uint32)
        return flat, [len(ids) for ids in per_text]

    def _encode_many(self, texts: list[str]) -> list[list[int]]:
        tok = self.tok
        if hasattr(tok, "encode_ordinary_batch"):
            return tok.encode_ordinary_batch(texts, num_threads=self.threads)
        if hasattr(tok, "encode_ordinary"):
            return [tok.encode_ordinary(t) for t in texts]
        try:
            return [tok.encode(t, add_special_tokens=False) for t in texts]
        except TypeError:
            return [tok.encode(t) for t in texts]


def _reaches_native_encoder(core) -> bool:
    """Whether the native reader's functions take this `_core.Encoder` (one that splits text
    itself); otherwise the str path serves."""
    try:
        _core.encode_segments(core, [b"a"], [-1])
        return True
    except (AttributeError, TypeError, ValueError):
        return False


def _encode_str_batch(core, texts: list[str], suffix: list[int]):
    ids, counts = core.encode_ordinary_batch_flat(texts, suffix, 1)
    return ids, counts, -1


class _Segments(list):
    """The texts of a work item, with their meta: (ends_document, source number, source name,
    offset in the source or None) each."""

    __slots__ = ("meta",)


class _JsonlBlock:
    """Whole JSON lines of one source, for the native reader: each record's field is parsed and
    encoded by the core in an encoding thread; a line the core leaves to Python (anything but a
    plain valid record: invalid UTF-8 or JSON, a lone surrogate, a missing field, ...) goes through
    dataset_readers.jsonl_documents, which accepts it or raises its error naming file and line."""

    __slots__ = ("data", "start", "end", "first_line", "name", "field", "errors", "eot")

    def __init__(self, data: bytes, start: int, end: int, first_line: int, name: str, field: str, errors: str,
                 eot: int):
        self.data, self.start, self.end = data, start, end  # the lines: data[start:end]
        self.first_line, self.name = first_line, name
        self.field, self.errors, self.eot = field, errors, eot

    def __len__(self) -> int:
        return self.end - self.start

    def encode(self, encoder: _Encoder) -> tuple[np.ndarray, list[int]]:
        data, field, size = self.data, self.field.encode("utf-8", "surrogatepass"), self.end
        parts, counts = [], []
        pos = self.start
        while True:
            ids, done, stop = _core.encode_jsonl_lines(encoder.tok._core, data, pos, size, field, self.eot)
            parts.append(ids)
            counts += done
            if stop >= size:
                break
            end = data.find(b"\n", stop, size)
            end = size if end < 0 else end + 1
            line_no = self.first_line + data.count(b"\n", self.start, stop)
            for text in jsonl_documents([data[stop:end]], self.name, self.field, self.errors, first_line=line_no):
                ids, done = encoder.encode([text], [self.eot])
                parts.append(ids)
                counts += done
            pos = end
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)), counts


def token_id(tok, token: str) -> int | None:
    """The id of a (special) token given by its text, or None."""
    for method in ("encode_single_token", "token_to_id"):
        fn = getattr(tok, method, None)
        if fn is not None:
            try:
                i = fn(token)
            except (KeyError, ValueError, TypeError, Exception):
                i = None
            if i is not None:
                return int(i)
    piece_to_id, id_to_piece = getattr(tok, "piece_to_id", None), getattr(tok, "id_to_piece", None)
    if piece_to_id is not None and id_to_piece is not None:
        i = piece_to_id(token)
        if i is not None and id_to_piece(i) == token:
            return int(i)
    return None


def resolve_eot(tok, eot) -> int | None:
    """The end-of-document id: eot is "auto", a token's text, an id, or None (no boundary token)."""
    if eot is None or eot is False:
        return None
    n_vocab = tok.n_vocab
    if isinstance(eot, int) and not isinstance(eot, bool):
        if not 0 <= eot < n_vocab:
            raise ValueError(f"end-of-text id {eot} is outside the vocabulary (0..{n_vocab - 1})")
        return eot
    if not isinstance(eot, str):
        raise TypeError(f"eot must be 'auto', a token, an id or None, got {type(eot).__name__}")
    if eot != "auto":
        i = token_id(tok, eot)
        if i is None:
            raise ValueError(f"{eot!r} is not a token of this tokenizer (choose the end-of-text token with "
                             "--eot-token, or --no-eot)")
        return i
    for candidate in EOT_CANDIDATES:
        i = token_id(tok, candidate)
        if i is not None:
            return i
    raise ValueError(f"the tokenizer has none of the end-of-text tokens {', '.join(EOT_CANDIDATES)}: choose one "
                     "with --eot-token TOKEN (eot=...), or --no-eot (eot=None) for no token between documents")


# --------------------------------------------------------------------------------------------------
# Writing


def _val_document(k: int, fraction: float) -> bool:
    """Whether document k goes to the validation split: every 1/fraction-th, evenly spread."""
    return fraction > 0 and int((k + 1) * fraction) > int(k * fraction)


# --------------------------------------------------------------------------------------------------
# Encoding


class Progress:
    """What the progress callback receives: totals so far."""

    __slots__ = ("bytes", "total_bytes", "documents", "tokens", "seconds")

    def __init__(self, total_bytes):
        self.bytes, self.total_bytes, self.documents, self.tokens = 0, total_bytes, 0, 0
        self.seconds = 0.0


def encode_dataset(
    tok,
    inputs,
    output: str | os.PathLike,
    *,
    input_format: str = "auto",
    field: str = "text",
    separator: str | None = None,
    eot="auto",
    shard_size: int | None = None,
    val_fraction: float = 0.0,
    resume: bool = False,
    overwrite: bool = False,
    num_threads: int | None = None,
    errors: str = "strict",
    progress: Callable[[Progress], None] | None = None,
    _publish=None,
) -> dict:
    """Encodes the inputs (paths, folders, globs, URLs, "-") into `output`; returns the metadata (the
    sidecar of the train file, or the shards' index). See the module docstring."""
    if errors not in ("strict", "replace"):
        raise ValueError(f'errors must be "strict" or "replace", got {errors!r}')
    if separator is not None and (not isinstance(separator, str) or not separator):
        raise ValueError(f"separator must be a non-empty string or None, got {separator!r}")
    if not isinstance(val_fraction, (int, float)) or not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    if shard_size is not None and (isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1):
        raise ValueError(f"shard_size must be a positive number of tokens, got {shard_size!r}")
    if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1):
        raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
    if resume and shard_size is None:
        raise ValueError("resume needs a sharded output (shard_size / --shard-size)")
    if is_url(os.fspath(output)):
        return _via_local_copy(tok, inputs, os.fspath(output), locals())
    output = Path(output)
    sources = expand_inputs(inputs)
    if shard_size is None:
        if output.suffix not in (".bin", ".npy"):
            raise ValueError(f"{output}: the output must end in .bin or .npy (or give --shard-size for a folder of shards)")
        if output.is_dir():
            raise ValueError(f"{output}: is a directory")
        if not output.parent.is_dir():
            raise FileNotFoundError(f"{output.parent}: no such folder for the output")
    elif output.suffix in (".bin", ".npy") or (output.exists() and not output.is_dir()):
        raise ValueError(f"{output}: with a shard size the output is a folder (shards and {INDEX_NAME})")
    elif not output.parent.is_dir():
        raise FileNotFoundError(f"{output.parent}: no such folder for the output folder")
    eot_id = resolve_eot(tok, eot)
    dtype = dtype_for(tok.n_vocab)
    encoder = _Encoder(tok, num_threads or os.cpu_count() or 1)
    splits = ("train", "val") if val_fraction > 0 else ("train",)
    header = {
        "dtype": dtype.name,
        "byteorder": "little" if np.little_endian else "big",
        "tokenizer": getattr(tok, "name", None) or type(tok).__name__,
        "tokenizer_sha256": tokenizer_fingerprint(tok),
        "n_vocab": tok.n_vocab,
        "eot_token": eot_id,
        "separator": separator,
        "sources": [s.name for s in sources],
        "val_fraction": val_fraction,
        "shard_size": shard_size,
    }
    if shard_size is None:
        out = _SingleOutput(output, dtype, splits, overwrite)
    else:
        out = _ShardedOutput(output, dtype, splits, shard_size, header, overwrite, resume, _publish)
        if out.complete_index is not None:  # (same tokenizer and options, checked): resuming it is done at once
            return dict(out.complete_index, already_complete=True)
    state = Progress(sum(s.size or 0 for s in sources) if all(s.size is not None for s in sources) else None)
    started = time.perf_counter()
    counter = [0]
    try:
        per_source = [{"name": src.name, "bytes": src.size, "documents": 0, "tokens": 0} for src in sources]
        options = dict(fmt=input_format, field=field, separator=separator, errors=errors,
                       cut=encoder.cut if encoder.cuttable else None)
        document = getattr(out, "skip", 0)
        work = _work_items(sources, document, val_fraction, counter, options, encoder, eot_id)
        for (meta, nbytes), ids, counts in encoded(encoder, work):
            if isinstance(meta, tuple):  # ("jsonl", source): one whole document per count
                meta = [(True, meta[1])] * len(counts)
            document = _write_batch(out, meta, ids, counts, document, val_fraction, per_source)
            state.tokens += len(ids)
            state.bytes = nbytes
            _report(progress, state, None, document, started)
        meta = {"documents": document, "elapsed_seconds": round(time.perf_counter() - started, 3)}
        if shard_size is None:
            files = out.finish(dict(header, **meta, inputs=per_source))
            result = files["train"]
            if "val" in files:
                result = dict(result, val=files["val"])
        else:
            result = out.finish(meta)
        state.bytes = state.total_bytes if state.total_bytes is not None else counter[0]
        _report(progress, state, None, document, started)
        return result
    except BaseException:
        out.abort()
        raise


def tokenizer_fingerprint(tok) -> str | None:
    """sha256 of what a tokenizer maps (every id's token, and its split pattern): written beside the
    ids (sidecar, index) so that resuming or decoding with another tokenizer of the same name and
    size is refused (a name alone let two tokenizers' ids mix in one folder of shards). 0.04 s for
    GPT-2's vocabulary, 0.2 s for o200k's one id at a time; byte-level tokenizers list them in bulk
    (Tokenizer._tokens_up_to: 0.02 s for o200k). None for an object without id_to_token."""
    import hashlib

    id_to_token = getattr(tok, "id_to_token", None)
    if id_to_token is None:
        return None
    bulk = getattr(tok, "_tokens_up_to", None)
    tokens = bulk(tok.n_vocab) if bulk is not None else None
    if tokens is None:
        tokens = []
        for i in range(tok.n_vocab):
            try:
                tokens.append(id_to_token(i))
            except (ValueError, KeyError, IndexError):  # (a family whose id_to_token raises for a gap in its ids)
                tokens.append(None)
    text = json.dumps([tok.n_vocab, getattr(tok, "pattern", None), tokens], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_same_tokenizer(tok, meta: dict, where) -> None:
    """Refuses ids written by another tokenizer than `tok` (their sidecar or index `meta`)."""
    want = meta.get("tokenizer_sha256")
    if want and want != tokenizer_fingerprint(tok):
        raise ValueError(f"{where}: written with the tokenizer {meta.get('tokenizer')!r} ({meta.get('n_vocab')} ids), "
                         f"not with {getattr(tok, 'name', type(tok).__name__)!r} ({tok.n_vocab} ids): their "
                         "vocabularies differ")


def _work_items(sources, skip: int, val_fraction: float, counter, options, encoder: _Encoder, eot_id):
    """Work items (items, suffix, (meta, bytes read so far)) for encoded(): batches of about
    BATCH_CHARS of segments across sources (many small files still fill a batch for every core),
    meta listing (ends_document, source number) per segment; or, natively, a _JsonlBlock with meta
    ("jsonl", source number). The first `skip` documents (done before a resume) are read by the
    Python readers and not returned; the native readers take over at the next source."""
    items, suffix, meta, size = _Segments(), [], [], 0
    eot = -1 if eot_id is None else eot_id
    document = 0  # counted while skipping

    def batch():
        items.meta = meta
        return items, suffix, (meta, counter[0])

    for k, source in enumerate(sources):
        if document < skip or not encoder.native_reader:
            units = (("seg", text, ends, None) for text, ends in segments(source, counter=counter, **options))
        else:
            units = native_units(source, byte_cut=_core.safe_cut_bytes, counter=counter, block_bytes=BATCH_CHARS,
                                 count_lines=_core.count_newlines, **options)
        for unit in units:
            if unit[0] == "jsonl":
                if items:
                    yield batch()
                    items, suffix, meta, size = _Segments(), [], [], 0
                block = _JsonlBlock(*unit[1:], source.name, options["field"], options["errors"], eot)
                yield block, [], (("jsonl", k), counter[0])
                continue
            _, text, ends, offset = unit
            if document < skip:
                document += ends
                continue
            items.append(text)
            suffix.append(eot if ends else -1)
            meta.append((ends, k, source.name, offset))
            size += len(text)
            if size >= BATCH_CHARS:
                yield batch()
                items, suffix, meta, size = _Segments(), [], [], 0
    if items:
        yield batch()


def _work(batch: list, eot_id: int | None, payload) -> tuple:
    """(texts, suffix, payload) for encoded(), from (text, ends_document, ...) items: the
    end-of-text id after each text that ends a document."""
    texts = [item[0] for item in batch]
    suffix = [eot_id if item[1] and eot_id is not None else -1 for item in batch]
    return texts, suffix, payload


def batched(items, eot_id: int | None = None):
    """Work items for encoded() from (text, ends_document, ...) items, about BATCH_CHARS characters
    each; the payload is the list of items."""
    batch, chars = [], 0
    for item in items:
        batch.append(item)
        chars += len(item[0])
        if chars >= BATCH_CHARS:
            yield _work(batch, eot_id, batch)
            batch, chars = [], 0
    if batch:
        yield _work(batch, eot_id, batch)


def _prefetched(iterator, depth: int = 1):
    """Runs an iterator in a thread, `depth` items ahead: the next batch is read and parsed while
    the native core encodes this one (it releases the GIL). Errors are raised here."""
    import queue
    import threading

    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def run():
        try:
            for item in iterator:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as e:  # handed to the consumer
            put(("error", e))

    thread = threading.Thread(target=run, name="tokenforge-reader", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()
        thread.join(timeout=10)


def encoded(encoder: _Encoder, work):
    """Encodes work items (texts, suffix, payload) and yields (payload, ids, counts) in their order.
    The items are made in a reader thread (reading, decompressing, parsing, cutting), encoded by
    `encoder.workers` threads, and handed back here (where they are written): the three overlap,
    with at most IN_FLIGHT items per encoding thread waiting or under way."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    window = IN_FLIGHT * encoder.workers
    pending: deque = deque()
    with ThreadPoolExecutor(encoder.workers, thread_name_prefix="tokenforge-encode") as pool:
        try:
            for texts, suffix, payload in _prefetched(work, depth=window):
                pending.append((pool.submit(encoder.encode, texts, suffix), payload))
                if len(pending) >= window:
                    future, payload = pending.popleft()
                    yield (payload, *future.result())
            while pending:
                future, payload = pending.popleft()
                yield (payload, *future.result())
        finally:
            for future, _ in pending:
                future.cancel()


def _write_batch(out, meta, ids: np.ndarray, counts: list[int], document: int, val_fraction: float,
                 per_source) -> int:
    """Writes the ids of a batch, run by run of segments of the same split (the split of a segment
    is its document's, `document` being the number of documents before the batch); an output
    that may close a shard at a document end (sharded) is told of each. Returns the documents done."""
    per_document = getattr(out, "per_document", False)
    pos = 0
    run_start = 0
    run_split = None
    ended = 0
    for (ends, k, *_), n in zip(meta, counts):
        split = "val" if _val_document(document, val_fraction) else "train"
        if split != run_split and run_split is not None:
            out.write(run_split, ids[run_start:pos])
            run_start = pos
        run_split = split
        pos += n
        per_source[k]["tokens"] += n
        if ends:
            ended += 1
            document += 1
            per_source[k]["documents"] += 1
            if per_document:
                out.write(run_split, ids[run_start:pos])
                run_start = pos
                out.document_done()
    if pos > run_start:
        out.write(run_split, ids[run_start:pos])
    if not per_document:
        out.documents += ended
    return document


def _report(progress, state: Progress, counter, documents: int, started: float) -> None:
    if counter is not None:
        state.bytes = counter[0]
    state.documents = documents
    state.seconds = time.perf_counter() - started
    if progress is not None:
        progress(state)


def _via_local_copy(tok, inputs, url: str, options: dict) -> dict:
    """Writes to an fsspec URL. One file: encoded into a local temporary folder, then uploaded (the
    sidecar last). Shards: encoded in a local temporary folder and uploaded at each checkpoint (the
    new shards, then index.json), each local shard removed once uploaded; resume reads the remote
    index.json and continues after the shards it lists."""
    import shutil
    import tempfile

    fsspec = require_fsspec(url)
    fs, _, (root,) = fsspec.get_fs_token_paths(url)
    root = root.rstrip("/")
    sharded = options.get("shard_size") is not None
    resume, overwrite = options.get("resume"), options.get("overwrite")
    remote_index = f"{root}/{INDEX_NAME}"
    if not overwrite and not resume and (fs.exists(remote_index) if sharded else fs.exists(root)):
        raise FileExistsError(f"{url} already exists; pass --overwrite (overwrite=True) to replace it"
                              + (", or --resume (resume=True) to continue it" if sharded else ""))
    kwargs = {k: options[k] for k in ("input_format", "field", "separator", "eot", "shard_size", "val_fraction",
                                       "num_threads", "errors", "progress")}
    tmp = Path(tempfile.mkdtemp(prefix="tokenforge-upload-"))
    try:
        if not sharded:
            name = os.path.basename(root)
            meta = encode_dataset(tok, inputs, tmp / name, **kwargs)
            files = sorted(tmp.iterdir())
            last = [f for f in files if f.name.endswith(".json")]
            for f in [f for f in files if f not in last] + last:
                fs.put_file(str(f), f"{os.path.dirname(root)}/{f.name}")
            return meta
        local = tmp / "out"
        local.mkdir()
        listed: set = set()
        if fs.exists(remote_index):
            if resume:
                fs.get_file(remote_index, str(local / INDEX_NAME))
                listed = {s.get("file") for s in _named_as(url, local, _read_index, local)["shards"]}
            else:  # overwrite: the index goes first, never an index naming shards already removed
                try:
                    old = json.loads(fs.cat_file(remote_index))
                except ValueError:
                    old = None
                fs.rm(remote_index)
                for s in old.get("shards", []) if isinstance(old, dict) else []:
                    _remove_remote(fs, root, s.get("file") if isinstance(s, dict) else None)
        fs.makedirs(root, exist_ok=True)
        for path in fs.ls(root, detail=False):  # shards of a killed run after its last checkpoint
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name not in listed and _SHARD_NAME.fullmatch(name):
                fs.rm(path)

        def publish(shards: list[Path], index: Path) -> None:
            for shard in shards:  # an object store makes each object appear whole
                fs.put_file(str(shard), f"{root}/{shard.name}")
                shard.unlink()  # the local disk holds the shards of one checkpoint at a time
            fs.put_file(str(index), f"{root}/.{INDEX_NAME}.partial")  # then renamed: never half an index
            fs.mv(f"{root}/.{INDEX_NAME}.partial", remote_index)

        return _named_as(url, local, encode_dataset, tok, inputs, local, resume=bool(resume), _publish=publish,
                         **kwargs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _named_as(url: str, local: Path, fn, *args, **kwargs):
    """fn(*args, **kwargs), its ValueErrors naming the URL instead of the local copy (the folder in
    which a remote output is prepared)."""
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        if str(local) not in str(e):
            raise
        raise ValueError(str(e).replace(str(local), url.rstrip("/"))) from None


def _remove_remote(fs, root: str, name) -> None:
    if isinstance(name, str) and _SHARD_NAME.fullmatch(name):
        try:
            fs.rm(f"{root}/{name}")
        except FileNotFoundError:
            pass


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
    progress=None,
    **options,
) -> dict:
    """encode_dataset with the older argument names and behaviour: add_eot=False is eot=None, the
    output's folder is created if missing, and progress(nbytes, ntokens) receives the bytes and
    tokens done since its previous call."""
    files = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    if not files:
        raise ValueError("no input files")
    for f in files:
        if not is_url(os.fspath(f)) and os.fspath(f) != "-" and Path(f).is_dir():
            raise ValueError(f"{f}: is a directory")
    eot = options.pop("eot", "auto" if add_eot else None)
    expand_inputs(files)  # missing inputs are refused before the folder is made
    if not is_url(os.fspath(output)) and options.get("shard_size") is None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
    done = [0, 0]  # bytes and tokens already passed to progress

    def report_increments(state: Progress) -> None:
        progress(state.bytes - done[0], state.tokens - done[1])
        done[:] = [state.bytes, state.tokens]

    return encode_dataset(tok, files, output, separator=separator, eot=eot, num_threads=num_threads,
                          overwrite=overwrite, errors=errors,
                          progress=None if progress is None else report_increments, **options)


