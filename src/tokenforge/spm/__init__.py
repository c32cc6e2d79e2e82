"""SentencePiece-style tokenizers: unigram and BPE models over `▁`-escaped text, byte fallback,
`.model` files read without the sentencepiece package, unigram training.

    normalizer.py   the precompiled charsmap and whitespace rules (metaspace), pure Python
    model_file.py   the `.model` protobuf, read and written by a small wire-format reader
    tokenizer.py    SentencePieceTokenizer: encode (Viterbi / BPE, sampling), decode, native core
    reference.py    the pure-Python oracle of the native code
"""

from .tokenizer import SentencePieceTokenizer

__all__ = ["SentencePieceTokenizer"]
