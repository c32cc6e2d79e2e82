"""tokenforge: fast, exact text tokenizers with a C++ core.

    >>> import tokenforge
    >>> enc = tokenforge.get_encoding("cl100k_base")   # the same ids as tiktoken
    >>> enc.decode(enc.encode("hello world"))
    'hello world'
"""

from .encoding import Encoding
from .registry import encoding_for_model, encoding_name_for_model, get_encoding, list_encoding_names
from .vocab_cache import VocabularyNotFound
from .special import AddedToken
from .tokenizer import Tokenizer, UnknownTokenError
from . import decoders, models, normalizers, post_processors, pre_tokenizers
from .pipeline import CharBPETokenizer, CharTokenizer, PipelineTokenizer, WordPieceTokenizer, WordTokenizer
from .spm.tokenizer import SentencePieceTokenizer
from .spm.trainer import train_unigram
from .io import load
from .train import train_bpe, train_bpe_from_counts
# Imported for their registrations too: formats adds the file writers to Tokenizer.save, distributed
# adds train_bpe(engine="ray") (Ray itself is imported on use).
from . import distributed, formats

__version__ = "0.1.0"

__all__ = [
    "AddedToken",
    "decoders",
    "distributed",
    "formats",
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
