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
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from . import _core
from .vocab_cache import write_atomic

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
        ray.init(address=address, runtime_env={"env_vars": env} if env else None)
    return ray


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
    from .train import _Counting, _NoProgress

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
    from .train import DEFAULT_CHUNK_SIZE, _check_path, _Plan, _sources, _workers

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


def _encode_shard(tok, path, start: int, end: int, final: bool, separator, eot, errors: str, out_path: str,
                  threads: int, crash_once) -> int:
    """Encodes bytes [start, end) of a file into out_path (raw ids); returns the number of ids."""
    from .dataset import BATCH_CHARS, _encode_flat, _segments_of, dtype_for

    _crash_if_asked(crash_once, "encode")
    dtype = dtype_for(tok.n_vocab)
    out_dir = os.path.dirname(out_path)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix="." + os.path.basename(out_path) + ".", suffix=".partial")
    count = 0
    try:
        with os.fdopen(fd, "wb") as out, io.TextIOWrapper(
            io.BufferedReader(_RangeReader(path, start, end)), encoding="utf-8", errors=errors, newline=""
        ) as text:
            batch: list[tuple[str, bool]] = []
            chars = 0
            try:
                for item in _segments_of(text, separator, tok.special_tokens_set, final):
                    batch.append(item)
                    chars += len(item[0])
                    if chars >= BATCH_CHARS:
                        ids = _encode_flat(tok, batch, eot, threads)
                        ids.astype(dtype, copy=False).tofile(out)
                        count += len(ids)
                        batch, chars = [], 0
                if batch:
                    ids = _encode_flat(tok, batch, eot, threads)
                    ids.astype(dtype, copy=False).tofile(out)
                    count += len(ids)
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}: not UTF-8 ({e.reason} in bytes {start}..{end}); "
                                 "pass errors='replace' to replace invalid bytes") from None
        os.replace(tmp, out_path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return count


def encode_files_ray(
    tok,
    files: Iterable[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    separator: str | None = None,
    add_eot: bool = True,
    errors: str = "strict",
    shard_size: int = DEFAULT_RANGE_SIZE,
    num_threads: int = 1,
    overwrite: bool = False,
    address: str | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    _crash_once=None,
) -> dict:
    """Encodes files on Ray into out_dir: one raw ids file per shard and index.json; returns the index.

    Each file is cut into shards of about shard_size bytes at safe cuts (named split patterns; with a
    custom pattern or a normalizer each file is one shard). The ids, shards concatenated in index order, are those of
    dataset.encode_files(tok, files, ..., separator=, add_eot=) (`read_shards` does that). The
    tokenizer is sent to the workers pickled (a named encoding by its name: the workers load it from
    their own cache, so TOKENFORGE_CACHE_DIR / TIKTOKEN_CACHE_DIR must be valid there).
    num_threads is the native threads (and Ray CPUs) of each task."""
    from .dataset import dtype_for

    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive int, got {shard_size!r}")
    if errors not in ("strict", "replace"):
        raise ValueError(f'errors must be "strict" or "replace", got {errors!r}')
    if separator is not None and (not isinstance(separator, str) or not separator):
        raise ValueError(f"separator must be a non-empty str or None, got {separator!r}")
    files = [Path(f).absolute() for f in files]
    if not files:
        raise ValueError("no input files")
    for f in files:
        if f.is_dir():
            raise ValueError(f"{f}: is a directory")
        if not f.exists():
            raise FileNotFoundError(f"{f}: no such file")
    out_dir = Path(out_dir).absolute()
    index_path = out_dir / INDEX_NAME
    if index_path.exists() and not overwrite:
        raise FileExistsError(f"{index_path} already exists; pass overwrite=True to replace it")
    eot = None
    if add_eot:
        eot = tok.eot_token if "<|endoftext|>" in tok.special_tokens_set else None
        if eot is None:
            raise ValueError("the tokenizer has no <|endoftext|> token; pass add_eot=False")
    dtype = dtype_for(tok.n_vocab)
    out_dir.mkdir(parents=True, exist_ok=True)

    # Shards: (source, start, end, final). Cuts for encoding ignore special tokens (encode_ordinary
    # treats them as text) and keep away from the separator.
    # Unicode normalization (a tokenizer's normalizer) is applied to each segment; cuts other than the
    # local path's have not been shown safe for it, so such a tokenizer gets one shard per file too.
    splittable = tok._native_pattern >= 0 and getattr(tok, "_normalizer", None) is None
    cutter = _core.PieceCounter(tok._native_pattern, []) if splittable else None
    avoid = separator.encode("utf-8") if separator else None
    shards = []
    for f in files:
        size = f.stat().st_size
        ranges = file_ranges(f, size, shard_size, cutter, avoid=avoid) if cutter is not None else [(0, size)]
        ranges = ranges or [(0, 0)]  # an empty file is still a document (its eot)
        for j, (s, e) in enumerate(ranges):
            shards.append((f, s, e, j == len(ranges) - 1))

    ray = connect(address)
    _check_cpus(ray, num_threads)
    encode = ray.remote(_encode_shard).options(num_cpus=num_threads, max_retries=max_retries,
                                               retry_exceptions=False)
    tok_ref = ray.put(tok)
    names = [f"shard-{i:06d}.bin" for i in range(len(shards))]
    refs = [encode.remote(tok_ref, str(f), s, e, final, separator, eot, errors, str(out_dir / n), num_threads,
                          _crash_once)
            for n, (f, s, e, final) in zip(names, shards)]
    counts = _get(ray, refs)
    index = {
        "format": "tokenforge-shards",
        "dtype": dtype.name,
        "byteorder": "little" if np.little_endian else "big",
        "count": int(sum(counts)),
        "tokenizer": getattr(tok, "name", "tokenizer"),
        "n_vocab": tok.n_vocab,
        "eot_token": eot,
        "separator": separator,
        "shards": [
            {"file": n, "source": str(f), "start": s, "end": e, "count": int(c)}
            for n, (f, s, e, _), c in zip(names, shards, counts)
        ],
    }
    stale = set()
    if index_path.exists():  # overwrite: shards of the previous run that this one did not rewrite
        try:
            stale = {s["file"] for s in json.loads(index_path.read_text())["shards"]} - set(names)
        except (ValueError, KeyError, TypeError):
            pass
    write_atomic(index_path, json.dumps(index, indent=1).encode())
    for name in stale:
        if os.path.basename(name) == name:
            try:
                os.unlink(out_dir / name)
            except OSError:
                pass
    return index


def read_shards(out_dir: str | os.PathLike) -> np.ndarray:
    """The ids of an encode_files_ray output, shards concatenated in index order (read into memory)."""
    out_dir = Path(out_dir)
    index = json.loads((out_dir / INDEX_NAME).read_text())
    dtype = np.dtype(index["dtype"])
    parts = [np.fromfile(out_dir / s["file"], dtype=dtype) for s in index["shards"]]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
