"""The files of a dataset: writing them whole or not at all, and reading them back checked.

- one file per split (`OUT.bin` / `OUT.npy` and `OUT_val.bin`), each with a JSON sidecar
  `OUT.bin.json` naming dtype, count, bytes, crc32, tokenizer and sources, committed together at the
  end (tokenforge.outputs: a crash between the renames leaves a data file without a sidecar, which
  the readers refuse, never a new data file beside an old sidecar);
- shards (`train-000000.bin`, `val-000000.bin`, ...) and `index.json`, rewritten at each checkpoint
  (all open shards closed together at a document end), so that an interrupted run resumes after its
  last complete shard.

Readers accept only the integer dtypes written (uint16, uint32), only shard names that are plain
file names inside the folder, and a data file whose size matches its sidecar (verify=True also
compares the crc32).
"""

from __future__ import annotations

import json
import os
import re
import threading
import zlib
from pathlib import Path

import numpy as np

from . import outputs

INDEX_NAME = "index.json"
SHARDS_FORMAT = "tokenforge-shards"
READABLE_DTYPES = ("uint16", "uint32")  # what encode writes, and all that readers accept
_SHARD_NAME = re.compile(r"(?:train|val)-[0-9]{6}\.bin")  # the shards encode_dataset writes


def dtype_for(n_vocab: int) -> np.dtype:
    return np.dtype(np.uint16) if n_vocab <= 1 << 16 else np.dtype(np.uint32)


# --------------------------------------------------------------------------------------------------
# Writing


class _BackgroundSync:
    """Sends a file's data to the disk while it is being written: after every SYNC_EVERY bytes, a
    thread calls fdatasync on it (the GIL released) while encoding goes on, so the fsync before the
    commit (outputs.commit) finds little left to write. It found all of it before: the kernel
    starts writing dirty pages on its own only past a tenth of the memory, and 58 MB of ids took
    33-39 ms to flush after the last batch, on one thread with both cores otherwise idle (a corpus
    of gigabytes: seconds). An error of the background call (a full disk, EIO) is raised by
    wait(), before the commit: a later fsync may not report it again."""

    SYNC_EVERY = 32 << 20

    def __init__(self, file):
        self.file = file
        self.unsynced = 0
        self.thread: threading.Thread | None = None
        self.error: OSError | None = None

    def wrote(self, nbytes: int) -> None:
        self.unsynced += nbytes
        if self.unsynced < self.SYNC_EVERY or (self.thread is not None and self.thread.is_alive()):
            return
        self.file.flush()  # (the thread only calls fdatasync: the file object stays this thread's)
        self.unsynced = 0
        self.thread = threading.Thread(target=self._sync, args=(self.file.fileno(),), name="tokenforge-sync",
                                       daemon=True)
        self.thread.start()

    def _sync(self, fd: int) -> None:
        try:
            getattr(os, "fdatasync", os.fsync)(fd)  # (macOS has no fdatasync)
        except OSError as e:
            self.error = e

    def wait(self, check: bool = True) -> None:
        """Waits for the call under way (before the file is closed: its descriptor must outlive it)."""
        if self.thread is not None:
            self.thread.join()
            self.thread = None
        if check and self.error is not None:
            raise self.error


class _Part:
    """A data file being written: a partial file, its count and crc32; `.npy` gets its header first
    (rewritten with the final count at the end)."""

    NPY_HEADER = 128

    def __init__(self, target: Path, dtype: np.dtype):
        self.target, self.dtype = target, dtype
        self.npy = target.suffix == ".npy"
        self.file, self.path = outputs.partial_file(target)
        self.sync = _BackgroundSync(self.file)
        self.count = 0
        self.crc = 0
        if self.npy:
            self.file.write(self._npy_header(0))

    def _npy_header(self, count: int) -> bytes:
        descr = np.lib.format.dtype_to_descr(self.dtype)
        text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({count},), }}"
        text = text.ljust(self.NPY_HEADER - 10 - 1) + "\n"
        return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")

    def write(self, ids: np.ndarray) -> None:
        data = ids.astype(self.dtype, copy=False)
        buf = memoryview(np.ascontiguousarray(data)).cast("B")
        self.file.write(buf)
        self.crc = zlib.crc32(buf, self.crc)
        self.count += len(data)
        self.sync.wrote(len(buf))

    def close(self) -> dict:
        self.sync.wait()
        if self.npy:
            self.file.seek(0)
            self.file.write(self._npy_header(self.count))
        self.file.close()
        return {"count": self.count, "bytes": self.count * self.dtype.itemsize, "crc32": self.crc}

    def discard(self) -> None:
        try:
            self.sync.wait(check=False)
            self.file.close()
        finally:
            outputs.discard(self.path)


