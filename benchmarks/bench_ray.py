"""The Ray path's overhead against the local path on the same data, and a projection for 100 GB.

    python /work/shared/tools/make_bench_corpus.py /tmp/mixed16.txt --kind mixed --mb 16
    python benchmarks/bench_ray.py /tmp/mixed16.txt --vocab 10000 --runs 3

On one machine, a local Ray instance with as many CPUs as the local path has threads. Measured, best
of --runs, local and Ray interleaved, after one warm-up run of each (Ray starts and imports its
workers once; a real cluster is long-lived, so ray.init is reported apart):
  - counting only: local `_Counting` with all threads vs `distributed.count_files_ray` (ranges of
    --range-size bytes, tree reduce, the root fetched and loaded into a native counter);
  - training: `train_bpe` vs `train_bpe(engine="ray")` (counting + the same merge loop);
  - encoding: `dataset.encode_files` vs `distributed.encode_files_ray` (the trained tokenizer);
  - the inputs of the projection: single-thread counting throughput, unique pieces and table bytes per
    range and for the whole file (and for its first quarter, for the growth exponent), the cost of
    merging tables per unique piece, the merge loop's time.
Then the projection for a 100 GB corpus on N nodes, printed with its assumptions.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time


def best(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--vocab", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--range-size", type=int, default=4 << 20, help="bytes per counting task (default 4 MiB)")
    ap.add_argument("--nodes", default="1,4,16,64", help="node counts for the projection")
    ap.add_argument("--cores-per-node", type=int, default=32)
    ap.add_argument("--corpus-gb", type=float, default=100.0)
    args = ap.parse_args()

    import ray

    import tokenforge
    from tokenforge import _core, distributed
    from tokenforge.dataset import encode_files
    from tokenforge.train import _Counting, _NoProgress, _Plan

    EOT = "<|endoftext|>"
    path = os.path.abspath(args.corpus)
    size = os.path.getsize(path)
    print(f"corpus {path}: {size / 1e6:.1f} MB; {args.cpus} CPUs; vocab {args.vocab}; "
          f"range size {args.range_size >> 20} MiB; best of {args.runs}")

    plan = _Plan(args.vocab, "cl100k", [EOT], 1, False, "bench")

    def count_local(threads=args.cpus, p=path):
        c = _Counting(plan, threads)
        c.count_file(p, 16 << 20, "strict", _NoProgress())
        return c.finish()

    t = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    init = time.perf_counter() - t
    print(f"ray.init (local instance, {args.cpus} CPUs): {init:.1f} s (once per cluster, not counted below)")

    stats: dict = {}

    def count_ray():
        return distributed.count_files_ray(plan, [path], chunk_size=16 << 20, range_size=args.range_size, stats=stats)

    def train_local():
        return tokenforge.train_bpe(path, args.vocab, special_tokens=[EOT], verbose=False)

    def train_ray():
        return distributed.train_bpe_ray(path, args.vocab, special_tokens=[EOT], verbose=False,
                                         range_size=args.range_size)

    # warm-up, and the exactness check
    a, b = train_local(), train_ray()
    if a._state() != b._state():
        print("ERROR: the Ray result differs from the local one", file=sys.stderr)
        return 1
    tok = a
    count_ray()

    results = {}
    for _ in range(args.runs):  # interleaved, best of runs
        for name, fn in [("count local", count_local), ("count ray", count_ray),
                         ("train local", train_local), ("train ray", train_ray)]:
            results[name] = min(results.get(name, 1e9), best(fn, 1))

    with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
        def enc_local():
            encode_files(tok, [path], os.path.join(tmp, "local.bin"), overwrite=True)

        def enc_ray():
            distributed.encode_files_ray(tok, [path], os.path.join(tmp, "shards"), overwrite=True,
                                         shard_size=args.range_size)
        enc_local(), enc_ray()
        for _ in range(args.runs):
            results["encode local"] = min(results.get("encode local", 1e9), best(enc_local, 1))
            results["encode ray"] = min(results.get("encode ray", 1e9), best(enc_ray, 1))

    print()
    print(f"{'':18} {'local':>8} {'ray':>8} {'overhead':>10}")
    for what in ("count", "train", "encode"):
        lo, ra = results[f"{what} local"], results[f"{what} ray"]
        print(f"{what:18} {lo:7.2f}s {ra:7.2f}s {ra - lo:+8.2f}s ({ra / lo:.2f}x)")
    print(f"counting on Ray: {stats['ranges']} ranges, {stats['merge_tasks']} merge tasks in "
          f"{stats['merge_levels']} levels; root table {stats['unique_pieces']:,} pieces, "
          f"{stats['table_bytes'] / 1e6:.1f} MB")

    # ---- the inputs of the projection
    one = best(lambda: count_local(1), args.runs)
    per_core = size / one
    whole = count_local()
    u_whole = len(whole)
    with tempfile.NamedTemporaryFile(dir=os.path.dirname(path), suffix=".txt") as q:
        with open(path, "rb") as f:
            q.write(f.read(size // 4))
        q.flush()
        u_quarter = len(count_local(p=q.name))
    heaps = math.log(u_whole / u_quarter) / math.log(4)  # unique pieces ~ size ** heaps
    # tables of single ranges: their size, and the cost of merging tables, per unique piece
    cutter = _core.PieceCounter(1, [EOT.encode()])
    ranges = distributed.file_ranges(path, size, args.range_size, cutter)
    tables = []
    for s, e in ranges:
        c = _Counting(plan, 1)
        c.count_file(path, 16 << 20, "strict", _NoProgress(), range_start=s, range_end=e)
        tables.append(distributed.PieceTable.of_counter(c.finish()))
    entries = sum(len(t) for t in tables)
    merge_s = best(lambda: distributed.PieceTable.of_counter(distributed.merge_tables(tables)), args.runs)
    per_entry = merge_s / entries
    bytes_per_piece = sum(t.nbytes for t in tables) / entries
    root = distributed.PieceTable.of_counter(whole)
    train_from = best(lambda: plan.train(distributed.merge_tables([root])), 1)
    print()
    print("inputs of the projection (measured here):")
    print(f"  counting, one thread: {per_core / 1e6:.0f} MB/s per core")
    print(f"  unique pieces: {u_quarter:,} in the first quarter, {u_whole:,} in the whole file "
          f"(growth exponent {heaps:.2f}); {len(tables[0]):,} in one {args.range_size >> 20} MiB range")
    print(f"  table bytes per unique piece: {bytes_per_piece:.1f}")
    print(f"  merging tables (add_table into a native counter, then table()): {per_entry * 1e9:.0f} ns per input piece")
    print(f"  merge loop, vocab {args.vocab}, from {u_whole:,} pieces: {train_from:.2f} s")
    ray.shutdown()

    # ---- projection
    total = args.corpus_gb * 1e9
    u_root = u_whole * (total / size) ** heaps
    range_bytes = 64 << 20
    n_ranges = math.ceil(total / range_bytes)
    u_range = len(tables[0]) * (range_bytes / args.range_size) ** heaps
    fanout = distributed.DEFAULT_FANOUT
    print()
    print(f"projection: {args.corpus_gb:.0f} GB, {args.cores_per_node} cores per node, ranges of 64 MiB "
          f"({n_ranges:,} tasks), fanout {fanout}")
    print("assumptions: counting scales with cores at the measured per-core rate and storage keeps up "
          f"(each node reads {args.cores_per_node} x {per_core / 1e6:.0f} MB/s); unique pieces grow as "
          f"size^{heaps:.2f} (from this file; real web text may grow faster); a merge task's input is at most "
          f"fanout x the root table; tables move at 1 GB/s between nodes; the merge loop's time grows "
          f"linearly with unique pieces (vocab {args.vocab}).")
    print(f"  root table ~{u_root / 1e6:.1f} M pieces, ~{u_root * bytes_per_piece / 1e9:.2f} GB; "
          f"one range's table ~{u_range / 1e3:.0f} k pieces")
    print(f"{'nodes':>6} {'counting':>10} {'reduce (critical path)':>24} {'merge loop':>11} {'total':>9}")
    for n in [int(x) for x in args.nodes.split(",")]:
        cores = n * args.cores_per_node
        count_t = total / (per_core * cores)
        # levels of the tree: each level's tables are bounded by the root's size; the last levels
        # (few tasks) are the critical path, the early ones run in parallel on all cores
        levels = max(1, math.ceil(math.log(n_ranges, fanout)))
        reduce_t = 0.0
        tasks = n_ranges
        u_level = u_range
        for _ in range(levels):
            tasks = math.ceil(tasks / fanout)
            u_level = min(u_root, u_level * fanout ** heaps)
            waves = math.ceil(tasks / cores)
            reduce_t += waves * fanout * u_level * (per_entry + bytes_per_piece / 1e9)
        loop_t = train_from * u_root / u_whole
        print(f"{n:6d} {count_t / 60:9.1f}m {reduce_t / 60:23.1f}m {loop_t / 60:10.1f}m "
              f"{(count_t + reduce_t + loop_t) / 60:8.1f}m")
    return 0


if __name__ == "__main__":
    sys.exit(main())
