#!/usr/bin/env python3
"""RWKV's "world" tokenizer (greedy longest match over bytes): `tokenforge.load(rwkv_vocab_v20230424.txt)`
against the rwkv package's own tokenizer and the native ones on PyPI, same file, same run.

    python benchmarks/bench_rwkv.py [--repeat 3] [--mb 1] [--doc 10000] [--threads 2]

The vocabulary and the rwkv package's TRIE_TOKENIZER (pure Python, the reference) are the ones
tools/fetch_real_tokenizers.py caches. Optional peers, measured when installed (not dependencies):
`pyrwkv-tokenizer` and `rwkv-tokenizer` (Rust, each with a copy of the same vocabulary). Loading:
best of --repeat. Encoding: bench_encode.py's real corpora (English prose, multilingual manual
pages, Python source) in documents of about --doc characters, --mb of each, one call per document,
one thread, MB/s of UTF-8, best of --repeat; then the whole corpus as one batch on --threads
threads. Every peer's ids are checked against tokenforge's (the pure-Python reference on the first
200,000 characters of each corpus: it runs at 1-2 MB/s). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
from bench_encode import real_corpus  # noqa: E402
from bench_gguf import documents  # noqa: E402
from bench_load import best  # noqa: E402
from fetch_real_tokenizers import cache_dir  # noqa: E402


def peers(vocab: pathlib.Path) -> dict:
    """name -> (load(), the loaded tokenizer's encode(text), its encode_batch(texts) or None)."""
    out = {}
    spec = importlib.util.spec_from_file_location("rwkv_reference", cache_dir() / "rwkv" / "code" / "rwkv_tokenizer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out["rwkv (Python)"] = lambda: module.TRIE_TOKENIZER(str(vocab)), lambda t: t.encode, None
    for package in ("pyrwkv_tokenizer", "rwkv_tokenizer"):
        try:
            lib = __import__(package)
        except ImportError:
            print(f"({package} not installed)")
            continue
        out[package] = (lambda lib=lib: lib.WorldTokenizer(str(vocab)), lambda t: t.encode,
                        lambda t: getattr(t, "encode_batch", None))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--doc", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import tokenforge

    vocab = cache_dir() / "rwkv" / "rwkv_vocab_v20230424.txt"
    if not vocab.is_file():
        sys.exit(f"not downloaded: {vocab} (run tools/fetch_real_tokenizers.py)")
    texts = real_corpus(max(4.0, args.mb))
    corpora = {name: documents(texts[name], args.doc, int(args.mb * 1_000_000)) for name in ("english", "multilingual", "code")}
    ours_load = best(lambda: tokenforge.load(vocab), args.repeat)
    tok = tokenforge.load(vocab)
    print(f"load, best of {args.repeat}: tokenforge {ours_load * 1000:.0f} ms")
    others = peers(vocab)
    loaded = {}
    for name, (load, _, _) in others.items():
        seconds = best(load, 1 if "Python" in name else args.repeat)
        loaded[name] = load()
        print(f"  {name}: {seconds * 1000:.0f} ms (x{seconds / ours_load:.1f} tokenforge's time)")
    print(f"encode: {args.mb} MB of each corpus in documents of ~{args.doc} characters, one call each, one thread, "
          f"MB/s; batch: the corpus on {args.threads} threads")
    for corpus, docs in corpora.items():
        size = sum(len(d.encode("utf-8")) for d in docs)
        ours = best(lambda: [tok.encode(d) for d in docs], args.repeat)
        ours_batch = best(lambda: tok.encode_batch(docs, num_threads=args.threads), args.repeat)
        want = [tok.encode(d) for d in docs]
        row = [f"{corpus:<13} tokenforge {size / ours / 1e6:6.1f} (batch {size / ours_batch / 1e6:6.1f})"]
        for name, (_, encode_of, batch_of) in others.items():
            encode = encode_of(loaded[name])
            if "Python" in name:
                sample, n = [], 0
                for d in docs:
                    if n > 200_000:
                        break
                    sample.append(d)
                    n += len(d)
                seconds = best(lambda: [encode(d) for d in sample], 1)
                same = all(encode(d) == w for d, w in zip(sample, want))
                row.append(f"{name} {sum(len(d.encode()) for d in sample) / seconds / 1e6:5.1f}{'' if same else '*'}")
                continue
            seconds = best(lambda: [encode(d) for d in docs], args.repeat)
            same = all(list(encode(d)) == w for d, w in zip(docs, want))
            cell = f"{name} {size / seconds / 1e6:6.1f}{'' if same else '*'}"
            batch = batch_of(loaded[name])
            if batch is not None:
                cell += f" (batch {size / best(lambda: batch(docs), args.repeat) / 1e6:6.1f})"
            row.append(cell)
        print("   ".join(row))
    print("* ids differ from tokenforge's")


if __name__ == "__main__":
    main()
