#!/usr/bin/env python3
"""The multilingual corpus by script: tokenforge against fastokens and gigatoken, one thread.

    python benchmarks/bench_scripts.py [--turns 3] [--encodings cl100k_base o200k_base] [--chunk 300000]
                                       [--warm english|group]

bench_encode.py's multilingual corpus (Debian's localized manual pages) mixes scripts, and one
figure for it hides where a library wins or loses. Here its lines are grouped by their main
script: lines without a non-ASCII character (the pages' option names, commands and Latin-script
words without accents), Latin with accents, Cyrillic, Greek, kana (Japanese), Han only (Chinese),
Hangul, other (a group of under 30,000 characters is left out). Each library runs in a fresh process per group, the libraries taking turns
(--turns rounds): it warms up on 300,000 characters of English prose (--warm group: on the
group's first chunk instead), then encodes the group once, in chunks of about --chunk characters (fresh text: every piece is seen for the first time
in the process, except as the group repeats itself). MB/s of UTF-8 in CPU time of the process,
the best of the turns; ratio = tokenforge / the fastest peer of the same output kind (lists:
fastokens and gigatoken; numpy arrays: gigatoken). Ids are checked equal to tiktoken's on the
first chunk of every group. Peers that are not installed are skipped.
"""

import argparse
import collections
import os
import pathlib
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_batch import documents as chunks  # noqa: E402  (pieces of about `size` characters, cut at line ends)
from bench_encode import libraries, real_corpus, setup_tiktoken_cache  # noqa: E402

GROUPS = ("ascii", "latin", "cyrillic", "greek", "kana", "han", "hangul", "other")
MIN_GROUP = 30_000  # characters: a smaller group is left out (too little text to time)


def script_of(line: str) -> str:
    """The group of a line: its most frequent non-ASCII script, kana winning over Han (Japanese)."""
    counts: collections.Counter = collections.Counter()
    for ch in line:
        o = ord(ch)
        if o < 0x80:
            continue
        if o < 0x250:
            counts["latin"] += 1
        elif 0x370 <= o < 0x400:
            counts["greek"] += 1
        elif 0x400 <= o < 0x530:
            counts["cyrillic"] += 1
        elif 0x3040 <= o < 0x3100:
            counts["kana"] += 1
        elif 0x4E00 <= o < 0xA000 or 0x3400 <= o < 0x4DC0:
            counts["han"] += 1
        elif 0xAC00 <= o < 0xD7B0 or 0x1100 <= o < 0x1200 or 0x3130 <= o < 0x3190:
            counts["hangul"] += 1
        else:
            counts["other"] += 1
    if not counts:
        return "ascii"
    if counts["kana"]:
        return "kana"
    return counts.most_common(1)[0][0]


def groups(mb: float) -> dict[str, str]:
    """The corpus's lines by group, written once beside the corpus (every worker process reads them)."""
    folder = pathlib.Path(tempfile.gettempdir()) / f"tokenforge-bench-real-{mb:g}" / "scripts"
    if not (folder / "done").exists():
        by_group: dict[str, list[str]] = {g: [] for g in GROUPS}
        for line in real_corpus(mb)["multilingual"].splitlines(keepends=True):
            by_group[script_of(line)].append(line)
        folder.mkdir(parents=True, exist_ok=True)
        for g, lines in by_group.items():
            (folder / f"{g}.txt").write_text("".join(lines), encoding="utf-8")
        (folder / "done").write_text("")
    texts = {g: (folder / f"{g}.txt").read_text(encoding="utf-8") for g in GROUPS}
    return {g: t for g, t in texts.items() if len(t) >= MIN_GROUP}


def one(args) -> None:
    """--one LIB KIND ENCODING GROUP: this fresh process's MB/s (CPU time) on the group."""
    lib, kind, name, group = args.one
    fn = libraries(name, only=lib)[lib][kind]
    text = groups(args.mb)[group]
    parts = chunks(text, args.chunk)
    if args.warm == "group" and len(parts) < 2:  # a small group: its first half warms up
        parts = chunks(text, len(text) // 2)
    if args.warm == "english":
        fn(real_corpus(args.mb)["english"][:300_000])
    else:  # the group's own first chunk, as bench_encode.py warms up on its corpus's first slice
        fn(parts.pop(0))
    parts = [(t + ".")[:-1] for t in parts]
    nbytes = sum(len(t.encode()) for t in parts)
    start = time.process_time()
    for t in parts:
        fn(t)
    print(f"{nbytes / 1e6 / (time.process_time() - start):.2f}")


def check_ids(name: str, present: dict, texts: dict[str, str], chunk: int) -> None:
    """Every library's ids (present: libraries(name)) equal tiktoken's on each group's first chunk."""
    import tiktoken

    expected = tiktoken.get_encoding(name)
    for group, text in texts.items():
        first = chunks(text, chunk)[0]
        want = expected.encode_ordinary(first)
        for lib, kinds in present.items():
            for kind, fn in kinds.items():
                got = fn(first)
                if list(got) != want:
                    raise SystemExit(f"{lib} {kind} {name} {group}: ids differ from tiktoken's")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=16)
    ap.add_argument("--chunk", type=int, default=300_000)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--warm", choices=("english", "group"), default="english",
                    help="warm up on 300,000 characters of English prose, or on the group's first chunk (not timed)")
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--one", nargs=4, metavar=("LIB", "KIND", "ENCODING", "GROUP"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    setup_tiktoken_cache()
    if args.one:
        return one(args)
    texts = groups(args.mb)
    sizes = ", ".join(f"{g} {len(t.encode()) / 1e6:.2f} MB" for g, t in texts.items())
    warm = "300,000 characters of English" if args.warm == "english" else "the group's first chunk"
    print(f"multilingual corpus by script ({sizes}); fresh process per library and group, warm-up on {warm}, "
          f"best of {args.turns} turns, MB/s of CPU time; ratio = tokenforge / fastest peer of the same output kind")
    print("| encoding, group | tokenforge list / numpy | fastokens list | gigatoken list / numpy | ratio list / numpy |")
    print("|---|---|---|---|---|")
    for name in args.encodings:
        present = libraries(name)
        check_ids(name, present, texts, args.chunk)
        runs = [(lib, kind) for lib, kinds in present.items() if lib != "tiktoken" for kind in kinds]
        for group in texts:
            best: dict = {}
            for _ in range(args.turns):
                for lib, kind in runs:
                    out = subprocess.run([sys.executable, __file__, "--one", lib, kind, name, group, "--mb", str(args.mb),
                                          "--chunk", str(args.chunk), "--warm", args.warm],
                                         check=True, capture_output=True, text=True)
                    best[lib, kind] = max(best.get((lib, kind), 0.0), float(out.stdout.split()[-1]))

            def cell(lib, kind):
                return f"{best[lib, kind]:.0f}" if (lib, kind) in best else "-"

            def ratio(kind):
                peers = [v for (lib, k), v in best.items() if k == kind and lib != "tokenforge"]
                return f"x{best['tokenforge', kind] / max(peers):.2f}" if peers else "-"

            print(f"| {name.split('_')[0]} {group} | {cell('tokenforge', 'list')} / {cell('tokenforge', 'numpy')} | "
                  f"{cell('fastokens', 'list')} | {cell('gigatoken', 'list')} / {cell('gigatoken', 'numpy')} | "
                  f"{ratio('list')} / {ratio('numpy')} |", flush=True)


if __name__ == "__main__":
    main()
