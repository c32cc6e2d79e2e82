#!/usr/bin/env python3
"""SentencePiece-style models: tokenforge against the sentencepiece package, same corpus, same run.

    python benchmarks/bench_sentencepiece.py [--mb 4] [--train-mb 2] [--vocab 8000] [--repeat 3]

Corpus: ../shared/tools/make_bench_corpus.py (mixed prose, multilingual, code), split in lines.
  train    unigram training on the first --train-mb MB (sentencepiece with all cores, tokenforge's
           trainer), wall time; both vocabularies are then used to encode the rest, and the number
           of pieces each produces is printed (lower is better compression).
  encode   models trained by sentencepiece (unigram and bpe, byte fallback, nmt_nfkc), loaded by
           tokenforge from the .model bytes; ids checked equal, then MB/s of
             lines    one call per line, one thread
             batch    all lines in one call, 2 threads (sentencepiece's num_threads=2)
             docs     ~4 KB documents, one call each, one thread
Prints best-of-repeat MB/s for both and the ratio tokenforge / sentencepiece. The machine is
shared: one-thread cases are timed in process CPU time (steady under load); threaded cases and
training in wall time, training also in CPU time (sentencepiece trains on all cores).
"""

import argparse
import io
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_encode import best_times, corpus  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=4)
    ap.add_argument("--train-mb", type=float, default=2)
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import sentencepiece as spm

    import tokenforge
    from tokenforge import SentencePieceTokenizer

    text = corpus(args.mb)
    lines = [l for l in text.splitlines() if l.strip()]
    cut, size = 0, 0
    while cut < len(lines) and size < args.train_mb * 1e6:
        size += len(lines[cut].encode()) + 1
        cut += 1
    train, rest = lines[:cut], lines[cut:] or lines
    mb_rest = sum(len(l.encode()) + 1 for l in rest) / 1e6
    print(f"corpus {args.mb} MB mixed, {len(lines)} lines; training on {size / 1e6:.1f} MB, vocab {args.vocab}; "
          f"{os.cpu_count()} cores\n")

    # ---- training
    def sp_train(model_type="unigram", byte_fallback=True):
        out = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(train), model_writer=out, vocab_size=args.vocab,
                                       model_type=model_type, byte_fallback=byte_fallback, minloglevel=2,
                                       num_threads=os.cpu_count())
        return out.getvalue()

    walls, cpus = {}, {}
    for _ in range(2):
        for name, fn in (("sp", sp_train), ("tf", lambda: tokenforge.train_unigram(train, args.vocab, byte_fallback=True))):
            w, c = time.perf_counter(), time.process_time()
            result = fn()
            walls[name] = min(walls.get(name, 1e9), time.perf_counter() - w)
            cpus[name] = min(cpus.get(name, 1e9), time.process_time() - c)
            if name == "sp":
                sp_unigram = result
            else:
                ours = result
    t_sp, t_tf = walls["sp"], walls["tf"]
    sp_ours = spm.SentencePieceProcessor(model_proto=ours.to_model_bytes())
    sp_theirs = spm.SentencePieceProcessor(model_proto=sp_unigram)
    n_ours = sum(map(len, ours.encode_batch(rest, num_threads=2)))
    n_theirs = sum(map(len, sp_theirs.encode(rest, num_threads=2)))
    same = sp_ours.encode(rest[:2000]) == ours.encode_batch(rest[:2000])
    print(f"{'train unigram (wall)':<22} sentencepiece {t_sp:6.2f} s   tokenforge {t_tf:6.2f} s   ratio {t_sp / t_tf:5.2f}x")
    print(f"{'train unigram (cpu)':<22} sentencepiece {cpus['sp']:6.2f} s   tokenforge {cpus['tf']:6.2f} s   "
          f"ratio {cpus['sp'] / cpus['tf']:5.2f}x")
    print(f"{'':<22} pieces on the held-out text: sentencepiece's {n_theirs}, tokenforge's {n_ours} "
          f"({n_ours / n_theirs:.3f}x); sentencepiece encodes tokenforge's .model identically: {same}\n")

    # ---- encoding
    docs, cur = [], []
    for l in rest:
        cur.append(l)
        if sum(map(len, cur)) > 4000:
            docs.append("\n".join(cur))
            cur = []
    for model_type in ("unigram", "bpe"):
        data = sp_unigram if model_type == "unigram" else sp_train("bpe")
        sp = spm.SentencePieceProcessor(model_proto=data)
        tok = SentencePieceTokenizer.from_bytes(data)
        if tok.encode_batch(rest, num_threads=2) != sp.encode(rest, num_threads=2):
            raise SystemExit(f"{model_type}: ids differ from sentencepiece")
        if [tok.encode(d) for d in docs] != [sp.encode(d) for d in docs]:
            raise SystemExit(f"{model_type}: ids differ from sentencepiece on documents")
        cpu = time.process_time
        cases = {
            "lines (cpu)": ([lambda: [tok.encode(l) for l in rest], lambda: [sp.encode(l) for l in rest]], mb_rest, cpu),
            "batch 2 thr (wall)": ([lambda: tok.encode_batch(rest, num_threads=2),
                                    lambda: sp.encode(rest, num_threads=2)], mb_rest, time.perf_counter),
            "docs (cpu)": ([lambda: [tok.encode(d) for d in docs], lambda: [sp.encode(d) for d in docs]],
                           sum(len(d.encode()) for d in docs) / 1e6, cpu),
        }
        for name, (fns, mb, clock) in cases.items():
            t_tf, t_sp = best_times(fns, args.repeat, clock)
            print(f"encode {model_type:<8} {name:<18} sentencepiece {mb / t_sp:6.1f} MB/s   tokenforge "
                  f"{mb / t_tf:6.1f} MB/s   ratio {t_sp / t_tf:5.2f}x")
        print()


if __name__ == "__main__":
    main()
