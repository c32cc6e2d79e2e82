"""Counting and encoding on a Ray cluster, with the same results as the local paths.

    tok = tokenforge.train_bpe(["/shared/a.txt", "/shared/b.txt"], 32000, engine="ray", ray_address="auto")
    index = encode_files_ray(tok, ["/shared/a.txt"], "/shared/out")    # shards + index.json
    ids = read_shards("/shared/out")                                    # the same ids as encode_files

Training (`train_bpe_ray`, what `train_bpe(..., engine="ray")` calls):

1. The driver cuts every file into byte ranges of about `range_size` bytes, at *safe cuts*
   (`PieceCounter.first_cut`, the rule the local counter uses between its chunks: no piece straddles
   a cut). It reads only a small window around each cut.
2. One Ray task per range counts its bytes with the local counter (`train._Counting`, so special
   tokens, custom patterns and `errors` behave as locally) and returns a `PieceTable`: the unique
   pieces back to back in one uint8 array, their end offsets and their 64-bit counts.
3. The tables are summed as a tree: tasks that each merge `fanout` tables, level after level, until
   one is left; Ray starts a merge as soon as its inputs exist, and the driver only ever receives the
   root.
4. The merge loop runs once, on the driver, on the root table (the same native trainer as locally).

The counts are those of the whole files, so the merges are identical to `train_bpe` on the same files.

Encoding (`encode_files_ray`): each file is cut into shards at safe cuts of the tokenizer's pattern
(away from the document separator), each shard is encoded by a task into its own `.bin` file, and
`index.json` lists the shards in order with their counts and dtype. The shards concatenated in index
order are exactly `dataset.encode_files`'s output on the same files.

Tasks are retried by Ray when their worker dies (`max_retries`); they are idempotent (a table is a
return value; a shard is written to a temporary file and renamed), so a retry gives the same result.
Errors in the input (invalid UTF-8, a missing file) are not retried.

What this does *not* do: train on an iterable of str (the workers read files, which must be on
storage every node reads at the same path); cut files into ranges when encoding with a custom split
pattern or a Unicode normalizer (each file is then one shard); partition the reduce (the root table is built by one task and
the merge loop runs on the driver: both need memory for all the unique pieces).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from dataclasses import dataclass
import sys
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import numpy as np

from . import _core
from .outputs import write_atomic
from .train import DEFAULT_CHUNK_SIZE, ENGINES, _check_path, _Counting, _NoProgress, _Plan, _sources, _workers

DEFAULT_RANGE_SIZE = 64 << 20  # bytes of a file per counting task / encoding shard
DEFAULT_FANOUT = 4  # tables merged by one reduce task
DEFAULT_MAX_RETRIES = 3  # Ray retries of a task whose worker died
_CUT_WINDOW = 1 << 16  # bytes read at a time when looking for a cut
INDEX_NAME = "index.json"
# Environment variables forwarded to the workers when this module starts Ray: where the vocabularies
# of named encodings are cached, and whether downloading them is allowed.
FORWARDED_ENV = ("TOKENFORGE_CACHE_DIR", "TOKENFORGE_OFFLINE", "TIKTOKEN_CACHE_DIR")

__all__ = ["PieceTable", "encode_files_ray", "read_shards", "require_ray", "train_bpe_ray"]


# --------------------------------------------------------------------------------------------------
# Ray


def require_ray():
    """Imports Ray, or raises ImportError saying what to install."""
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            'engine="ray" needs Ray, which is an optional extra: pip install "tokenforge[ray]" '
            f"(or pip install ray) ({e})"
        ) from None
    return ray


def connect(address: str | None = None):
    """Ray, initialized: the running session if there is one, else ray.init(address) with
    FORWARDED_ENV passed to the workers."""
    ray = require_ray()
    if not ray.is_initialized():
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        options = {"runtime_env": {"env_vars": env}} if env else {}
        if address is None and not os.environ.get("RAY_ADDRESS"):
            _loopback_only(options)
        ray.init(address=address, **options)
    return ray


def _loopback_only(options: dict) -> None:
    """Options (and the switch Ray reads) for a new local instance whose services all listen on
    127.0.0.1. Ray binds its gRPC servers to every interface and replaces a loopback node address by
    the machine's unless its "cluster" mode is off (what it does on macOS and Windows), so that mode
    is turned off, in this process and in the processes Ray starts from it."""
    import ray._private.ray_constants as constants

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    constants.ENABLE_RAY_CLUSTER = False
    options.update(_node_ip_address="127.0.0.1", include_dashboard=False)


def _check_cpus(ray, cpus: int) -> None:
    """A task asking for more CPUs than any node has would wait forever: say so instead."""
    most = max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0)
    if cpus > most:
        raise ValueError(f"each task asks for {cpus} CPUs (its native threads: num_workers / num_threads) "
                         f"but the largest node of the Ray cluster has {most:g}")


def _get(ray, refs):
    """ray.get, with an error in the input (raised in a task) re-raised as itself, not wrapped."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        cause = getattr(e, "cause", None)
        if isinstance(cause, (ValueError, TypeError, OSError)):
            raise cause from None
        raise


