#!/usr/bin/env python3
"""Dataset preparation: a JSON-lines corpus -> one flat array of ids with an end-of-text token after
each document, by tokenforge (`encode_dataset`), a nanoGPT-style tiktoken + multiprocessing script,
gigatoken's `encode_files` (flattened with the end-of-text ids and written out), and HF
`datasets.map` when installed. Each contender runs in a fresh process (time and peak RSS of the
process; for the multiprocessing script the largest of its workers), the outputs are checked equal, and the ratios are printed.

    python benchmarks/bench_dataset.py [--mb 64] [--threads 2] [--encoding cl100k_base] [--repeat 2] [--input text]

The corpus is the shared mixed benchmark text cut into documents of a few kB (at paragraph ends),
as JSON lines (default) or as one text file with "\n<|sep|>\n" between documents (--input text).
"""

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_encode import corpus, setup_tiktoken_cache  # noqa: E402

CONTENDERS = ["tokenforge", "tiktoken_mp", "gigatoken", "hf_datasets"]


SEPARATOR = "\n<|sep|>\n"


def make_corpus(mb: int, folder: pathlib.Path, kind: str) -> pathlib.Path:
    path = folder / f"corpus-{mb}-v3.{'jsonl' if kind == 'jsonl' else 'txt'}"
    if path.exists():
        return path
    # No special-token text in the documents: gigatoken encodes "<|endoftext|>" found in a document as
    # the special token, the others as text.
    text = corpus(min(mb, 16)).replace("<|endoftext|>", "\n\n")
    text = text * max(1, round(mb * 1e6 / len(text.encode("utf-8"))))  # the corpus tool makes up to ~16 MB
    docs, start = [], 0
    while start < len(text):  # documents of ~4 kB, ending at a paragraph
        end = text.find("\n\n", start + 4000)
        end = len(text) if end < 0 else end + 2
        docs.append(text[start:end])
        start = end
    with open(path, "w", encoding="utf-8") as f:
        if kind == "text":
            f.write(SEPARATOR.join(docs))
        else:
            for d in docs:
                f.write(json.dumps({"text": d}) + "\n")
    return path


# -- contenders (each runs in its own process: `--run NAME`)

def run_tokenforge(src, out, name, threads):
    import tokenforge
    from tokenforge import dataset

    tok = tokenforge.get_encoding(name)
    separator = SEPARATOR if src.endswith(".txt") else None
    dataset.encode_dataset(tok, [src], out, num_threads=threads, overwrite=True, separator=separator)


_enc = None
_jsonl = True


def _init(name):
    global _enc
    import tiktoken

    _enc = tiktoken.get_encoding(name)


def _work(line):
    doc = json.loads(line)["text"] if _jsonl else line  # set before the pool forks
    return np.asarray(_enc.encode_ordinary(doc) + [_enc.eot_token], dtype=np.uint32)


def run_tiktoken_mp(src, out, name, threads):
    """As nanoGPT's prepare.py scripts do: a pool of processes, one document per task."""
    import multiprocessing

    global _jsonl
    _jsonl = not src.endswith(".txt")
    with open(src, encoding="utf-8") as f, multiprocessing.Pool(threads, initializer=_init, initargs=(name,)) as pool, \
            open(out, "wb") as w:
        items = f if _jsonl else f.read().split(SEPARATOR)
        for arr in pool.imap(_work, items, chunksize=16):
            arr.astype(np.uint32 if name != "gpt2" else np.uint16).tofile(w)


def run_gigatoken(src, out, name, threads):
    import gigatoken
    import tiktoken

    os.environ.setdefault("RAYON_NUM_THREADS", str(threads))
    enc = tiktoken.get_encoding(name)
    cache = pathlib.Path(os.environ["TIKTOKEN_CACHE_DIR"])
    import hashlib

    blob_url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"  # tiktoken's cache key
    path = cache / hashlib.sha1(blob_url.encode()).hexdigest()
    tok = gigatoken.Tokenizer.from_tiktoken(str(path), pretokenizer=name.split("_")[0],
                                            special_tokens={"<|endoftext|>": enc.eot_token})
    if src.endswith(".txt"):
        source = gigatoken.TextFileSource([str(src)], separator=SEPARATOR)
    else:
        source = gigatoken.JsonlFileSource([str(src)], field="text")
    rows = tok.encode_files(source)
    import awkward as ak

    counts = ak.num(rows).to_numpy()
    flat = ak.flatten(rows).to_numpy()
    result = np.empty(len(flat) + len(counts), dtype=np.uint32)
    ends = np.cumsum(counts + 1)
    mask = np.ones(len(result), dtype=bool)
    mask[ends - 1] = False
    result[mask] = flat
    result[~mask] = enc.eot_token
    result.tofile(out)


