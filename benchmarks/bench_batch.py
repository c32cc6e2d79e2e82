#!/usr/bin/env python3
"""Batch encoding on real documents: num_threads=2 against num_threads=1, one run.

    python benchmarks/bench_batch.py [--mb 6] [--doc 10000] [--batch 2000000] [--rounds 3] [--numpy]
                                     [--dataset JSONL]

The real corpora of bench_encode.py are cut into documents of about --doc characters (at line
ends), and the documents into batches of about --batch characters. For each encoding and corpus,
one batch warms up, then each round encodes a fresh batch with 1 thread and with 2 (which goes
first alternates, so each sees the batch first as often), the corpora taking turns round by round.
MB/s of UTF-8 in wall time and in CPU time of the process, summed over --rounds, and the 2-thread /
1-thread ratio of wall times (the returned lists are freed after the clock stops, in both), and the
median of the rounds' own ratios (the two runs of a round are side by side in time: steadier than
the sums). On a shared machine the wall ratio says little, so the last column estimates it for free
cores: the 2-thread run would take as long as its busier thread (the caller's CPU time, which
includes the serial list building, or the other thread's), against the 1-thread run's CPU time. Ids
are checked equal to encode_ordinary's. Two columns say what the machine gives two threads at the
same moments: SHA-256 (hashlib releases the GIL; compute on data in the first-level cache, no
shared memory) on two threads against one, and gigatoken's batch with parallel=True against
parallel=False (when it is installed), both timed in every round beside tokenforge's runs, medians
of the rounds. The two vCPUs of a cloud machine may share physical cores with other work: a ratio
of 1.8 for SHA-256 says the machine gave independent work on two threads about that much
at that time (a program that uses the caches better may still get more); "of the machine's" is the
median over the rounds of tokenforge's 2 / 1 divided by SHA-256's in the same round. Last, for
tokenforge's and tiktoken's encode_ordinary_batch at their default num_threads (8): the English
batches the rounds did not use (MB/s, as a program switching from tiktoken sees it), and small
batches (8 English documents of 500 characters a call): the cost of a call.

With --dataset JSONL (a file of `tools/make_real_corpus.py OUT --dataset --mb 60`), one more row,
"documents": the records' texts as they come, of every length (real documents are mostly short,
with a long tail: in that file the median is 1,900 characters and the longest 9.4M), in batches of
about --batch characters. A batch's threads take its longest texts first and cut a text longer
than half a thread's share (docs/design.md, "Session 30").

With --numpy, tokenforge's batches are `encode_batch_to_numpy` (one flat array of ids and offsets,
nothing built per id on the caller's thread) instead of lists, and gigatoken's column is its
`encode_batch` (flat arrays too).

With --jobs, each thread count runs in a process of its own instead, as a job encoding a corpus
would: the process warms up on --warm batches, then times the next --timed batches (by default all
the corpus's other batches: fresh text), one call after the other; 1 and 2 threads take turns,
--rounds processes each (lists, or with --numpy flat arrays). In one process the caller's piece
cache sees every batch of both runs and the second thread's only the half it encodes itself, so the
2-thread runs start colder than they would in a job of their own; here each sees the same text.
`--jobs --mb 48 --warm 1 --numpy` times 47 English and code batches of 1M characters per process
(the multilingual corpus has fewer: the machine's manual pages run out near 9 MB).
"""

import argparse
import hashlib
import json
import pathlib
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_encode import real_corpus, setup_tiktoken_cache  # noqa: E402


def documents(text: str, size: int) -> list[str]:
    docs, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        docs.append(text[start:end])
        start = end
    return docs


def batches(docs: list[str], size: int) -> list[list[str]]:
    out, cur, n = [], [], 0
    for d in docs:
        cur.append(d)
        n += len(d)
        if n >= size:
            out.append(cur)
            cur, n = [], 0
    return out


REFERENCE_BLOCK = bytes(range(256)) * 4096  # 1 MiB