def _crash_if_asked(crash_once, kind: str) -> None:
    """Fault injection for the tests: crash_once = (kind, marker path). The first task of that kind to
    create the marker kills its own worker process (as a machine failure would); Ray retries it."""
    if crash_once is None or crash_once[0] != kind:
        return
    try:
        fd = os.open(crash_once[1], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    os._exit(1)


# --------------------------------------------------------------------------------------------------
# Tables of pre-token counts


@dataclass(frozen=True)
class PieceTable:
    """A pre-token count in three flat arrays (what tasks return: no Python object per piece; Ray
    moves numpy arrays without copying them into Python objects).

    data: uint8, the pieces back to back; ends: int64, where each piece ends in data;
    counts: uint64, the count of each piece. len() is the number of pieces."""

    data: np.ndarray
    ends: np.ndarray
    counts: np.ndarray

    @classmethod
    def of_counter(cls, counter) -> "PieceTable":
        return cls(*counter.table())

    def __len__(self) -> int:
        return len(self.counts)

    def items(self) -> list[tuple[bytes, int]]:
        """(piece, count) pairs: for looking at a table, not for large ones."""
        blob = self.data.tobytes()
        ends = self.ends.tolist()
        return list(zip([blob[s:e] for s, e in zip([0] + ends[:-1], ends)], self.counts.tolist()))

    def add_to(self, counter) -> None:
        counter.add_table(self.data, self.ends, self.counts)

    @property
    def nbytes(self) -> int:
        return self.data.nbytes + self.ends.nbytes + self.counts.nbytes


def merge_tables(tables: Iterable[PieceTable]):
    """The sum of tables, as a native PieceCounter."""
    counter = _core.PieceCounter(0, [])
    for t in tables:
        t.add_to(counter)
    return counter


# --------------------------------------------------------------------------------------------------
# Cutting files into ranges


def _next_cut(f, size: int, pos: int, cutter, avoid: bytes | None = None) -> int:
    """The first safe cut after pos, reading forward in small windows, or size if there is none.
    With avoid, a cut within len(avoid) + 4 bytes of an occurrence of avoid is skipped."""
    margin = len(avoid) + 4 if avoid else 0
    window = max(_CUT_WINDOW, 4 * margin)
    while pos < size:
        base = max(0, pos - margin)  # margin bytes before pos, to see an occurrence of avoid there
        f.seek(base)
        block = f.read(min(window, size - base))
        at_end = base + len(block) >= size
        hi = len(block) if at_end else len(block) - margin
        c = pos - base
        while True:
            c = cutter.first_cut(block, c, hi)  # start < c < hi, seeing only block[start:hi]
            if not c:
                break
            if not avoid or block.find(avoid, max(0, c - margin), c + margin) < 0:
                return base + c
        if at_end:
            break
        pos = base + hi
    return size


def file_ranges(path, size: int, range_size: int, cutter, *, avoid: bytes | None = None) -> list[tuple[int, int]]:
    """[start, end) ranges covering the file, of about range_size bytes, each end a safe cut or the
    end of the file. An empty file has no range."""
    ranges = []
    start = 0
    with open(path, "rb") as f:
        while start < size:
            target = start + range_size
            end = size if target >= size else _next_cut(f, size, target, cutter, avoid)
            ranges.append((start, end))
            start = end
    return ranges


# --------------------------------------------------------------------------------------------------
# Training


def _count_range(plan, path, start: int, end: int, chunk_size: int, errors: str, threads: int, crash_once):
    _crash_if_asked(crash_once, "count")
    counting = _Counting(plan, threads)
    counting.count_file(path, chunk_size, errors, _NoProgress(), range_start=start, range_end=end)
    return PieceTable.of_counter(counting.finish())


def _merge(crash_once, *tables: PieceTable) -> PieceTable:
    _crash_if_asked(crash_once, "merge")
    return PieceTable.of_counter(merge_tables(tables))


def count_files_ray(
    plan,
    paths: Sequence,
    *,
    threads: int = 1,
    chunk_size: int,
    errors: str = "strict",
    range_size: int = DEFAULT_RANGE_SIZE,
    fanout: int = DEFAULT_FANOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    address: str | None = None,
    stats: dict | None = None,
    _crash_once=None,
):
    """The pre-token count of the files as a native PieceCounter, counted and reduced on Ray.

    plan is a train._Plan (pattern, special tokens). stats, if given, receives the number of ranges,
    of reduce tasks and levels, and the root table's size."""
    if fanout < 2:
        raise ValueError(f"fanout must be at least 2, got {fanout!r}")
    if isinstance(range_size, bool) or not isinstance(range_size, int) or range_size < 1:
        raise ValueError(f"range_size must be a positive int, got {range_size!r}")
    ray = connect(address)
    _check_cpus(ray, threads)
    cutter = _core.PieceCounter(max(plan.native, 0), [s.encode("utf-8") for s in plan.specials])
    ranges = []
    for path in paths:
        path = os.path.abspath(os.fspath(path))
        for start, end in file_ranges(path, os.path.getsize(path), range_size, cutter):
            ranges.append((path, start, end))
    if not ranges:
        return _core.PieceCounter(0, [])
    count = ray.remote(_count_range).options(num_cpus=threads, max_retries=max_retries, retry_exceptions=False)
    merge = ray.remote(_merge).options(max_retries=max_retries, retry_exceptions=False)
    plan_ref = ray.put(plan)
    level = [count.remote(plan_ref, p, s, e, chunk_size, errors, threads, _crash_once) for p, s, e in ranges]
    merges = levels = 0
    while len(level) > 1:
        level = [merge.remote(_crash_once, *level[i:i + fanout]) for i in range(0, len(level), fanout)]
        merges += len(level)
        levels += 1
    root = _get(ray, level[0])
    if stats is not None:
        stats.update(ranges=len(ranges), merge_tasks=merges, merge_levels=levels, unique_pieces=len(root), table_bytes=root.nbytes)
    return merge_tables([root])


def train_bpe_ray(
    source,
    vocab_size: int,
    *,
    pattern: str = "cl100k",
    special_tokens: Iterable[str] = (),
    min_frequency: int = 1,
    num_workers: int | None = None,
    chunk_size: int | None = None,
    errors: str = "strict",
    verbose: bool = True,
    name: str = "tokenizer",
    address: str | None = None,
    range_size: int = DEFAULT_RANGE_SIZE,
    fanout: int = DEFAULT_FANOUT,
    max_retries: int = DEFAULT_MAX_RETRIES,
    stats: dict | None = None,
    _crash_once=None,
):
    """train_bpe with counting on Ray (see the module docstring); the same arguments and result.

    num_workers is the native threads of each counting task (default 1: one task per CPU);
    range_size the bytes per task; fanout the tables merged per reduce task."""
    plan = _Plan(vocab_size, pattern, special_tokens, min_frequency, verbose, name)
    threads = 1 if num_workers is None else _workers(num_workers)
    chunk_size = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if errors not in ("strict", "replace"):
        raise ValueError(f'errors must be "strict" or "replace", got {errors!r}')
    paths, _ = _sources(source)
    if paths is None:
        raise TypeError('engine="ray" trains on files (a path or a list of paths on storage every node reads), '
                        "not on an iterable of str")
    for path in paths:
        _check_path(path)
    counter = count_files_ray(plan, paths, threads=threads, chunk_size=chunk_size, errors=errors,
                              range_size=range_size, fanout=fanout, max_retries=max_retries, address=address,
                              stats=stats, _crash_once=_crash_once)
    return plan.train(counter)


ENGINES["ray"] = train_bpe_ray  # train_bpe(..., engine="ray")


# --------------------------------------------------------------------------------------------------
# Encoding


class _RangeReader(io.RawIOBase):
    """Bytes [start, end) of a file, as a raw stream (for io.TextIOWrapper)."""

    def __init__(self, path, start: int, end: int):
        self._f = open(path, "rb")
        self._f.seek(start)
        self._left = end - start

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self._left)
        if n <= 0:
            return 0
        got = self._f.readinto(memoryview(b)[:n])
        self._left -= got
        return got

    def close(self) -> None:
        self._f.close()
        super().close()