def run_hf_datasets(src, out, name, threads):
    import datasets
    import tiktoken

    enc = tiktoken.get_encoding(name)
    if src.endswith(".txt"):
        raise SystemExit("hf_datasets: JSON lines only")
    ds = datasets.load_dataset("json", data_files=str(src), split="train")
    ds = ds.map(lambda b: {"ids": [enc.encode_ordinary(t) + [enc.eot_token] for t in b["text"]]},
                batched=True, remove_columns=["text"], num_proc=threads)
    with open(out, "wb") as w:
        for batch in ds.iter(batch_size=1024):
            for ids in batch["ids"]:
                np.asarray(ids, dtype=np.uint32).tofile(w)


def child(args):
    fn = globals()[f"run_{args.run}"]
    start = time.perf_counter()
    fn(args.src, args.out, args.encoding, args.threads)
    seconds = time.perf_counter() - start
    # VmHWM: this process's peak since its exec (ru_maxrss would carry the parent's peak over the fork).
    with open("/proc/self/status") as f:
        hwm_kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if args.run == "tiktoken_mp" else 0
    print(json.dumps({"seconds": seconds, "rss_mb": max(hwm_kb, children_kb) / 1024}))


def available(name) -> bool:
    module = {"tokenforge": "tokenforge", "tiktoken_mp": "tiktoken", "gigatoken": "gigatoken", "hf_datasets": "datasets"}[name]
    try:
        __import__(module)
        if name == "gigatoken":
            __import__("awkward")
        return True
    except ImportError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--input", choices=["jsonl", "text"], default="jsonl")
    ap.add_argument("--only", nargs="+", choices=CONTENDERS, default=CONTENDERS, help="run only these")
    ap.add_argument("--run", choices=CONTENDERS, help=argparse.SUPPRESS)
    ap.add_argument("--src", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    setup_tiktoken_cache()
    if args.run:
        return child(args)
    tmp = pathlib.Path(tempfile.gettempdir()) / "tokenforge-bench-dataset"
    tmp.mkdir(exist_ok=True)
    src = make_corpus(args.mb, tmp, args.input)
    nbytes = src.stat().st_size
    results = {}
    reference = None
    for name in args.only:
        if not available(name):
            print(f"  {name:<12} not installed, skipped")
            continue
        out = tmp / f"{name}.bin"
        best = None
        for _ in range(args.repeat):
            proc = subprocess.run([sys.executable, __file__, "--run", name, "--src", str(src), "--out", str(out),
                                   "--threads", str(args.threads), "--encoding", args.encoding],
                                  capture_output=True, text=True, env=os.environ)
            if proc.returncode != 0:
                print(f"  {name:<12} failed: {proc.stderr.strip().splitlines()[-1:]}")
                break
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            best = r if best is None or r["seconds"] < best["seconds"] else best
        if best is None:
            continue
        ids = np.fromfile(out, dtype=np.uint32)
        if reference is None:
            reference = ids
        elif not np.array_equal(ids, reference):
            print(f"  {name:<12} output differs from tokenforge's!")
        results[name] = best
    mb = nbytes / 1e6
    print(f"{args.encoding}, {mb:.1f} MB of {'JSON lines' if args.input == 'jsonl' else 'text'}, {0 if reference is None else len(reference):,} tokens, "
          f"{args.threads} threads, best of {args.repeat}, each in a fresh process")
    ours = results.get("tokenforge")
    for name, r in results.items():
        ratio = f"  tokenforge is {r['seconds'] / ours['seconds']:.2f}x as fast" if ours and name != "tokenforge" else ""
        print(f"  {name:<12} {r['seconds']:7.2f} s  {mb / r['seconds']:7.1f} MB/s  peak RSS {r['rss_mb']:7.0f} MB{ratio}")


if __name__ == "__main__":
    main()
