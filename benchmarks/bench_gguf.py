#!/usr/bin/env python3
"""GGUF files: `tokenforge.load(path)` and its encode against llama.cpp itself, same files, same run.

    python benchmarks/bench_gguf.py [--repeat 3] [--mb 1] [--doc 10000]

The files are llama.cpp's vocabulary-only GGUF files that tools/fetch_real_tokenizers.py caches
(from llama-cpp-python's sdist). The peer is llama.cpp through llama-cpp-python
(`Llama(model_path, vocab_only=True)`, `tokenize(text, add_bos=False, special=False)`), which pip
builds from source (not a test or bench dependency: `pip install llama-cpp-python`); without it only
tokenforge's figures and gguf-py's reading time are printed. Loading: best of --repeat, the two
alternating. Encoding: the real corpora of bench_encode.py (English prose, multilingual manual pages,
Python source) cut into documents of about --doc characters at line ends, --mb of each, one call per
document, one thread, MB/s of UTF-8, best of --repeat; ids are checked equal (the files where
llama.cpp's pre-processing differs from the model's tokenizer.json are marked). The sentencepiece
BPE files (llama-spm, phi-3) keep a per-thread cache of words across calls, which repeats of the
same documents flatter: `--repeat 1 --files llama-spm phi-3` for their fresh figures. Not collected
by pytest.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
from bench_encode import real_corpus  # noqa: E402
from bench_load import best  # noqa: E402
from fetch_real_tokenizers import cache_dir  # noqa: E402

NAMES = ["gpt-2", "llama-bpe", "qwen2", "deepseek-coder", "deepseek-llm", "mpt", "command-r", "starcoder",
         "falcon", "refact", "llama-spm", "phi-3", "nomic-bert-moe", "bert-bge"]


def documents(text: str, size: int, limit: int) -> list[str]:
    docs, i = [], 0
    while i < min(len(text), limit):
        j = text.find("\n", i + size)
        j = len(text) if j < 0 else j + 1
        docs.append(text[i:j])
        i = j
    return docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--doc", type=int, default=10_000)
    ap.add_argument("--files", nargs="+", choices=NAMES, default=NAMES, help="which files (default: all)")
    args = ap.parse_args()

    import tokenforge

    try:
        import llama_cpp
    except ImportError:
        llama_cpp = None
        print("(llama-cpp-python not installed: tokenforge's figures only)")
    folder = cache_dir() / "llama-cpp-python"
    texts = real_corpus(max(4.0, args.mb))  # (bench_encode.py's real corpora; the multilingual is smaller)
    corpora = {name: documents(texts[name], args.doc, int(args.mb * 1_000_000)) for name in ("english", "multilingual", "code")}
    print(f"load: best of {args.repeat}; encode: {args.mb} MB of each corpus in documents of ~{args.doc} characters, "
          "one call each, one thread, MB/s (ratio = tokenforge / llama.cpp)")
    print(f"{'file':<16} {'load tokenforge':>16} {'llama.cpp':>10}   " +
          "   ".join(f"{c:>26}" for c in corpora))
    for name in args.files:
        path = folder / f"ggml-vocab-{name}.gguf"
        if not path.is_file():
            print(f"{name:<16} not downloaded (run tools/fetch_real_tokenizers.py)")
            continue
        p = str(path)
        ours_load = best(lambda: tokenforge.load(p), args.repeat)
        theirs_load = best(lambda: llama_cpp.Llama(model_path=p, vocab_only=True, verbose=False),
                           args.repeat) if llama_cpp else None
        tok = tokenforge.load(p)
        model = llama_cpp.Llama(model_path=p, vocab_only=True, verbose=False) if llama_cpp else None
        sentencepiece = name in ("llama-spm", "phi-3", "nomic-bert-moe")
        cells = []
        for docs in corpora.values():
            size = sum(len(d.encode("utf-8")) for d in docs)
            encode = tok.encode_ordinary if sentencepiece else (lambda d: tok.encode(d, add_special_tokens=False))
            ours = best(lambda: [encode(d) for d in docs], args.repeat)
            if model is None:
                cells.append(f"{size / ours / 1e6:8.1f}")
                continue
            raw = [d.encode("utf-8") for d in docs]
            theirs = best(lambda: [model.tokenize(r, add_bos=False, special=not sentencepiece) for r in raw],
                          args.repeat)
            same = all(encode(d) == model.tokenize(r, add_bos=False, special=not sentencepiece)
                       for d, r in zip(docs, raw))
            cells.append(f"{size / ours / 1e6:7.1f} vs {size / theirs / 1e6:6.1f} x{theirs / ours:6.1f}{'' if same else '*'}")
        load = f"{ours_load * 1000:10.0f} ms" + (f" {theirs_load * 1000:7.0f} ms x{theirs_load / ours_load:4.2f}"
                                                   if theirs_load else "")
        print(f"{name:<16} {load}   " + "   ".join(f"{c:>26}" for c in cells))
    if llama_cpp:
        print("* ids differ from llama.cpp's on that corpus (tests/test_gguf.py: where llama.cpp's pre-processing "
              "differs from the model's tokenizer.json, which tokenforge follows)")


if __name__ == "__main__":
    main()