def _open_part(tok, out_path: str):
    """The partial file of a shard: beside its target, or in a local temporary folder when the
    target is an fsspec URL (uploaded by _finish_part). Creates a local output folder: a worker may
    not see the driver's file system."""
    from .dataset import _Part, dtype_for
    from .dataset_readers import is_url

    if is_url(out_path):
        import tempfile

        local = Path(tempfile.mkdtemp(prefix="tokenforge-shard-")) / out_path.rsplit("/", 1)[-1]
        return _Part(local, dtype_for(tok.n_vocab))
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    return _Part(Path(out_path), dtype_for(tok.n_vocab))


def _finish_part(part, out_path: str) -> dict:
    from . import outputs
    from .dataset_readers import is_url, require_fsspec

    info = part.close()
    if is_url(out_path):
        import shutil

        fs, _, (target,) = require_fsspec(out_path).get_fs_token_paths(out_path)
        try:
            fs.makedirs(target.rsplit("/", 1)[0], exist_ok=True)  # a local file system needs the folder
            fs.put_file(str(part.path), target)  # an object store makes the object appear whole
        finally:
            shutil.rmtree(part.path.parent, ignore_errors=True)
    else:
        outputs.commit([(part.path, out_path)])
    return info


def _write_part(tok, out_path: str, encoder, segments, eot) -> dict:
    """Encodes (text, ends_document) segments on the encoder's threads (a reader thread reading
    ahead) into the shard out_path, an end-of-text id after each document if eot is not None;
    returns its index entry (count, bytes, crc32). On any error the partial file is removed."""
    from .dataset import batched, encoded

    part = _open_part(tok, out_path)
    try:
        for _, ids, _ in encoded(encoder, batched(segments, eot)):
            part.write(ids)
        return _finish_part(part, out_path)
    except BaseException:
        part.discard()
        raise