def _split_name(output: Path, split: str) -> Path:
    return output if split == "train" else output.with_name(f"{output.stem}_{split}{output.suffix}")


class _SingleOutput:
    """One file per split, committed together with their sidecars at the end."""

    def __init__(self, output: Path, dtype, splits, overwrite: bool):
        self.targets = {s: _split_name(output, s) for s in splits}
        for target in self.targets.values():
            sidecar = _sidecar(target)
            if not overwrite and (target.exists() or sidecar.exists()):
                raise FileExistsError(f"{target} already exists; pass --overwrite (overwrite=True) to replace it")
        self.parts = {}
        for s, target in self.targets.items():
            self.parts[s] = _Part(target, dtype)
        self.documents = 0
        # Overwriting a run that had a validation split with one that has none: its old _val file
        # (tokenforge's: it has a sidecar) goes too, or it would sit beside ids of another run.
        self.stale = []
        if overwrite and "val" not in self.targets:
            old_val = _split_name(output, "val")
            if _sidecar(old_val).is_file():
                self.stale = [_sidecar(old_val), old_val]

    def write(self, split: str, ids: np.ndarray) -> None:
        self.parts[split].write(ids)

    def document_done(self) -> None:
        self.documents += 1

    def finish(self, meta: dict) -> dict:
        pairs, retire, result = [], [], {}
        try:
            for s, part in self.parts.items():
                target = self.targets[s]
                info = dict(meta, format="npy" if part.npy else "bin", split=s, **part.close())
                info["bytes"] += part.NPY_HEADER if part.npy else 0
                sidecar = _sidecar(target)
                pairs += [(part.path, target), (_write_partial(sidecar, info), sidecar)]
                retire.append(sidecar)
                result[s] = info
        except BaseException:
            for partial, _ in pairs:
                outputs.discard(partial)
            raise
        _commit_or_discard(pairs, retire + self.stale)
        return result

    def abort(self) -> None:
        for part in self.parts.values():
            part.discard()


