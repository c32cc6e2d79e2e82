#!/usr/bin/env python3
"""Dataset preparation: a JSON-lines corpus -> one flat array of ids with an end-of-text token after
each document, by tokenforge (`encode_dataset`), a nanoGPT-style tiktoken + multiprocessing script,
gigatoken's `encode_files` (flattened with the end-of-text ids and written out), and HF
`datasets.map` (with tiktoken, `num_proc` = threads) when installed. Each contender runs in a fresh
process (time and peak RSS of the process; for the multiprocessing script and `datasets.map` the
largest of the process and its workers), the outputs are checked equal, and the ratios are printed.
The contenders run interleaved, round after round, so that all see the same machine load; the
load average is printed.

    python benchmarks/bench_dataset.py [--mb 200] [--threads 2] [--encoding cl100k_base] [--repeat 2]
                                       [--input jsonl|text] [--corpus real|repeated]

--corpus real (default): real documents of this machine, never repeated (tools/make_real_corpus.py
--dataset: /usr/share/doc, the manual pages in many languages, Python sources and docs), generated
once into $TMPDIR/tokenforge-bench-dataset. --corpus repeated: the shared mixed benchmark text
(about 16 MB) cut into documents of a few kB and repeated up to --mb (caches that keep every piece
seen favour it). As JSON lines (default) or as one text file with "\n<|sep|>\n" between documents
(--input text).
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


def make_real_corpus(mb: int, folder: pathlib.Path, kind: str) -> pathlib.Path:
    jsonl = folder / f"dataset-{mb}.jsonl"
    if not jsonl.exists():
        subprocess.run([sys.executable, str(HERE.parent / "tools" / "make_real_corpus.py"), str(folder), "--dataset",
                        "--mb", str(mb)], check=True)
    if kind == "jsonl":
        return jsonl
    path = folder / f"dataset-{mb}.txt"
    if not path.exists():
        with open(jsonl, encoding="utf-8") as f:
            docs = [json.loads(line)["text"] for line in f]
        if any(SEPARATOR in d for d in docs):
            raise SystemExit(f"a document of {jsonl} contains the separator {SEPARATOR!r}")
        tmp = path.with_name(path.name + ".partial")
        tmp.write_text(SEPARATOR.join(docs), encoding="utf-8")
        tmp.replace(path)
    return path


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
    ds = datasets.load_dataset("json", data_files=str(src), split="train")  # HF_DATASETS_CACHE: a fresh folder
    ds = ds.map(lambda b: {"ids": [enc.encode_ordinary(t) + [enc.eot_token] for t in b["text"]]},
                batched=True, remove_columns=ds.column_names, num_proc=threads)
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
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if args.run in ("tiktoken_mp", "hf_datasets") else 0
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


def run_child(name, src, out, args) -> dict | str:
    """One run of a contender in a fresh process: its result, or the error's last line."""
    import shutil

    env = dict(os.environ)
    hf_cache = tempfile.mkdtemp(prefix="tokenforge-bench-hf-")  # datasets caches its Arrow copies there
    env["HF_DATASETS_CACHE"] = hf_cache
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run([sys.executable, __file__, "--run", name, "--src", str(src), "--out", str(out),
                               "--threads", str(args.threads), "--encoding", args.encoding],
                              capture_output=True, text=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        shutil.rmtree(hf_cache, ignore_errors=True)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--input", choices=["jsonl", "text"], default="jsonl")
    ap.add_argument("--corpus", choices=["real", "repeated"], default="real")
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
    src = (make_real_corpus if args.corpus == "real" else make_corpus)(args.mb, tmp, args.input)
    nbytes = src.stat().st_size
    names = [n for n in args.only if available(n)]
    for n in args.only:
        if n not in names:
            print(f"  {n:<12} not installed, skipped")
    if args.input == "text" and "hf_datasets" in names:
        names.remove("hf_datasets")  # it reads JSON lines here
    best: dict = {}
    failed: dict = {}
    loads = [os.getloadavg()[0]]
    for _ in range(args.repeat):  # interleaved: every contender sees the same load
        for name in names:
            if name in failed:
                continue
            r = run_child(name, src, tmp / f"{name}.bin", args)
            if isinstance(r, str):
                failed[name] = r
                print(f"  {name:<12} failed: {r}")
                continue
            if name not in best or r["seconds"] < best[name]["seconds"]:
                best[name] = r
            loads.append(os.getloadavg()[0])
    reference = None
    for name in best:
        ids = np.fromfile(tmp / f"{name}.bin", dtype=np.uint32)
        if reference is None:
            reference = ids
        elif not np.array_equal(ids, reference):
            print(f"  {name:<12} output differs from {next(iter(best))}'s!")
    mb = nbytes / 1e6
    kind = "JSON lines" if args.input == "jsonl" else "text"
    print(f"{args.encoding}, {mb:.1f} MB of {kind} ({args.corpus} corpus), {0 if reference is None else len(reference):,} tokens, "
          f"{args.threads} threads, best of {args.repeat} interleaved, each in a fresh process; load average "
          f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    ours = best.get("tokenforge")
    for name, r in best.items():
        ratio = (f"  tokenforge {r['seconds'] / ours['seconds']:.2f}x as fast ({r['cpu'] / ours['cpu']:.2f}x in CPU time)"
                 if ours and name != "tokenforge" else "")
        print(f"  {name:<12} {r['seconds']:7.2f} s  {mb / r['seconds']:7.1f} MB/s  cpu {r['cpu']:6.1f} s  "
              f"peak RSS {r['rss_mb']:6.0f} MB{ratio}")


if __name__ == "__main__":
    main()