def _encode_shard(tok, path, start: int, end: int, final: bool, separator, eot, errors: str, out_path: str,
                  threads: int, crash_once) -> dict:
    """Encodes bytes [start, end) of a file into out_path (raw ids); returns its index entry.
    Creates the output folder (a worker may not see the driver's file system)."""
    from .dataset import _Encoder
    from .dataset_readers import text_blocks, text_segments

    _crash_if_asked(crash_once, "encode")
    encoder = _Encoder(tok, threads)
    cut = encoder.cut if encoder.cuttable else None
    with io.BufferedReader(_RangeReader(path, start, end)) as raw:
        blocks = text_blocks(raw, f"{path} (bytes {start}..{end})", errors)
        return _write_part(tok, out_path, encoder, text_segments(blocks, separator, cut, final), eot)


def _encode_source(tok, name: str, input_format: str, field: str, separator, eot, errors: str, out_path: str,
                   threads: int, crash_once) -> dict:
    """Encodes one whole source (JSON lines, Parquet, compressed, a URL) into out_path with the
    dataset readers; returns its index entry."""
    from .dataset import _Encoder
    from .dataset_readers import Source, segments

    _crash_if_asked(crash_once, "encode")
    encoder = _Encoder(tok, threads)
    cut = encoder.cut if encoder.cuttable else None
    return _write_part(tok, out_path, encoder, segments(Source(name, None), fmt=input_format, field=field,
                                                         separator=separator, errors=errors, cut=cut), eot)


