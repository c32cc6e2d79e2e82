"""Models: the stage that turns pieces (words) into ids. One module per model.

wordpiece (BERT), char_bpe (Sennrich's character-level BPE), word (word level), char (character
level). Byte-level BPE is tokenforge.Tokenizer.
"""

from .base import Model
from .char import CharLevel
from .char_bpe import CharBPE
from .word import WordLevel
from .wordpiece import WordPiece

KINDS = {cls.kind: cls for cls in (WordPiece, CharBPE, WordLevel, CharLevel)}

__all__ = ["CharBPE", "CharLevel", "KINDS", "Model", "WordLevel", "WordPiece"]
