#!/usr/bin/env python3
"""Two builds of tokenforge (or a build and a peer) on the same fresh slices, taking turns on one core.

    pip install --no-deps --target /tmp/build-a .        # (at the commit before a change)
    pip install --no-deps --target /tmp/build-b .        # (with the change)
    python benchmarks/ab_builds.py /tmp/build-a /tmp/build-b [--encoding cl100k_base]
        [--file TOKENIZER_FILE] [--corpus english|multilingual|code|PATH] [--kind list|numpy]
        [--slice 100000] [--slices 40] [--threads N | --threads A,B]

On this shared machine a process's speed moves 1.5x within minutes, so two builds timed one after
the other (or even alternating processes, best of N) cannot show a change under ~10%. Here each
build runs in its own process, both pinned to the same core, and they take turns slice by slice:
each encodes slice k once (fresh text for both: every process has its own piece cache), the order
alternating from slice to slice, so a burst of other work falls on both. The figure is the median
of the per-slice time ratios (a / b: above 1 means b is faster). Run a build against itself first
to see the noise (0.98-1.04 here).
Either build may instead be a peer, `fastokens` or `gigatoken` (called as bench_encode.py calls
them, one thread): `ab_builds.py BUILD fastokens` is then tokenforge against the peer on the same
fresh slices in turn, its median ratio steadier than bench_encode.py's separate runs. This is
session 15's C++ method (docs/design.md, "Small effects, session 15") for any two builds, through
the Python API. Not collected by pytest.

With --threads N (N > 1), each build encodes each slice as a batch on N threads instead
(`encode_ordinary_batch` or `encode_batch_to_numpy` of documents of about 10,000 characters, cut at
line ends, as bench_batch.py cuts them), both processes on the first N cores in turn: two builds'
batches compared on the same fresh text (pass a larger --slice: a batch of 100,000 characters is
mostly thread hand-offs). --threads A,B gives build a A threads and build b B, both as batches:
`ab_builds.py BUILD BUILD --threads 1,2` is the two-thread batch against the one-thread batch, each
in a process of its own on the same fresh slices in turn (in one process, as bench_batch.py runs
them, the thread that encodes every batch meets each slice's words before the second thread does).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # (after the build's directory: see worker)
from bench_encode import setup_tiktoken_cache  # noqa: E402


def corpus_text(corpus: str) -> str:
    if os.path.exists(corpus):
        with open(corpus, encoding="utf-8") as f:
            return f.read()
    from bench_encode import real_corpus  # (the real corpora, built and cached on first use)

    return real_corpus(16)[corpus]


def slices_of(args) -> list[str]:
    text = corpus_text(args.corpus)
    count = min(args.slices + 1, len(text) // args.slice)  # (the first one warms up)
    return [text[k * args.slice:(k + 1) * args.slice] for k in range(count)]


PEERS = ("fastokens", "gigatoken")


def thread_counts(threads: str) -> list[int] | None:
    """--threads as each build's thread count (N: both; A,B: each its own), None if malformed."""
    parts = threads.split(",")
    if len(parts) not in (1, 2) or not all(p.isdigit() and int(p) >= 1 for p in parts):
        return None
    return [int(p) for p in parts] * (3 - len(parts))


def cores_for(threads: str) -> int:
    """The cores both builds run on: one for the single-thread calls, else enough for either batch."""
    return 1 if threads == "1" else max(2, *thread_counts(threads))


def peer_encoder(peer: str, args):
    """A peer's encode function for args.encoding and args.kind, called as bench_encode.py calls it."""
    if args.file:
        raise SystemExit("--file is for two tokenforge builds; a peer runs a named encoding")
    from bench_encode import SHARED

    path = str(SHARED / "vocab" / f"{args.encoding}.tiktoken")
    if peer == "fastokens":
        if args.kind != "list":
            raise SystemExit("fastokens returns lists only")
        os.environ["FASTOKENS_BPE_THREADS"] = "1"
        import fastokens

        f = fastokens.Tokenizer.from_tiktoken(path, encoding=args.encoding)
        return lambda t: f.encode_ordinary(t).ids
    import gigatoken

    g = gigatoken.Tokenizer.from_tiktoken(path).backend
    if args.kind == "list":
        return lambda t: g.encode_batch_list([t], parallel=False)[0]
    return g.encode