def encode_files_ray(
    tok,
    files: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    separator: str | None = None,
    add_eot: bool = True,
    eot="auto",
    input_format: str = "auto",
    field: str = "text",
    errors: str = "strict",
    shard_size: int = DEFAULT_RANGE_SIZE,
    num_threads: int = 1,
    overwrite: bool = False,
    resume: bool = False,
    address: str | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    _crash_once=None,
) -> dict:
    """Encodes files on Ray into out_dir: one raw ids file per shard and index.json; returns the index.

    Inputs are read with the dataset readers (dataset_readers: files, folders, globs, fsspec URLs;
    text, JSON lines, Parquet, gzip / zstd). A plain local text file is cut into shards of about
    shard_size bytes at safe cuts (named split patterns; with a custom pattern or a normalizer each
    file is one shard); any other source is one shard. The ids, shards concatenated in index order,
    are those of dataset.encode_dataset on the same inputs (`read_shards` does that). The tokenizer
    is sent to the workers pickled (a named encoding by its name: the workers load it from their own
    cache, so TOKENFORGE_CACHE_DIR / TIKTOKEN_CACHE_DIR must be valid there). out_dir is a folder
    every node sees, or an fsspec URL (workers upload their shards); workers create a local folder
    themselves. index.json is rewritten as shards complete ("complete": false until
    the end), so resume=True after a killed driver encodes only the shards it does not list.
    num_threads is the native threads (and Ray CPUs) of each task."""
    from .dataset import INDEX_NAME as _INDEX, SHARDS_FORMAT, dtype_for, resolve_eot, tokenizer_fingerprint
    from .dataset_readers import _read_head, compression_of, expand_inputs, format_of, is_url

    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
    if errors not in ("strict", "replace"):
        raise ValueError(f'errors must be "strict" or "replace", got {errors!r}')
    if separator is not None and (not isinstance(separator, str) or not separator):
        raise ValueError(f"separator must be a non-empty str or None, got {separator!r}")
    names = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
    if not names:
        raise ValueError("no input files")
    if "-" in names:
        raise ValueError("engine ray reads files, not standard input")
    sources = expand_inputs([n if is_url(n) else os.path.abspath(n) for n in names])
    folder = _OutputFolder(out_dir)
    index_path = folder.name(_INDEX)
    done: dict[tuple, dict] = {}
    if folder.exists(_INDEX):
        if resume:
            old = folder.read_index()
            for entry in old["shards"]:
                done[(entry.get("source"), entry.get("start"), entry.get("end"))] = entry
        elif not overwrite:
            raise FileExistsError(f"{index_path} already exists; pass overwrite=True (--overwrite) to replace it, "
                                  "or resume=True (--resume) to continue it")
    eot_id = resolve_eot(tok, eot if add_eot else None)
    dtype = dtype_for(tok.n_vocab)

    # Shards: (source, start, end, final, whole). Cuts for encoding ignore special tokens (encode_ordinary
    # treats them as text) and keep away from the separator. Unicode normalization (a tokenizer's
    # normalizer) is applied to each segment; cuts other than the local path's have not been shown
    # safe for it, so such a tokenizer gets one shard per file too.
    splittable = getattr(tok, "_native_pattern", -1) >= 0 and getattr(tok, "_normalizer", None) is None
    cutter = _core.PieceCounter(tok._native_pattern, []) if splittable else None
    avoid = separator.encode("utf-8") if separator else None
    shards = []
    for src in sources:
        plain = not is_url(src.name) and format_of(src.name, input_format) == "text"
        if plain:
            with open(src.name, "rb") as f:
                plain = compression_of(_read_head(f)) is None
        if not plain:
            shards.append((src.name, None, None, True, True))
            continue
        size = src.size
        ranges = file_ranges(src.name, size, shard_size, cutter, avoid=avoid) if cutter is not None else [(0, size)]
        ranges = ranges or [(0, 0)]  # an empty file is still a document (its eot)
        for j, (s, e) in enumerate(ranges):
            shards.append((src.name, s, e, j == len(ranges) - 1, False))
    header = {
        "format": SHARDS_FORMAT,
        "version": 1,
        "dtype": dtype.name,
        "byteorder": sys.byteorder,
        "tokenizer": getattr(tok, "name", None) or type(tok).__name__,
        "tokenizer_sha256": tokenizer_fingerprint(tok),  # (a name alone let another tokenizer's ids in)
        "n_vocab": tok.n_vocab,
        "eot_token": eot_id,
        "separator": separator,
    }
    if resume and done and any(old.get(k) != v for k, v in header.items() if k not in ("format", "version")
                               and (k != "tokenizer_sha256" or k in old)):  # (an index written before it was kept)
        raise ValueError(f"{index_path}: cannot resume with another tokenizer, dtype, eot or separator; "
                         "pass overwrite=True")
    stale = set()
    if folder.exists(_INDEX) and not resume:  # overwrite: every shard of the previous run goes
        try:
            stale = {s.get("file") for s in folder.read_index()["shards"]}
        except ValueError:
            pass

    ray = connect(address)
    _check_cpus(ray, num_threads)
    encode_range = ray.remote(_encode_shard).options(num_cpus=num_threads, max_retries=max_retries,
                                                     retry_exceptions=False)
    encode_source = ray.remote(_encode_source).options(num_cpus=num_threads, max_retries=max_retries,
                                                       retry_exceptions=False)
    tok_ref = ray.put(tok)
    file_names = [f"shard-{i:06d}.bin" for i in range(len(shards))]
    entries: list[dict | None] = [None] * len(shards)
    pending = {}
    for k, (name, s, e, final, whole) in enumerate(shards):
        previous = done.get((name, s, e))
        if previous is not None and previous.get("file") == file_names[k] and folder.exists(file_names[k]):
            entries[k] = previous
            continue
        out_path = folder.name(file_names[k])
        if whole:
            ref = encode_source.remote(tok_ref, name, input_format, field, separator, eot_id, errors, out_path,
                                       num_threads, _crash_once)
        else:
            ref = encode_range.remote(tok_ref, name, s, e, final, separator, eot_id, errors, out_path, num_threads,
                                      _crash_once)
        pending[ref] = k

    def write_index(complete: bool) -> dict:
        listed = [x for x in entries if x is not None]
        index = dict(header, complete=complete, count=int(sum(x["count"] for x in listed)), shards=listed)
        folder.write(_INDEX, json.dumps(index, indent=1).encode())
        return index

    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        k = pending.pop(ready[0])
        info = _get(ray, ready[0])
        name, s, e, _, _ = shards[k]
        entries[k] = {"file": file_names[k], "source": name, "start": s, "end": e, **{x: int(v) for x, v in info.items()}}
        write_index(complete=False)
    index = write_index(complete=True)
    for name in stale - set(file_names):
        if isinstance(name, str) and os.path.basename(name) == name and name not in ("", ".", ".."):
            folder.remove(name)
    return index


