#!/usr/bin/env python3
"""Dataset encoding: tokenforge.dataset.encode_files against a tiktoken + multiprocessing script doing
the same job (documents split on <|endoftext|>, encode_ordinary + end-of-text, one flat uint32 array),
on the same corpus, in the same run. Prints MB/s for both and the ratio; checks the outputs are equal.

    python benchmarks/bench_dataset.py [--mb 16] [--repeat 3] [--encoding cl100k_base]
"""

import argparse
import multiprocessing
import os
import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_encode import best_times, corpus, setup_tiktoken_cache  # noqa: E402

_enc = None


def _init(name):
    global _enc
    import tiktoken

    _enc = tiktoken.get_encoding(name)


def _work(doc):
    return np.asarray(_enc.encode_ordinary(doc) + [_enc.eot_token], dtype=np.uint32)


def tiktoken_job(path: pathlib.Path, out: pathlib.Path, name: str, workers: int) -> None:
    docs = path.read_text(encoding="utf-8").split("<|endoftext|>")
    if docs and docs[-1] == "":
        docs.pop()
    with multiprocessing.Pool(workers, initializer=_init, initargs=(name,)) as pool, open(out, "wb") as f:
        for arr in pool.imap(_work, docs, chunksize=16):
            arr.tofile(f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--encoding", default="cl100k_base")
    args = ap.parse_args()
    setup_tiktoken_cache()
    import tokenforge
    from tokenforge import dataset

    text = corpus(args.mb)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tokenforge-bench-dataset-"))
    src = tmp / "corpus.txt"
    src.write_text(text, encoding="utf-8")
    nbytes = src.stat().st_size
    tok = tokenforge.get_encoding(args.encoding)
    workers = os.cpu_count() or 1

    def ours():
        dataset.encode_files(tok, [src], tmp / "ours.bin", separator="<|endoftext|>", overwrite=True)

    def theirs():
        tiktoken_job(src, tmp / "theirs.bin", args.encoding, workers)

    t_ours, t_theirs = best_times([ours, theirs], args.repeat)
    a = np.fromfile(tmp / "ours.bin", dtype=np.uint32)
    b = np.fromfile(tmp / "theirs.bin", dtype=np.uint32)
    if not np.array_equal(a, b):
        raise SystemExit("outputs differ")
    mb = nbytes / 1e6
    print(f"{args.encoding}, {mb:.1f} MB, {len(a)} tokens, {workers} workers, best of {args.repeat}")
    print(f"  tokenforge encode_files        {mb / t_ours:8.1f} MB/s")
    print(f"  tiktoken + multiprocessing     {mb / t_theirs:8.1f} MB/s")
    print(f"  ratio                          {t_theirs / t_ours:8.2f}x")


if __name__ == "__main__":
    main()