class _ShardedOutput:
    """Shards of about shard_size tokens per split in a folder, and index.json rewritten after each
    checkpoint (all open shards closed at a document end)."""

    per_document = True

    def __init__(self, folder: Path, dtype, splits, shard_size: int, header: dict, overwrite: bool, resume: bool,
                 publish=None):
        """publish(shards, index_path), if given, is called after each checkpoint with the paths of
        the shards just completed (a remote output uploads them, then the index)."""
        self.folder, self.dtype, self.splits, self.shard_size = folder, dtype, splits, shard_size
        self.publish = publish
        self.index_path = folder / INDEX_NAME
        self.header = header
        self.shards: list[dict] = []
        self.documents = 0
        self.skip = 0
        self.complete_index = None  # a finished run asked to resume: nothing to do (encode_dataset returns it)
        if self.index_path.exists():
            old = _read_index(folder)
            if resume:
                self._check_resumable(old)
                if old.get("complete"):
                    self.complete_index = old
                    return
                self.shards = old["shards"]
                self.documents = self.skip = old["documents"]
            elif not overwrite:
                raise FileExistsError(f"{self.index_path} already exists; pass --resume to continue it or "
                                      "--overwrite to replace it")
            else:  # the index goes first: never an index naming shards already removed
                self.index_path.unlink()
                for s in old.get("shards", []):
                    _remove_inside(folder, s.get("file"))
        folder.mkdir(parents=True, exist_ok=True)
        listed = {s["file"] for s in self.shards}
        for p in folder.glob("*-*.bin"):  # shards of a killed run after its last checkpoint
            if p.name not in listed and _SHARD_NAME.fullmatch(p.name):
                p.unlink()
        self.parts: dict[str, _Part] = {}
        self.next_number = {s: sum(1 for x in self.shards if x["split"] == s) for s in splits}

    def _check_resumable(self, old: dict) -> None:
        for key in ("dtype", "tokenizer", "tokenizer_sha256", "n_vocab", "eot_token", "sources", "val_fraction",
                    "shard_size"):
            if key == "tokenizer_sha256" and key not in old:  # (an index written before it was kept)
                continue
            if old.get(key) != self.header.get(key):
                raise ValueError(f"{self.index_path}: cannot resume: {key} was {old.get(key)!r}, now "
                                 f"{self.header.get(key)!r} (same inputs and options needed; or --overwrite)")

    def write(self, split: str, ids: np.ndarray) -> None:
        part = self.parts.get(split)
        if part is None and not len(ids):
            return
        if part is None:
            name = f"{split}-{self.next_number[split]:06d}.bin"
            part = self.parts[split] = _Part(self.folder / name, self.dtype)
        part.write(ids)

    def document_done(self) -> None:
        self.documents += 1
        part = self.parts.get("train")
        if part is not None and part.count >= self.shard_size:
            self.checkpoint(complete=False)

    def checkpoint(self, complete: bool) -> dict:
        pairs = []
        for split, part in self.parts.items():
            info = part.close()
            self.shards.append({"file": part.target.name, "split": split, "documents_end": self.documents, **info})
            self.next_number[split] += 1
            pairs.append((part.path, part.target))
        self.parts = {}
        index = dict(self.header, format=SHARDS_FORMAT, version=1, complete=complete, documents=self.documents,
                     count=sum(s["count"] for s in self.shards), shards=self.shards)
        try:
            index_partial = _write_partial(self.index_path, index)
        except BaseException:
            for partial, _ in pairs:
                outputs.discard(partial)
            raise
        _commit_or_discard(pairs + [(index_partial, self.index_path)], ())
        if self.publish is not None:
            self.publish([target for _, target in pairs], self.index_path)
        return index

    def finish(self, meta: dict) -> dict:
        self.header = dict(self.header, **meta)
        return self.checkpoint(complete=True)

    def abort(self) -> None:
        for part in self.parts.values():
            part.discard()


def _write_partial(target: Path, obj: dict) -> Path:
    """A partial file beside target holding obj as JSON (removed again if writing it fails)."""
    f, partial = outputs.partial_file(target)
    try:
        with f:
            f.write(json.dumps(obj, indent=1).encode())
    except BaseException:
        outputs.discard(partial)
        raise
    return partial


