"""A Llama-2-style tokenizer.json from a sentencepiece BPE model, as transformers' LlamaConverter
writes one (legacy Llama 2): the pieces as the vocabulary, every split of a piece into two pieces a
merge, ordered by the merged piece's id (its score order), byte fallback and fused unknown tokens,
the Metaspace work done by the normalizer (Prepend + Replace), no pre-tokenizer.

Used by tests/test_bpe_model.py and benchmarks/bench_load.py on Mistral's first sentencepiece model
(tools/fetch_real_tokenizers.py caches it): such files ship with Llama 2, Mistral 7B v0.1 and their
many fine-tunes. Needs sentencepiece and tokenizers.
"""

from __future__ import annotations

from pathlib import Path


def llama2_style_json(model_file: Path) -> str:
    import sentencepiece
    import tokenizers
    from tokenizers import decoders, models, normalizers

    sp = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    merges = sorted((i, vocab[p[:k]], vocab[p[k:]], p[:k], p[k:]) for p, i in vocab.items() for k in range(1, len(p))
                    if p[:k] in vocab and p[k:] in vocab)
    t = tokenizers.Tokenizer(models.BPE(vocab, [(a, b) for *_, a, b in merges], unk_token="<unk>", fuse_unk=True,
                                        byte_fallback=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    t.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                   decoders.Strip(" ", 1, 0)])
    t.add_special_tokens(["<unk>", "<s>", "</s>"])
    return t.to_str()
