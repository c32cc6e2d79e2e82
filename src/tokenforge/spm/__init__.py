"""SentencePiece-style tokenizers: unigram and BPE models over `▁`-escaped text, byte fallback,
`.model` files read without the sentencepiece package, unigram training.

    normalizer.py   the precompiled charsmap and whitespace rules (metaspace), pure Python
    model_file.py   the `.model` protobuf, read and written by a small wire-format reader
    tokenizer.py    SentencePieceTokenizer: encode (Viterbi / BPE, sampling), decode, native core
    reference.py    the pure-Python oracle of the native code
    trainer.py      unigram training (EM + pruning)
    files.py        tokenforge's JSON file and Hugging Face tokenizer.json
"""

from .tokenizer import SentencePieceTokenizer
from .trainer import train_unigram

__all__ = ["SentencePieceTokenizer", "train_unigram"]
