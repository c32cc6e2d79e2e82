"""BPE training: tokenforge against rustbpe, Hugging Face tokenizers and bpeasy, side by side.

Each engine trains in its own subprocess on the same corpus, with the same vocabulary size and the
GPT-4 (cl100k) split pattern; the parent reports wall time (inside the child: reading the corpus plus
training, not the interpreter start) and the child's peak RSS (os.wait4, i.e. getrusage of that one
child), best of --runs, and the ratios to tokenforge.

    python /work/shared/tools/make_bench_corpus.py /tmp/prose.txt --kind prose --mb 11
    python benchmarks/bench_train.py /tmp/prose.txt --vocab 10000 --runs 3

How each engine gets the text (the way its documentation shows):
  tokenforge  train_bpe(path): reads the file itself in chunks, splits on <|endoftext|>.
  rustbpe     Tokenizer().train_from_iterator(docs): the file split on <|endoftext|> into documents.
  tokenizers  BPE + BpeTrainer, pre-tokenizer Split(GPT-4 regex, isolated) + ByteLevel(no regex),
              initial alphabet = the 256 bytes, <|endoftext|> as a special token; Tokenizer.train([path])
              (reads the file itself, line by line).
  bpeasy      train_bpe(iter(docs), GPT-4 regex, max_token_length=128, vocab_size).
vocab_size counts the 256 bytes, the merges and (where supported) the one special token, so the
number of merges differs by at most one between engines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ENGINES = ["tokenforge", "rustbpe", "tokenizers", "bpeasy"]
SPECIAL = "<|endoftext|>"

# The GPT-4 split pattern (tiktoken's cl100k_base).
GPT4 = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


def _docs(paths: list[str]) -> list[str]:
    docs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            docs += f.read().split(SPECIAL)
    return docs


def run_engine(engine: str, paths: list[str], vocab: int, workers: int | None) -> dict:
    t0 = time.perf_counter()
    if engine == "tokenforge":
        import tokenforge

        tok = tokenforge.train_bpe(paths, vocab, pattern="cl100k", special_tokens=[SPECIAL], num_workers=workers, verbose=False)
        n = tok.n_vocab
    elif engine == "rustbpe":
        import rustbpe

        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(iter(_docs(paths)), vocab, pattern=GPT4)
        n = tok.vocab_size
    elif engine == "tokenizers":
        from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(GPT4), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab,
            special_tokens=[SPECIAL],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
            min_frequency=0,
        )
        tok.train(paths, trainer)
        n = tok.get_vocab_size()
    elif engine == "bpeasy":
        import bpeasy

        ranks = bpeasy.train_bpe(iter(_docs(paths)), GPT4, 128, vocab)
        n = len(ranks)
    else:
        raise ValueError(engine)
    return {"seconds": time.perf_counter() - t0, "vocab": n}


def measure(engine: str, paths: list[str], vocab: int, workers: int | None) -> dict:
    """Runs one engine in a fresh interpreter; peak RSS is that child's ru_maxrss (os.wait4)."""
    import tempfile

    cmd = [sys.executable, os.path.abspath(__file__), "--child", engine, "--vocab", str(vocab), *paths]
    if workers:
        cmd += ["--workers", str(workers)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            return {"error": (err.read().strip().splitlines() or [f"exit code {proc.returncode}"])[-1]}
        result = json.loads(out.read().strip().splitlines()[-1])
    result["rss_mb"] = usage.ru_maxrss / 1024  # kilobytes on Linux
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="+")
    ap.add_argument("--vocab", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--workers", type=int, default=None, help="tokenforge's num_workers (default: all CPUs)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(run_engine(a.child, a.corpus, a.vocab, a.workers)))
        return

    size = sum(os.path.getsize(p) for p in a.corpus) / 1e6
    engines = a.engines.split(",")
    print(f"corpus {', '.join(a.corpus)} ({size:.1f} MB), vocab {a.vocab}, GPT-4 pattern, best of {a.runs}, {os.cpu_count()} CPUs")
    best: dict[str, dict] = {}
    for run in range(a.runs):  # interleaved, so that load from other processes hits every engine alike
        for e in engines:
            r = measure(e, a.corpus, a.vocab, a.workers)
            if "error" in r:
                best.setdefault(e, r)
                continue
            b = best.get(e)
            if b is None or "error" in b:
                best[e] = dict(r, all=[r["seconds"]])
            else:
                b["all"].append(r["seconds"])
                b["seconds"] = min(b["seconds"], r["seconds"])
                b["rss_mb"] = min(b["rss_mb"], r["rss_mb"])
    base = best.get("tokenforge", {})
    print(f"{'engine':<12}{'seconds':>9}{'peak RSS MB':>13}{'vocab':>8}   {'time / tokenforge':>18}{'RSS / tokenforge':>18}   all runs (s)")
    for e in engines:
        r = best[e]
        if "error" in r:
            print(f"{e:<12}  failed: {r['error']}")
            continue
        tr = r["seconds"] / base["seconds"] if "seconds" in base else float("nan")
        mr = r["rss_mb"] / base["rss_mb"] if "rss_mb" in base else float("nan")
        runs = " ".join(f"{s:.2f}" for s in r["all"])
        print(f"{e:<12}{r['seconds']:>9.2f}{r['rss_mb']:>13.1f}{r['vocab']:>8}   {tr:>17.2f}x{mr:>17.2f}x   {runs}")


if __name__ == "__main__":
    main()