def _commit_or_discard(pairs, retire) -> None:
    """outputs.commit, and if it fails (a full disk at fsync), the partial files not yet renamed go."""
    try:
        outputs.commit(pairs, retire=retire)
    except BaseException:
        for partial, _ in pairs:
            outputs.discard(partial)
        raise


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _inside(folder: Path, name) -> Path:
    """folder / name, refusing a name that leaves the folder (absolute, .., a separator)."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"{folder / INDEX_NAME}: shard file {name!r} is not a plain file name inside the folder")
    return folder / name


def _remove_inside(folder: Path, name) -> None:
    try:
        os.unlink(_inside(folder, name))
    except (OSError, ValueError):
        pass


# --------------------------------------------------------------------------------------------------
# Reading


def _checked_dtype(meta: dict, where) -> np.dtype:
    name = meta.get("dtype") if isinstance(meta, dict) else None
    if name not in READABLE_DTYPES:
        raise ValueError(f"{where}: dtype {name!r} is not one that tokenforge writes ({', '.join(READABLE_DTYPES)})")
    dtype = np.dtype(name)
    order = meta.get("byteorder", "little" if np.little_endian else "big")
    if order not in ("little", "big"):
        raise ValueError(f"{where}: byteorder {order!r} is not little or big")
    return dtype.newbyteorder("<" if order == "little" else ">")


def _check_file(path: Path, info: dict, dtype: np.dtype, where, verify: bool, offset: int = 0) -> None:
    count = info.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"{where}: count {count!r} is not a non-negative int")
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ValueError(f"{where} names {path.name}, which is missing (an interrupted copy?)") from None
    if size != offset + count * dtype.itemsize:
        raise ValueError(f"{where} does not describe {path.name}: {count} {dtype.name} ids are "
                         f"{offset + count * dtype.itemsize} bytes, the file has {size} (an interrupted write?)")
    if verify and "crc32" in info:
        crc = 0
        with open(path, "rb") as f:
            f.seek(offset)
            while block := f.read(1 << 24):
                crc = zlib.crc32(block, crc)
        if crc != info["crc32"]:
            raise ValueError(f"{path}: checksum differs from {where} (the file changed or is damaged)")


def read_ids(path: str | os.PathLike, *, verify: bool = False) -> np.ndarray:
    """Memory-maps an output file of encode_files / encode_dataset, checked against its sidecar
    (verify=True also compares the checksum, reading the whole file)."""
    path = Path(path)
    sidecar = _sidecar(path)
    if path.suffix == ".npy":
        ids = np.load(path, mmap_mode="r", allow_pickle=False)
        if ids.dtype.name not in READABLE_DTYPES or ids.ndim != 1:
            raise ValueError(f"{path}: a {ids.dtype.name} array of {ids.ndim} dimensions, not token ids")
        if sidecar.exists() and verify:
            _check_file(path, _load_json(sidecar), ids.dtype, sidecar, True, offset=path.stat().st_size - ids.nbytes)
        return ids
    if not sidecar.exists():
        if not path.exists():
            raise ValueError(f"{path}: no such file")
        raise ValueError(f"{path}: no sidecar {sidecar.name} (an interrupted write, or not written by tokenforge; "
                         "a shard of a folder is read with read_shards / open_shards on the folder)")
    meta = _load_json(sidecar)
    dtype = _checked_dtype(meta, sidecar)
    _check_file(path, meta, dtype, sidecar, verify)
    if meta["count"] == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


def ids_metadata(path) -> dict:
    """The sidecar of an ids file, or the index of a folder of shards (what wrote them: tokenizer,
    its fingerprint, ...); {} when there is none (the readers then say what is missing)."""
    path = Path(path)
    meta = path / INDEX_NAME if path.is_dir() else _sidecar(path)
    try:
        return _load_json(meta) if meta.is_file() else {}
    except ValueError:
        return {}


def _load_json(path: Path) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: not a JSON object")
    return obj


def _read_index(folder: Path) -> dict:
    if not (folder / INDEX_NAME).is_file():
        raise FileNotFoundError(f"{folder}: no {INDEX_NAME} (not a folder of shards written by tokenforge)")
    index = _load_json(folder / INDEX_NAME)
    shards = index.get("shards")
    if not isinstance(shards, list) or not all(isinstance(s, dict) for s in shards):
        raise ValueError(f"{folder / INDEX_NAME}: no list of shards")
    return index


def open_shards(folder: str | os.PathLike, split: str | None = "train", *, verify: bool = False) -> list[np.ndarray]:
    """The shards of a sharded output (encode_dataset with shard_size, or encode_files_ray), in
    order, each memory-mapped and checked against the index (split=None: every shard)."""
    folder = Path(folder)
    index = _read_index(folder)
    where = folder / INDEX_NAME
    if index.get("complete") is False:
        raise ValueError(f"{where}: an interrupted run (not complete); continue it with --resume (resume=True)")
    dtype = _checked_dtype(index, where)
    arrays = []
    for s in index["shards"]:
        if split is not None and s.get("split", "train") != split:
            continue
        path = _inside(folder, s.get("file"))
        _check_file(path, s, dtype, where, verify)
        arrays.append(np.memmap(path, dtype=dtype, mode="r") if s["count"] else np.zeros(0, dtype=dtype))
    return arrays


def read_shards(folder: str | os.PathLike, split: str | None = "train", *, verify: bool = False) -> np.ndarray:
    """The ids of a sharded output, shards concatenated in index order (read into memory)."""
    parts = open_shards(folder, split, verify=verify)
    if not parts:
        dtype = _checked_dtype(_read_index(Path(folder)), Path(folder) / INDEX_NAME)
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts)
