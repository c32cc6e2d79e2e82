#!/usr/bin/env python3
"""Short texts one call at a time: the per-call cost of each library on real lines, one run.

    python benchmarks/bench_calls.py [--lines 20000] [--rounds 5] [--encodings cl100k_base o200k_base]

Many programs encode one short text per call (a chat message, a line, a record of a dataset), where
the steps around the encoding (argument checks, the special-token policy, building the result)
cost as much as the encoding itself. The texts are the non-empty lines of the real corpora of
bench_encode.py (English prose, the multilingual manual pages, Python source), the first --lines
of each, whatever their length (most are 20-120 characters). Each library encodes every line in a
Python loop: tokenforge `encode` (tiktoken's default policy: special tokens in the text raise) against
tiktoken `encode`; `encode_ordinary` against tiktoken, fastokens `encode_ordinary(t).ids` and
gigatoken's list; `encode_to_numpy` against gigatoken `backend.encode`. Microseconds per line
(process CPU time, best of --rounds, the libraries taking turns round by round) and the ratio
peer / tokenforge of the fastest peer of the same call (above 1: tokenforge is faster). Ids are
checked equal to tiktoken's first. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_encode import SHARED, real_corpus, setup_tiktoken_cache  # noqa: E402


def calls(name: str) -> dict[str, dict[str, object]]:
    """call kind -> {library: function of one text}; the peers that are not installed are left out."""
    import os

    import tiktoken

    import tokenforge

    tf, tk = tokenforge.get_encoding(name), tiktoken.get_encoding(name)
    out = {
        "encode": {"tokenforge": tf.encode, "tiktoken": tk.encode},
        "encode_ordinary": {"tokenforge": tf.encode_ordinary, "tiktoken": tk.encode_ordinary},
        "encode_to_numpy": {"tokenforge": tf.encode_to_numpy},
    }
    path = str(SHARED / "vocab" / f"{name}.tiktoken")
    try:
        os.environ["FASTOKENS_BPE_THREADS"] = "1"
        import fastokens

        f = fastokens.Tokenizer.from_tiktoken(path, encoding=name)
        out["encode_ordinary"]["fastokens"] = lambda t: f.encode_ordinary(t).ids
    except Exception as e:  # not installed
        print(f"(fastokens skipped: {type(e).__name__})")
    try:
        import gigatoken

        g = gigatoken.Tokenizer.from_tiktoken(path).backend
        out["encode_ordinary"]["gigatoken"] = lambda t: g.encode_batch_list([t], parallel=False)[0]
        out["encode_to_numpy"]["gigatoken"] = g.encode
    except Exception as e:
        print(f"(gigatoken skipped: {type(e).__name__})")
    return out


def per_line_us(fn, lines: list[str]) -> float:
    lines = [(t + ".")[:-1] for t in lines]  # new str objects: none has its UTF-8 cached yet
    start = time.process_time()
    for t in lines:
        fn(t)
    return (time.process_time() - start) / len(lines) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    args = ap.parse_args()
    setup_tiktoken_cache()
    corpora = {name: [ln for ln in text.splitlines() if ln.strip()][:args.lines]
               for name, text in real_corpus(16).items()}
    print(f"short texts, one call each, one thread: microseconds per line (best of {args.rounds} rounds); "
          "ratio = fastest peer's time / tokenforge's")
    print("| encoding, corpus (mean characters) | call | tokenforge | peers | ratio |")
    print("|---|---|---|---|---|")
    for name in args.encodings:
        table = calls(name)
        reference = table["encode_ordinary"]["tiktoken"]
        for corpus_name, lines in corpora.items():
            want = [reference(t) for t in lines]
            for kind, libs in table.items():
                for lib, fn in libs.items():
                    got = [list(map(int, fn(t))) for t in lines]
                    if got != want:
                        raise SystemExit(f"{name} {corpus_name}: {lib} {kind} ids differ from tiktoken's")
            for kind, libs in table.items():
                best = {lib: float("inf") for lib in libs}
                for _ in range(args.rounds):
                    for lib, fn in libs.items():
                        best[lib] = min(best[lib], per_line_us(fn, lines))
                peers = {lib: t for lib, t in best.items() if lib != "tokenforge"}
                fastest = min(peers, key=peers.get) if peers else None
                ratio = f"x{peers[fastest] / best['tokenforge']:.2f} ({fastest})" if fastest else "-"
                mean = sum(map(len, lines)) / len(lines)
                print(f"| {name} {corpus_name} ({mean:.0f}) | {kind} | {best['tokenforge']:.2f} | "
                      + ", ".join(f"{lib} {t:.2f}" for lib, t in peers.items()) + f" | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
