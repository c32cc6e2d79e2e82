"""Models: the stage that turns pieces (words) into ids. One module per model.

| module           | model                                                                      |
| ---------------- | -------------------------------------------------------------------------- |
| byte_bpe.py      | ByteBPE: byte-level BPE (tiktoken ranks or merges), native, fused with its split pattern |
| bpe.py           | BPE: Hugging Face's BPE with every option (prefix, suffix, byte fallback, dropout...), Python |
| char_bpe.py      | CharBPE: character BPE with word markers (Sennrich; HF's end_of_word_suffix), native |
| wordpiece.py     | WordPiece (BERT), native                                                   |
| longest_match.py | LongestMatch: greedy longest match over bytes (RWKV "world"), native      |
| word.py, char.py | WordLevel, CharLevel                                                       |
| sentencepiece.py | SentencePiece: unigram / BPE / word / char with the model file's normalizer, native |
| base.py          | what the pipeline needs from a model; the shared pair trainer              |
"""

from .base import Model
from .bpe import BPE
from .byte_bpe import ByteBPE
from .sentencepiece import SentencePiece
from .char import CharLevel
from .char_bpe import CharBPE
from .word import WordLevel
from .wordpiece import WordPiece
from .longest_match import LongestMatch

KINDS = {cls.kind: cls for cls in (WordPiece, CharBPE, WordLevel, CharLevel, LongestMatch)}

__all__ = ["BPE", "ByteBPE", "SentencePiece", "CharBPE", "CharLevel", "KINDS", "LongestMatch", "Model", "WordLevel", "WordPiece"]