def sha256_seconds(threads: int, blocks: int = 32) -> float:
    """Wall time of `threads` threads each hashing REFERENCE_BLOCK `blocks` times (GIL released).
    32 MiB a thread: about 20 ms with the SHA instructions of this machine's CPU. (It was 6 MiB until
    session 27: 3.6 ms, where starting the second thread cost enough to put two threads at 1.75-1.79x
    one in a quiet moment, against 1.94-1.98x with 48 MiB.)"""
    def work():
        for _ in range(blocks):
            hashlib.sha256(REFERENCE_BLOCK).digest()
    pool = [threading.Thread(target=work) for _ in range(threads - 1)]
    t = time.perf_counter()
    for th in pool:
        th.start()
    work()
    for th in pool:
        th.join()
    return time.perf_counter() - t


def machine_scaling() -> float:
    """Two threads' throughput over one thread's, on SHA-256 (1 and 2 threads back to back)."""
    one, two = sha256_seconds(1), sha256_seconds(2)
    return 2 * one / two


def gigatoken_batch(name: str, flat: bool = False):
    """gigatoken's batch encoder for `name` as f(texts, parallel) (lists, or with flat=True its flat
    arrays), or None when not installed."""
    try:
        import gigatoken

        from bench_encode import SHARED

        g = gigatoken.Tokenizer.from_tiktoken(str(SHARED / "vocab" / f"{name}.tiktoken")).backend
    except Exception:
        return None
    if flat:
        return lambda texts, parallel: g.encode_batch(texts, parallel=parallel)
    return lambda texts, parallel: g.encode_batch_list(texts, parallel=parallel)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=6)
    ap.add_argument("--doc", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--numpy", action="store_true", help="flat numpy arrays (encode_batch_to_numpy) instead of lists")
    ap.add_argument("--jobs", action="store_true", help="each thread count in a process of its own")
    ap.add_argument("--warm", type=int, default=4, help="--jobs: batches encoded before the clock starts")
    ap.add_argument("--timed", type=int, default=0, help="--jobs: batches timed after them (0: all the corpus's others)")
    ap.add_argument("--dataset", metavar="JSONL",
                    help="a row of real documents as they come, of every length (the text of each record of a "
                         "`tools/make_real_corpus.py OUT --dataset` file), besides the corpora cut into --doc pieces")
    ap.add_argument("--child", nargs=3, metavar=("ENCODING", "CORPUS", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    setup_tiktoken_cache()
    if args.child:
        return job_child(args)
    if args.jobs:
        return jobs_table(args)
    import tiktoken

    import tokenforge

    corpora = {name: documents(text, args.doc) for name, text in real_corpus(args.mb).items()}
    if args.dataset:
        corpora["documents"] = dataset_documents(args.dataset)
    print(f"batch of ~{args.batch:,} characters in ~{args.doc:,}-character documents, MB/s over {args.rounds} rounds")
    print("| encoding, corpus | 1 thread wall / CPU | 2 threads wall / CPU | 2 / 1 wall | median of the rounds' 2 / 1 | "
          "2 / 1 if the cores were free | machine's 2 / 1 (SHA-256) | of the machine's | gigatoken's 2 / 1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.encodings:
        enc = tokenforge.get_encoding(name)
        peer = gigatoken_batch(name, args.numpy)
        def run(b, k):
            if args.numpy:
                return enc.encode_batch_to_numpy(b, num_threads=k, disallowed_special=())
            return enc.encode_ordinary_batch(b, num_threads=k)

        def as_lists(result):
            if args.numpy:
                ids, offsets = result
                return [ids[x:y].tolist() for x, y in zip(offsets[:-1], offsets[1:])]
            return result
        rows = {}
        for corpus_name, docs in corpora.items():
            bs = batches(docs, args.batch)
            if len(bs) < 1 + args.rounds:
                raise SystemExit(f"corpus too small for {args.rounds} rounds; pass a larger --mb or smaller --batch")
            got = as_lists(run(bs[0], 2))  # (the first batch warms up)
            if got != [enc.encode_ordinary(d) for d in bs[0]]:
                raise SystemExit(f"{name} {corpus_name}: batch ids differ from encode_ordinary's")
            rows[corpus_name] = {"batches": bs, "wall": {1: 0.0, 2: 0.0}, "cpu": {1: 0.0, 2: 0.0},
                                 "busier": 0.0, "total": 0, "ratios": [], "machine": [], "peer": []}
            if peer:
                peer(bs[0], True)
        # Both thread counts encode the same batch in each round (documents differ a lot between
        # batches: languages, code), the order alternating so that each one sees the batch first
        # (cold cache) as often as second. The corpora take turns round by round: a round is a few
        # milliseconds, and a burst of other work on the second core then falls on one round of
        # each row, not on every round of one row (the median of the rounds' ratios filters it).
        for r in range(args.rounds):
            for row in rows.values():
                b = row["batches"][1 + r]
                row["total"] += sum(len(d.encode()) for d in b)
                took = {}
                for k in ((1, 2) if r % 2 == 0 else (2, 1)):
                    t, c, m = time.perf_counter(), time.process_time(), time.thread_time()
                    result = run(b, k)
                    t, c, m = time.perf_counter() - t, time.process_time() - c, time.thread_time() - m
                    del result  # freeing the lists is the caller's later work, serial: not timed
                    row["wall"][k] += t
                    row["cpu"][k] += c
                    took[k] = t
                    if k == 2:  # the 2-thread runs' busier thread: on free cores, its CPU time is the wall time
                        row["busier"] += max(m, c - m)
                row["ratios"].append(took[1] / took[2])
                row["machine"].append(machine_scaling())
                if peer:
                    t = time.perf_counter()
                    peer(b, False)
                    one = time.perf_counter() - t
                    t = time.perf_counter()
                    peer(b, True)
                    row["peer"].append(one / (time.perf_counter() - t))
        for corpus_name, row in rows.items():
            mb, wall, cpu = row["total"] / 1e6, row["wall"], row["cpu"]
            print(f"| {name.split('_')[0]} {corpus_name} | {mb / wall[1]:.0f} / {mb / cpu[1]:.0f} | "
                  f"{mb / wall[2]:.0f} / {mb / cpu[2]:.0f} | x{wall[1] / wall[2]:.2f} | "
                  f"x{statistics.median(row['ratios']):.2f} | x{cpu[1] / row['busier']:.2f} | "
                  f"x{statistics.median(row['machine']):.2f} | "
                  f"{statistics.median(a / b for a, b in zip(row['ratios'], row['machine'])):.2f} | "
                  f"{'x%.2f' % statistics.median(row['peer']) if row['peer'] else 'not installed'} |", flush=True)
        # Large batches at each library's default num_threads (8 for both APIs), as a program that
        # switches from tiktoken calls them: the English batches the rounds left unused (fresh text
        # for tokenforge's cache), each library in turn on each batch.
        reference = tiktoken.get_encoding(name)
        at_defaults = (("tokenforge", enc.encode_ordinary_batch), ("tiktoken", reference.encode_ordinary_batch))
        spare = rows["english"]["batches"][1 + args.rounds:]
        if spare:
            took = {"tokenforge": 0.0, "tiktoken": 0.0}
            for b in spare:
                for lib, batch in at_defaults:
                    t = time.perf_counter()
                    result = batch(b)
                    took[lib] += time.perf_counter() - t
                    del result
            mb = sum(len(d.encode()) for b in spare for d in b) / 1e6
            print(f"{name}: English batches of about {args.batch:,} characters at the default num_threads "
                  f"({len(spare)} batch(es), {mb:.1f} MB): tokenforge {mb / took['tokenforge']:.0f} MB/s, "
                  f"tiktoken {mb / took['tiktoken']:.0f} MB/s (x{took['tiktoken'] / took['tokenforge']:.1f})", flush=True)
        else:
            print(f"{name}: no English batch left for the default num_threads line (pass a larger --mb)")
        english = "".join(corpora["english"])[:400_000]
        small = [english[i:i + 500] for i in range(0, len(english), 500)]
        calls = len(range(8, len(small), 8))
        for lib, batch in at_defaults:
            batch(small[:8])
            c, t = time.process_time(), time.perf_counter()
            for i in range(8, len(small), 8):
                batch(small[i:i + 8])
            print(f"{name}: small batches (8 English documents of 500 characters, default num_threads), {lib}: "
                  f"{(time.perf_counter() - t) * 1e3 / calls:.2f} ms wall, "
                  f"{(time.process_time() - c) * 1e3 / calls:.2f} ms CPU per call", flush=True)


def dataset_documents(path: str) -> list[str]:
    """The texts of a JSON-lines file's records, in order (--dataset)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def job_batches(args, corpus_name: str) -> list[list[str]]:
    if corpus_name == "documents":
        bs = batches(dataset_documents(args.dataset), args.batch)
    else:
        bs = batches(documents(real_corpus(args.mb)[corpus_name], args.doc), args.batch)
    if len(bs) < args.warm + max(args.timed, 1):
        raise SystemExit(f"{corpus_name}: {len(bs)} batches, fewer than --warm + --timed; pass a larger --mb")
    return bs[:args.warm + args.timed] if args.timed else bs


def same_ids(a, b) -> bool:
    """Whether two results of a batch encoder (lists, or numpy (ids, offsets) pairs) are equal."""
    if isinstance(a, tuple):
        return all((x == y).all() for x, y in zip(a, b))
    return a == b


def job_child(args) -> None:
    """One process: warm up on the first --warm batches, then time the next --timed one after the
    other, as a job encoding a corpus calls the batch encoder (prints JSON). The ids of the first
    three timed batches are checked against one thread's after the clock stops (a check between the
    timed batches would leave the other thread idle long enough to sleep before each of them)."""
    import tokenforge

    name, corpus_name, k = args.child[0], args.child[1], int(args.child[2])
    enc = tokenforge.get_encoding(name)
    bs = job_batches(args, corpus_name)
    if args.numpy:
        def encode(b, num_threads):
            return enc.encode_batch_to_numpy(b, num_threads=num_threads, disallowed_special=())
    else:
        encode = enc.encode_ordinary_batch
    for b in bs[:args.warm]:
        encode(b, num_threads=k)
    timed = bs[args.warm:]
    nbytes = sum(len(d.encode()) for b in timed for d in b)
    kept = []
    t, c = time.perf_counter(), time.process_time()
    for b in timed:
        result = encode(b, num_threads=k)
        if len(kept) < 3:
            kept.append(result)
        del result
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    for b, result in zip(timed, kept):
        if k == 2 and not same_ids(result, encode(b, num_threads=1)):
            raise SystemExit(f"{name} {corpus_name}: 2-thread ids differ from 1-thread ids")
    print(json.dumps({"wall": wall, "cpu": cpu, "bytes": nbytes, "batches": len(timed)}))


def jobs_table(args) -> None:
    kind = "encode_batch_to_numpy" if args.numpy else "encode_ordinary_batch"
    timed = f"{args.timed} more" if args.timed else "the rest of the corpus"
    print(f"each thread count in a process of its own ({kind}): {args.warm} batches of ~{args.batch:,} characters warm up, "
          f"{timed} is timed; {args.rounds} processes per thread count, taking turns")
    print("| encoding, corpus | 1 thread MB/s wall / CPU | 2 threads MB/s wall / CPU | median of the rounds' 2 / 1 | "
          "best 1 / best 2 | machine's 2 / 1 (SHA-256) |")
    print("|---|---|---|---|---|---|")
    for name in args.encodings:
        for corpus_name in ("english", "multilingual", "code") + (("documents",) if args.dataset else ()):
            job_batches(args, corpus_name)  # (fails early if the corpus is too small)
            runs = {1: [], 2: []}
            machine = []
            for r in range(args.rounds):
                machine.append(machine_scaling())
                for k in ((1, 2) if r % 2 == 0 else (2, 1)):
                    cmd = [sys.executable, __file__, "--child", name, corpus_name, str(k), "--mb", str(args.mb),
                           "--doc", str(args.doc), "--batch", str(args.batch), "--warm", str(args.warm),
                           "--timed", str(args.timed)] + (["--numpy"] if args.numpy else []) + \
                          (["--dataset", args.dataset] if args.dataset else [])
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                    runs[k].append(json.loads(out.strip().splitlines()[-1]))
            def mbs(k, key):
                return statistics.median(run["bytes"] / run[key] / 1e6 for run in runs[k])
            ratios = [a["wall"] / b["wall"] for a, b in zip(runs[1], runs[2])]
            best = min(run["wall"] for run in runs[1]) / min(run["wall"] for run in runs[2])
            print(f"| {name.split('_')[0]} {corpus_name} ({runs[1][0]['batches']} batches) | {mbs(1, 'wall'):.0f} / "
                  f"{mbs(1, 'cpu'):.0f} | {mbs(2, 'wall'):.0f} / {mbs(2, 'cpu'):.0f} | x{statistics.median(ratios):.2f} | "
                  f"x{best:.2f} | x{statistics.median(machine):.2f} |", flush=True)


if __name__ == "__main__":
    main()
