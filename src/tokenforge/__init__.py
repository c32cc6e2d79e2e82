"""tokenforge: fast, exact text tokenizers with a C++ core.

    >>> import tokenforge
    >>> enc = tokenforge.get_encoding("cl100k_base")   # the same ids as tiktoken
    >>> enc.decode(enc.encode("hello world"))
    'hello world'
"""

from .encoding import Encoding, encoding_for_model, encoding_name_for_model
from .load import VocabularyNotFound
from .registry import get_encoding, list_encoding_names
from .tokenizer import Tokenizer, UnknownTokenError
from .io import load
from .train import train_bpe, train_bpe_from_counts
from . import distributed as _distributed  # registers train_bpe(engine="ray"); Ray itself is imported on use
from .spm import SentencePieceTokenizer, train_unigram
from . import models, normalizers, post_processors, pre_tokenizers
from .pipeline import CharBPETokenizer, CharTokenizer, PipelineTokenizer, WordPieceTokenizer, WordTokenizer

__version__ = "0.1.0"

__all__ = [
    "CharBPETokenizer",
    "CharTokenizer",
    "PipelineTokenizer",
    "WordPieceTokenizer",
    "WordTokenizer",
    "models",
    "normalizers",
    "post_processors",
    "pre_tokenizers",
    "Encoding",
    "SentencePieceTokenizer",
    "Tokenizer",
    "UnknownTokenError",
    "VocabularyNotFound",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "load",
    "train_bpe",
    "train_bpe_from_counts",
    "train_unigram",
]
