"""Training and encoding throughput of tokenforge's WordPiece, character-level BPE, word- and
character-level tokenizers against Hugging Face `tokenizers`, same model, same settings, same run.

    python benchmarks/bench_other.py [--mb 4] [--threads 2]

Encoding: one call per text (`encode`) over lines, and a batch call (`encode_batch`) with the same
number of threads for both libraries (HF's RAYON_NUM_THREADS is set before it is imported). Both
sides produce the same ids (checked). Training: the same texts, the same vocabulary size;
WordPiece training is not the same algorithm (HF's WordPieceTrainer is BPE by count, tokenforge's
uses the WordPiece score), so that ratio compares two different trainers and is marked so.
Ratios > 1 mean tokenforge is faster. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"


def corpus(mb: float) -> list[str]:
    text = (SHARED / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    text += (SHARED / "corpora" / "taylorswift.txt").read_text(encoding="utf-8")
    import sysconfig

    for p in sorted(pathlib.Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        if len(text) > mb * 1e6:
            break
        text += p.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    # Paragraph-sized texts (~20 lines), as documents are usually encoded.
    return ["".join(lines[i : i + 20]) for i in range(0, len(lines), 20)]


def timed(f, repeat=3):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--vocab", type=int, default=8000)
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    import tokenizers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    import tokenforge as tf

    docs = corpus(args.mb)
    mbytes = sum(len(d.encode()) for d in docs) / 1e6
    print(f"corpus: {len(docs)} texts, {mbytes:.1f} MB; threads={args.threads}; tokenizers {tokenizers.__version__}")
    print(f"{'what':44s} {'tokenforge':>12s} {'tokenizers':>12s} {'ratio':>7s}")

    def row(what, tf_s, hf_s, unit="MB/s", note=""):
        print(f"{what:44s} {mbytes / tf_s:10.2f}{unit[:2]:>2s} {mbytes / hf_s:10.2f}{unit[:2]:>2s} {hf_s / tf_s:7.2f} {note}")

    # ---- character-level BPE -------------------------------------------------------------------
    specials = ["<pad>", "<unk>", "<bos>", "<eos>"]
    hf_t, hb = timed(lambda: _hf_bpe_train(docs, args.vocab, specials), repeat=1)
    tf_t, cb = timed(lambda: tf.CharBPETokenizer.train(docs, vocab_size=args.vocab), repeat=1)
    row("char BPE: train (vocab %d)" % args.vocab, tf_t, hf_t)
    # Encode with the same model on both sides: tokenforge's vocab + merges loaded into HF.
    import tempfile

    d = tempfile.mkdtemp()
    cb.save_vocab_merges(d)
    hb = Tokenizer(models.BPE.from_file(f"{d}/vocab.json", f"{d}/merges.txt", unk_token="<unk>", end_of_word_suffix="</w>"))
    hb.pre_tokenizer = pre_tokenizers.Whitespace()
    _compare(row, "char BPE", docs, cb, hb)

    # ---- WordPiece -----------------------------------------------------------------------------
    bert_specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    hw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    hw.normalizer = normalizers.BertNormalizer(lowercase=True)
    hw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf_t, _ = timed(lambda: hw.train_from_iterator(docs, trainers.WordPieceTrainer(vocab_size=args.vocab, special_tokens=bert_specials, show_progress=False)), repeat=1)
    tf_t, wp_own = timed(lambda: tf.WordPieceTokenizer.train(docs, vocab_size=args.vocab), repeat=1)
    row("WordPiece: train (different algorithms!)", tf_t, hf_t, note="HF = BPE by count; tokenforge = WordPiece score")
    wp = tf.WordPieceTokenizer(tf.models.WordPiece(hw.get_vocab()))  # HF's vocabulary on both sides
    _compare(row, "WordPiece (BERT normalizer)", docs, wp, hw)

    # Non-ASCII text takes the slower normalizer path (NFD, mark and CJK classes): measure it too.
    multi = _multilingual(len(docs))
    mb_multi = sum(len(d.encode()) for d in multi) / 1e6
    ours_t, ours = timed(lambda: wp.encode_batch(multi))
    theirs_t, theirs = timed(lambda: [e.ids for e in hw.encode_batch(multi)])
    print(f"{'WordPiece: encode_batch, multilingual text':44s} {mb_multi / ours_t:10.2f}MB {mb_multi / theirs_t:10.2f}MB "
          f"{theirs_t / ours_t:7.2f} {'same ids' if ours == theirs else 'IDS DIFFER'}")
    ours_t, ours = timed(lambda: cb.encode_batch(multi))
    theirs_t, theirs = timed(lambda: [e.ids for e in hb.encode_batch(multi)])
    print(f"{'char BPE: encode_batch, multilingual text':44s} {mb_multi / ours_t:10.2f}MB {mb_multi / theirs_t:10.2f}MB "
          f"{theirs_t / ours_t:7.2f} {'same ids' if ours == theirs else 'IDS DIFFER'}")

    # ---- word level ----------------------------------------------------------------------------
    hwl = Tokenizer(models.WordLevel(unk_token="<unk>"))
    hwl.pre_tokenizer = pre_tokenizers.Whitespace()
    hf_t, _ = timed(lambda: hwl.train_from_iterator(docs, trainers.WordLevelTrainer(vocab_size=args.vocab, special_tokens=specials, show_progress=False)), repeat=1)
    tf_t, wl = timed(lambda: tf.WordTokenizer.train(docs, vocab_size=args.vocab), repeat=1)
    row("word level: train", tf_t, hf_t)
    hwl = Tokenizer(models.WordLevel(wl.vocab, unk_token="<unk>"))
    hwl.pre_tokenizer = pre_tokenizers.Whitespace()
    _compare(row, "word level", docs, wl, hwl)


def _multilingual(n: int) -> list[str]:
    """tests/conftest.py's multilingual sample (11 scripts, emoji, odd whitespace), n texts."""
    import ast

    tree = ast.parse((HERE.parent / "tests" / "conftest.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "MULTILINGUAL":
            text = ast.literal_eval(node.value)
            return [text] * max(n // 4, 1)
    raise RuntimeError("MULTILINGUAL not found in tests/conftest.py")


def _hf_bpe_train(docs, vocab, specials):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    hb = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    hb.pre_tokenizer = pre_tokenizers.Whitespace()
    hb.train_from_iterator(docs, trainers.BpeTrainer(vocab_size=vocab, end_of_word_suffix="</w>", special_tokens=specials, show_progress=False))
    return hb


def _compare(row, name, docs, tok, hf):
    ours_t, ours = timed(lambda: [tok.encode(t) for t in docs])
    theirs_t, theirs = timed(lambda: [e.ids for e in (hf.encode(t) for t in docs)])
    same = "same ids" if ours == theirs else "IDS DIFFER"
    row(f"{name}: encode, one call per text", ours_t, theirs_t, note=same)
    ours_t, ours = timed(lambda: tok.encode_batch(docs))
    theirs_t, theirs = timed(lambda: [e.ids for e in hf.encode_batch(docs)])
    same = "same ids" if ours == theirs else "IDS DIFFER"
    row(f"{name}: encode_batch", ours_t, theirs_t, note=same)


if __name__ == "__main__":
    sys.exit(main())
