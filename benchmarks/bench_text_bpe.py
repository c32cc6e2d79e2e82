#!/usr/bin/env python3
"""Llama-2-style tokenizer.json files (Hugging Face BPE over plain-text tokens: byte fallback, fused
unknown tokens, no pre-tokenizer, so each text between added tokens is one piece): tokenforge
against Hugging Face `tokenizers` reading the same file, same run.

    python benchmarks/bench_text_bpe.py [--repeat 3] [--mb 1] [--doc 10000] [--threads 2]

The file is built from Mistral's first sentencepiece model as transformers' LlamaConverter writes
one (tools/llama2_style_json.py; the model is cached by tools/fetch_real_tokenizers.py). Encoding:
bench_encode.py's real corpora (English prose, multilingual manual pages, Python source) in
documents of about --doc characters, --mb of each, one call per document, one thread, MB/s of
UTF-8, best of --repeat (neither library keeps whole texts between calls); then the corpus as one
batch on --threads threads (tokenizers: RAYON_NUM_THREADS). Ids checked equal. Then the same
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
from bench_load import best  # noqa: E402
from fetch_real_tokenizers import cache_dir  # noqa: E402
from llama2_style_json import llama2_style_json  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--doc", type=int, default=10_000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)

    import tokenizers

    import tokenforge

    model = cache_dir() / "mistral-common" / "tokenizer.model.v1"
    if not model.is_file():
        sys.exit(f"not downloaded: {model} (run tools/fetch_real_tokenizers.py)")
    path = pathlib.Path(tempfile.mkdtemp(prefix="llama2-style-")) / "tokenizer.json"
    path.write_text(llama2_style_json(model), encoding="utf-8")
    tok, hf = tokenforge.load(path), tokenizers.Tokenizer.from_file(str(path))
    texts = real_corpus(max(4.0, args.mb))
    print(f"{args.mb} MB of each corpus in documents of ~{args.doc} characters; MB/s, best of {args.repeat}; "
          f"ratio = tokenforge / tokenizers")
    for corpus in ("english", "multilingual", "code"):
        docs = documents(texts[corpus], args.doc, int(args.mb * 1_000_000))
        size = sum(len(d.encode("utf-8")) for d in docs)
        ours = best(lambda: [tok.encode(d, add_special_tokens=False) for d in docs], args.repeat)
        theirs = best(lambda: [hf.encode(d, add_special_tokens=False) for d in docs], args.repeat)
        ours_batch = best(lambda: tok.encode_batch(docs, add_special_tokens=False, num_threads=args.threads), args.repeat)
        theirs_batch = best(lambda: hf.encode_batch(docs, add_special_tokens=False), args.repeat)
        same = [tok.encode(d, add_special_tokens=False) for d in docs] == \
            [e.ids for e in hf.encode_batch(docs, add_special_tokens=False)]
        print(f"{corpus:<13} one thread {size / ours / 1e6:6.1f} vs {size / theirs / 1e6:6.1f} x{theirs / ours:5.2f}   "
              f"batch {size / ours_batch / 1e6:6.1f} vs {size / theirs_batch / 1e6:6.1f} x{theirs_batch / ours_batch:5.2f}"
              f"{'' if same else '   IDS DIFFER'}")
    import sentencepiece

    sp_tok, sp = tokenforge.load(model), sentencepiece.SentencePieceProcessor(model_file=str(model))
    print("the same vocabulary as a sentencepiece .model: tokenforge against sentencepiece")
    for corpus in ("english", "multilingual", "code"):
        docs = documents(texts[corpus], args.doc, int(args.mb * 1_000_000))
        size = sum(len(d.encode("utf-8")) for d in docs)
        ours = best(lambda: [sp_tok.encode(d, add_special_tokens=False) for d in docs], args.repeat)
        theirs = best(lambda: [sp.encode(d) for d in docs], args.repeat)
        ours_batch = best(lambda: sp_tok.encode_batch(docs, add_special_tokens=False, num_threads=args.threads), args.repeat)
        theirs_batch = best(lambda: sp.encode(docs, num_threads=args.threads), args.repeat)
        same = [sp_tok.encode(d, add_special_tokens=False) for d in docs] == sp.encode(docs)
        print(f"{corpus:<13} one thread {size / ours / 1e6:6.1f} vs {size / theirs / 1e6:6.1f} x{theirs / ours:5.2f}   "
              f"batch {size / ours_batch / 1e6:6.1f} vs {size / theirs_batch / 1e6:6.1f} x{theirs_batch / ours_batch:5.2f}"
              f"{'' if same else '   IDS DIFFER'}")


if __name__ == "__main__":
    main()
