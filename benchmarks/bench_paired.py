#!/usr/bin/env python3
"""tokenforge against the fastest exact peer of each output kind, paired, on long fresh slices.

    python benchmarks/bench_paired.py [--slice 1000000] [--slices 12] [--encodings cl100k_base o200k_base]
                                      [--corpora english multilingual code] [--build DIR]

The issue's measure (#14) is one thread on fresh text: each library warms up, then encodes fresh
slices of about 2M characters once each. On this shared machine separate runs of two libraries
move 1.5x between minutes, so each row here runs `ab_builds.py` in peer mode: tokenforge and the
peer in two processes pinned to the same core, taking turns slice by slice on the same fresh
slices (each process warms up on the corpus's first slice). Rows: numpy arrays against
gigatoken's `encode`, Python lists against fastokens (one BPE thread). Printed per row: each
library's MB/s over the slices, and the median of the per-slice time ratios peer / tokenforge
(above 1: tokenforge is faster) with its quartiles.

Why long slices: with slices of 40,000 characters the two processes switch every half
millisecond, and each slice starts with the other process's data in the few megabytes of fast
memory this machine gives (docs/design.md, "Session 23"; both ran at about 80 MB/s that way,
against 130-170 MB/s with 1M-character slices); the library with the larger working set loses
more to that, which one process encoding a corpus never sees. Short
slices remain `ab_builds.py`'s way of comparing two tokenforge builds (same working set).
--build is a directory holding the tokenforge to measure (default: the one installed).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = (("numpy", "gigatoken"), ("list", "fastokens"))
RESULT = re.compile(r"a ([\d.]+) MB/s, b ([\d.]+) MB/s; median slice time a / b ([\d.]+) \(quartiles ([\d.]+)-([\d.]+)\)")


def installed_build() -> str:
    import tokenforge

    return os.path.dirname(os.path.dirname(os.path.abspath(tokenforge.__file__)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slice", type=int, default=1_000_000, help="characters per slice")
    ap.add_argument("--slices", type=int, default=12, help="at most this many (fewer if the corpus is shorter)")
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--corpora", nargs="+", default=["english", "multilingual", "code"])
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--build", default=None, help="a directory holding the tokenforge to measure (default: the installed one)")
    args = ap.parse_args()
    build = args.build or installed_build()
    print(f"one thread, fresh slices of {args.slice:,} characters taking turns on one core (ab_builds.py, peer mode); "
          "peer / tokenforge is the median of the per-slice time ratios (above 1: tokenforge faster)")
    print("| encoding, corpus, output | tokenforge MB/s | peer | peer MB/s | peer / tokenforge (quartiles) |")
    print("|---|---|---|---|---|")
    for name in args.encodings:
        for corpus in args.corpora:
            for kind, peer in ROWS:
                label = f"{name.split('_')[0]} {corpus} {kind}"
                if importlib.util.find_spec(peer) is None:
                    print(f"| {label} | skipped: {peer} is not installed |||", flush=True)
                    continue
                cmd = [sys.executable, os.path.join(HERE, "ab_builds.py"), build, peer, "--encoding", name,
                       "--corpus", corpus, "--kind", kind, "--slice", str(args.slice), "--slices", str(args.slices),
                       "--cpu", str(args.cpu)]
                out = subprocess.run(cmd, capture_output=True, text=True)
                found = RESULT.search(out.stdout)
                if out.returncode != 0 or not found:
                    print(f"| {label} | failed: {(out.stderr or out.stdout).strip()[-200:]} |||", flush=True)
                    continue
                print(row(label, peer, found), flush=True)


def row(label: str, peer: str, found: re.Match) -> str:
    """A table row from ab_builds.py's result line (a: tokenforge, b: the peer)."""
    tf, other, ratio, low, high = (float(x) for x in found.groups())
    # ab_builds gives tokenforge / peer slice times; the table reads the other way round.
    return f"| {label} | {tf:.1f} | {peer} | {other:.1f} | x{1 / ratio:.2f} ({1 / high:.2f}-{1 / low:.2f}) |"


if __name__ == "__main__":
    main()