def worker(args) -> None:
    """One build (or peer): encodes the slice whose index it reads on stdin, writes back the seconds."""
    threads = int(args.threads_here)
    cores = cores_for(args.threads)
    os.sched_setaffinity(0, {args.cpu} if cores == 1 else set(range(cores)))
    if args.worker.startswith("peer:"):
        encode = peer_encoder(args.worker[len("peer:"):], args)
    else:
        sys.path.insert(0, args.worker)
        import tokenforge

        if not tokenforge.__file__.startswith(os.path.abspath(args.worker)):
            raise SystemExit(f"{args.worker}: imported tokenforge from {tokenforge.__file__} instead")
        enc = tokenforge.load(args.file) if args.file else tokenforge.get_encoding(args.encoding)
        if args.threads != "1":
            from bench_batch import documents

            batch = enc.encode_ordinary_batch if args.kind == "list" else enc.encode_batch_to_numpy
            extra = {} if args.kind == "list" else {"disallowed_special": ()}

            def encode(t):
                return batch(documents(t, 10_000), num_threads=threads, **extra)
        elif args.kind == "list":
            def encode(t):
                return enc.encode_ordinary(t)
        else:
            def encode(t):
                return enc.encode_to_numpy(t, disallowed_special=())
    parts = slices_of(args)
    first = encode(parts[0])
    print(len(first[0]) if args.threads != "1" and args.kind == "numpy" else len(first), flush=True)  # ready (and the parent checks both builds agree on the ids' count)
    for line in sys.stdin:
        t = (parts[int(line)] + ".")[:-1]  # a new str: its UTF-8 is not cached inside it yet
        start = time.perf_counter()
        encode(t)
        print(time.perf_counter() - start, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--encoding", default="cl100k_base")
    ap.add_argument("--file", help="a tokenizer file to load instead (tokenforge.load)")
    ap.add_argument("--corpus", default="english")
    ap.add_argument("--kind", choices=("list", "numpy"), default="list")
    ap.add_argument("--slice", type=int, default=100_000, help="characters per slice")
    ap.add_argument("--slices", type=int, default=40)
    ap.add_argument("--cpu", type=int, default=0, help="the core both builds run on")
    ap.add_argument("--threads", default="1", help="encode each slice as a batch on this many threads (A,B: per build)")
    ap.add_argument("--threads-here", default="1", help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if not (args.a and args.b):
        ap.error("give two build directories (pip install --no-deps --target DIR .)")
    builds = [f"peer:{d}" if d in PEERS else d for d in (args.a, args.b)]
    for d in (args.a, args.b):
        if d in PEERS:
            continue
        if not os.path.isfile(os.path.join(d, "tokenforge", "__init__.py")):
            ap.error(f"{d}: no tokenforge package there (pip install --no-deps --target {d} .)")
    per_build = thread_counts(args.threads)
    if per_build is None:
        ap.error(f"--threads takes N or A,B (positive counts), not {args.threads!r}")
    if args.threads != "1" and any(d in PEERS for d in (args.a, args.b)):
        ap.error("--threads is for tokenforge builds (the peers run one thread)")
    setup_tiktoken_cache()  # (the workers inherit TIKTOKEN_CACHE_DIR: get_encoding runs offline)
    passed = ["--encoding", args.encoding, *(["--file", args.file] if args.file else []), "--corpus", args.corpus, "--kind", args.kind, "--slice", str(args.slice),
              "--slices", str(args.slices), "--cpu", str(args.cpu), "--threads", args.threads]
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", d, *passed, "--threads-here", str(t)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for d, t in zip(builds, per_build)]
    counts = [p.stdout.readline().strip() for p in procs]
    if not all(counts):
        raise SystemExit("a build failed to start (its error is above)")
    if counts[0] != counts[1]:  # (the count only: bench_encode.py checks the peers' ids themselves)
        raise SystemExit(f"the builds disagree on the warm-up slice: {counts[0]} against {counts[1]} ids")
    n = len(slices_of(args)) - 1
    times: list[list[float]] = [[], []]
    for k in range(1, n + 1):
        order = (0, 1) if k % 2 else (1, 0)
        for w in order:
            procs[w].stdin.write(f"{k}\n")
            procs[w].stdin.flush()
            times[w].append(float(procs[w].stdout.readline()))
    for p in procs:
        p.stdin.close()
        p.wait()
    mb = sum(len(s.encode()) for s in slices_of(args)[1:]) / 1e6
    threads = "" if args.threads == "1" else f", batches on {per_build[0]} / {per_build[1]} threads"
    cores = "one core" if args.threads == "1" else f"{cores_for(args.threads)} cores"
    print(summary(f"{args.file or args.encoding} {args.corpus} {args.kind}{threads}", args.slice, mb, times, cores))


def summary(label: str, slice_chars: int, mb: float, times: list[list[float]], cores: str = "one core") -> str:
    """The result line (bench_paired.py reads it): both MB/s, and the per-slice a / b time ratios."""
    ratios = sorted(a / b for a, b in zip(*times))
    return (f"{label}, {len(ratios)} fresh slices of {slice_chars:,} characters, {cores}: "
            f"a {mb / sum(times[0]):.1f} MB/s, b {mb / sum(times[1]):.1f} MB/s; median slice time a / b "
            f"{statistics.median(ratios):.3f} (quartiles {ratios[len(ratios) // 4]:.3f}-{ratios[3 * len(ratios) // 4]:.3f})")


if __name__ == "__main__":
    main()