class _OutputFolder:
    """The output folder of encode_files_ray: a local path (every node sees it) or an fsspec URL
    (s3://, gs://: workers upload their shards, the driver writes index.json last)."""

    def __init__(self, where):
        from .dataset_readers import is_url, require_fsspec

        where = os.fspath(where)
        self.url = is_url(where)
        if self.url:
            self.fs, _, (self.root,) = require_fsspec(where).get_fs_token_paths(where)
            self.prefix = where.rstrip("/")
        else:
            self.root = Path(where).absolute()

    def name(self, file: str) -> str:
        return f"{self.prefix}/{file}" if self.url else str(self.root / file)

    def exists(self, file: str) -> bool:
        return self.fs.exists(f"{self.root}/{file}") if self.url else (self.root / file).exists()

    def read_index(self) -> dict:
        from .dataset import INDEX_NAME, _read_index

        if not self.url:
            return _read_index(self.root)
        try:
            index = json.loads(self.fs.cat(f"{self.root}/{INDEX_NAME}"))
        except ValueError as e:
            raise ValueError(f"{self.name(INDEX_NAME)}: not valid JSON ({e})") from None
        if not isinstance(index, dict) or not isinstance(index.get("shards"), list):
            raise ValueError(f"{self.name(INDEX_NAME)}: no list of shards")
        return index

    def write(self, file: str, data: bytes) -> None:
        if self.url:
            self.fs.makedirs(self.root, exist_ok=True)
            self.fs.pipe(f"{self.root}/{file}", data)
        else:
            write_atomic(self.root / file, data)

    def remove(self, file: str) -> None:
        try:
            if self.url:
                self.fs.rm(f"{self.root}/{file}")
            else:
                os.unlink(self.root / file)
        except (OSError, FileNotFoundError):
            pass


def read_shards(out_dir: str | os.PathLike) -> np.ndarray:
    """The ids of an encode_files_ray output, shards concatenated in index order (read into memory)."""
    from .dataset import read_shards as _read

    return _read(out_dir)
