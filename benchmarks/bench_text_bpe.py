#!/usr/bin/env python3
"""Llama-2-style tokenizer.json files (Hugging Face BPE over plain-text tokens: byte fallback, fused
unknown tokens, no pre-tokenizer, so each text between added tokens is one piece): tokenforge
against Hugging Face `tokenizers` reading the same file, same run.

    python benchmarks/bench_text_bpe.py [--repeat 3] [--mb 1] [--doc 10000] [--threads 2] [--model PATH]

The file is built from Mistral's first sentencepiece model as transformers' LlamaConverter writes
one (tools/llama2_style_json.py; the model is cached by tools/fetch_real_tokenizers.py); with
--model (another sentencepiece BPE model, e.g. Gemma 3's, maxtext/tokenizer.gemma3 in that cache),
from that model by tokenforge's own export (`save(format="huggingface")`). Encoding:
bench_encode.py's real corpora (English prose, multilingual manual pages, Python source) in
documents of about --doc characters, one call per document, one thread, MB/s of UTF-8; each of
--repeat rounds encodes its own fresh --mb of the corpus (tokenforge's sentencepiece path keeps a
per-thread cache of words across calls, which text seen before would flatter), the best round
counts; then the same as one batch on --threads threads (tokenizers: RAYON_NUM_THREADS). Ids
checked equal. Then the same
vocabulary as the sentencepiece model itself (`tokenforge.load(tokenizer.model.v1)` against the
sentencepiece package: one call per document, and the batch with num_threads). Not collected by
pytest.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
from bench_encode import real_corpus  # noqa: E402
from bench_gguf import documents  # noqa: E402
from fetch_real_tokenizers import cache_dir  # noqa: E402
from llama2_style_json import llama2_style_json  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--doc", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", type=pathlib.Path, help="a sentencepiece BPE model (default: Mistral's v1)")
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import tokenizers

    import tokenforge

    model = args.model or cache_dir() / "mistral-common" / "tokenizer.model.v1"
    if not model.is_file():
        sys.exit(f"not downloaded: {model} (run tools/fetch_real_tokenizers.py)")
    path = pathlib.Path(tempfile.mkdtemp(prefix="llama2-style-")) / "tokenizer.json"
    if args.model is None:
        path.write_text(llama2_style_json(model), encoding="utf-8")
    else:
        tokenforge.load(model).save(path, format="huggingface")
    print(f"{model.name} as tokenizer.json and as .model")
    tok, hf = tokenforge.load(path), tokenizers.Tokenizer.from_file(str(path))
    texts = real_corpus(max(4.0, args.mb * (args.repeat + 1)))

    def rounds(corpus):
        """--repeat fresh slices of --mb (the multilingual corpus is smaller: its slices overlap)."""
        text = texts[corpus]
        size = int(args.mb * 1_000_000)
        step = max(1, min(size, (len(text) - size) // max(1, args.repeat - 1)))
        return [documents(text[k * step:], args.doc, size) for k in range(args.repeat)]

    def fresh(f, slices):
        """The best MB/s of f(docs) over the slices, one call each."""
        import time

        out = 0.0
        for docs in slices:
            t = time.perf_counter()
            f(docs)
            out = max(out, sum(len(d.encode("utf-8")) for d in docs) / (time.perf_counter() - t) / 1e6)
        return out

    print(f"{args.mb} MB of each corpus in documents of ~{args.doc} characters; MB/s, the best of {args.repeat} "
          f"fresh slices; ratio = tokenforge / tokenizers")
    for corpus in ("english", "multilingual", "code"):
        slices = rounds(corpus)
        ours = fresh(lambda docs: [tok.encode(d, add_special_tokens=False) for d in docs], slices)
        theirs = fresh(lambda docs: [hf.encode(d, add_special_tokens=False) for d in docs], slices)
        ours_batch = fresh(lambda docs: tok.encode_batch(docs, add_special_tokens=False, num_threads=args.threads), slices)
        theirs_batch = fresh(lambda docs: hf.encode_batch(docs, add_special_tokens=False), slices)
        docs = slices[0]
        same = [tok.encode(d, add_special_tokens=False) for d in docs] == \
            [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
        print(f"{corpus:<13} one thread {ours:6.1f} vs {theirs:6.1f} x{ours / theirs:5.2f}   "
              f"batch {ours_batch:6.1f} vs {theirs_batch:6.1f} x{ours_batch / theirs_batch:5.2f}"
              f"{'' if same else '   IDS DIFFER'}")
    import sentencepiece

    sp_tok, sp = tokenforge.load(model), sentencepiece.SentencePieceProcessor(model_file=str(model))
    print("the same vocabulary as a sentencepiece .model: tokenforge against sentencepiece")
    for corpus in ("english", "multilingual", "code"):
        slices = rounds(corpus)
        theirs = fresh(lambda docs: [sp.encode(d) for d in docs], slices)
        ours = fresh(lambda docs: [sp_tok.encode(d, add_special_tokens=False) for d in docs], slices)
        theirs_batch = fresh(lambda docs: sp.encode(docs, num_threads=args.threads), slices[::-1])
        ours_batch = fresh(lambda docs: sp_tok.encode_batch(docs, add_special_tokens=False, num_threads=args.threads),
                           slices[::-1])  # (a batch sees its slices after the one-thread run: they are not fresh)
        docs = slices[0]
        same = [sp_tok.encode(d, add_special_tokens=False) for d in docs] == sp.encode(docs)
        print(f"{corpus:<13} one thread {ours:6.1f} vs {theirs:6.1f} x{ours / theirs:5.2f}   "
              f"batch {ours_batch:6.1f} vs {theirs_batch:6.1f} x{ours_batch / theirs_batch:5.2f} (words seen)"
              f"{'' if same else '   IDS DIFFER'}")


if __name__ == "__main__":
    main()
