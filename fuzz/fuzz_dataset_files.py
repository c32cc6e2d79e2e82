"""Fuzz target: reading encoded datasets back (`dataset.read_ids`, `dataset.read_shards`).

The input is `mode byte + JSON + b"\\n--\\n" + data`: mode even writes the JSON as the sidecar
`out.bin.json` beside `out.bin` (the data), mode odd writes it as a shard folder's `index.json`
with the data as its `train-000000.bin`. Seeds are the files tokenforge writes itself, so
mutations change dtypes, counts, sizes, checksums, file names and the JSON's shape.

What must hold: a ValueError, or ids of a dtype tokenforge writes (uint16, uint32) that all read
without a crash (a sidecar naming dtype "O" once memory-mapped bytes as Python object pointers),
and never a byte of a file outside the folder: the file beside the folder (`secret.bin`) holds
ids >= 60000 that no data file inside can hold (the data is cut to ids < 60000).
"""

import atexit
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:  # replaying saved inputs needs no atheris
    atheris = None

if atheris is not None and __name__ == "__main__":
    with atheris.instrument_imports(include=["tokenforge"]):
        import tokenforge
        from tokenforge import dataset
else:
    import tokenforge
    from tokenforge import dataset

SEPARATOR = b"\n--\n"
SECRET = 60000
_ROOT = tempfile.mkdtemp(prefix="fuzz-dataset-")
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)  # no folder left in /tmp per run


def seed_inputs() -> list[bytes]:
    """A single-file output and a shard folder as tokenforge writes them, in this target's layout."""
    work = tempfile.mkdtemp(prefix="fuzz-dataset-seed-")
    try:
        text = os.path.join(work, "a.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write("Hello world, one document.\nAnd another one with naïve 速い text.\n")
        tok = tokenforge.Tokenizer.from_ranks({bytes([i]): i for i in range(256)}, pattern="gpt2",
                                              special_tokens={"<|endoftext|>": 256})
        single, shards = os.path.join(work, "out.bin"), os.path.join(work, "shards")
        dataset.encode_files(tok, [text], single)
        dataset.encode_files(tok, [text], shards, shard_size=16)
        seeds = []
        for mode, meta, data in [(0, single + ".json", single),
                                 (1, os.path.join(shards, "index.json"), os.path.join(shards, "train-000000.bin"))]:
            with open(meta, "rb") as m, open(data, "rb") as d:
                seeds.append(bytes([mode]) + m.read() + SEPARATOR + d.read())
        return seeds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _inside(data: bytes) -> bytes:
    """The data with every uint16 below SECRET, so that an id >= SECRET can only come from outside."""
    ids = np.frombuffer(data[: len(data) // 2 * 2], dtype="<u2") % SECRET
    return ids.astype("<u2").tobytes() + data[len(data) // 2 * 2:]


def _check(ids) -> None:
    assert isinstance(ids, np.ndarray) and ids.dtype.name in ("uint16", "uint32"), type(ids)
    values = np.asarray(ids)
    assert values.ndim == 1
    if values.size and values.dtype == np.uint16:
        assert int(values.max()) < SECRET, "ids read from a file outside the dataset's folder"


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    mode, rest = data[0], data[1:]
    meta, sep, payload = rest.partition(SEPARATOR)
    folder = os.path.join(_ROOT, "case")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "shards"))
    secret = np.full(64, SECRET + 7, dtype="<u2").tobytes()
    for name in ("secret.bin", os.path.join("shards", "..", "secret.bin")):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(secret)
    payload = _inside(payload)
    try:
        if mode % 2 == 0:
            path = os.path.join(folder, "out.bin")
            with open(path, "wb") as f:
                f.write(payload)
            with open(path + ".json", "wb") as f:
                f.write(meta)
            _check(dataset.read_ids(path, verify=bool(mode & 2)))
        else:
            shards = os.path.join(folder, "shards")
            with open(os.path.join(shards, "train-000000.bin"), "wb") as f:
                f.write(payload)
            with open(os.path.join(shards, "index.json"), "wb") as f:
                f.write(meta)
            _check(dataset.read_shards(shards, verify=bool(mode & 2)))
    except ValueError:
        return


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
