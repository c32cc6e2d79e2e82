#!/usr/bin/env python3
"""Encoding throughput: tokenforge against tiktoken on the same text, in the same run.

    python benchmarks/bench_encode.py [--mb 8] [--repeat 5] [--encodings cl100k_base o200k_base]

Builds the corpus with ../shared/tools/make_bench_corpus.py (mixed prose, multilingual, code) into a
temporary folder, and loads tiktoken's vocabularies from ../shared/vocab. For each encoding it
measures (best of --repeat runs, since the machine is shared and noisy):
  single   encode_ordinary on the whole corpus, one thread
  batch    encode_ordinary_batch on ~4 KB documents with num_threads=2
  worst    a million repeated characters, a 5 MB line of random letters and digits, 1 MB of spaces
and prints MB/s for both and the ratio tokenforge / tiktoken. Ids are checked equal as it goes.
"""

import argparse
import os
import pathlib
import random
import runpy
import subprocess
import sys
import tempfile
import time

os.environ["RUST_BACKTRACE"] = "0"  # tiktoken panics on some worst cases; keep it short
ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def setup_tiktoken_cache() -> None:
    cache = pathlib.Path(tempfile.gettempdir()) / "tokenforge-bench-tiktoken-cache"
    runpy.run_path(str(SHARED / "tools" / "tiktoken_cache.py"), run_name="x")["main"](cache)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


def corpus(mb: int) -> str:
    path = pathlib.Path(tempfile.gettempdir()) / f"tokenforge-bench-mixed-{mb}.txt"
    if not path.exists():
        subprocess.run([sys.executable, str(SHARED / "tools" / "make_bench_corpus.py"), str(path),
                        "--kind", "mixed", "--mb", str(mb)], check=True, stdout=subprocess.DEVNULL)
    return path.read_text(encoding="utf-8")


def best_time(fn, repeat: int, clock=time.perf_counter) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = clock()
        fn()
        best = min(best, clock() - t)
    return best


def best_times(fns, repeat: int, clock=time.perf_counter) -> list[float]:
    """Best time of each function, the runs interleaved so that both see the same machine load.
    `clock` may be time.process_time for one-thread work on a loaded machine."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            best[k] = min(best[k], best_time(fn, 1, clock))
    return best


def compare(label: str, nbytes: int, ours, theirs, repeat: int) -> None:
    a, b = ours(), theirs()
    if a != b:
        raise SystemExit(f"{label}: ids differ between tokenforge and tiktoken")
    t_ours, t_theirs = best_times([ours, theirs], repeat)
    mb = nbytes / 1e6
    print(f"  {label:<28} tokenforge {mb / t_ours:8.1f} MB/s   tiktoken {mb / t_theirs:8.1f} MB/s   "
          f"ratio {t_theirs / t_ours:5.2f}x", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--skip-worst", action="store_true")
    args = ap.parse_args()
    setup_tiktoken_cache()
    import tiktoken

    import tokenforge

    text = corpus(args.mb)
    nbytes = len(text.encode())
    docs, i = [], 0
    while i < len(text):
        docs.append(text[i:i + 4000])
        i += 4000
    rng = random.Random(0)
    worst = {
        "1M x 'a'": "a" * 1_000_000,
        "5 MB random [a-z0-9] line": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=5_000_000)),
        "1 MB of spaces": " " * 1_000_000,
    }
    print(f"corpus: {nbytes / 1e6:.1f} MB mixed text, {len(docs)} documents of ~4 KB; best of {args.repeat}")
    for name in args.encodings:
        ours, theirs = tokenforge.get_encoding(name), tiktoken.get_encoding(name)
        print(name)
        compare("single thread", nbytes, lambda: ours.encode_ordinary(text), lambda: theirs.encode_ordinary(text), args.repeat)
        compare("batch, 2 threads", nbytes, lambda: ours.encode_ordinary_batch(docs, num_threads=2),
                lambda: theirs.encode_ordinary_batch(docs, num_threads=2), args.repeat)
        if args.skip_worst:
            continue
        for label, w in worst.items():
            try:
                theirs.encode_ordinary(w)
            except BaseException as e:  # tiktoken's regex engine can overflow its stack here
                t = best_time(lambda: ours.encode_ordinary(w), 1)
                print(f"  {label:<28} tokenforge {len(w) / 1e6 / t:8.1f} MB/s   tiktoken failed: {type(e).__name__}")
                continue
            compare(label, len(w.encode()), lambda: ours.encode_ordinary(w), lambda: theirs.encode_ordinary(w), 2)


if __name__ == "__main__":
    main()
