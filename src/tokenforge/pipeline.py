"""The families other than byte-level BPE and sentencepiece, as constructors of the one Tokenizer.

    >>> tok = CharBPETokenizer.train(["low lower newest widest"] * 5, vocab_size=40)
    >>> tok.decode(tok.encode("lowest newer"))
    'lowest newer'
    >>> tok = WordPieceTokenizer.train(["unaffable affable"], vocab_size=40)
    >>> tok.id_to_token(tok.encode("affable")[0])
    'affable'

Each name is a tokenforge.Tokenizer (a subclass that adds only constructors and training): the
same methods as every other tokenizer. The defaults of each family:

| name               | normalizer (default)      | pre-tokenizer (default) | model            | decoder      |
| ------------------ | ------------------------- | ----------------------- | ---------------- | ------------ |
| CharBPETokenizer   | none                      | Whitespace              | models.CharBPE   | word markers |
| WordPieceTokenizer | BertNormalizer(lowercase) | BertPreTokenizer        | models.WordPiece | WordPiece    |
| WordTokenizer      | none                      | Whitespace              | models.WordLevel | spaces       |
| CharTokenizer      | none                      | none (whole text)       | models.CharLevel | Fuse         |

PipelineTokenizer(model, normalizer=..., pre_tokenizer=..., post_processor=...) is the same with
no family defaults. The model's special tokens (`<pad> <unk> <bos> <eos>`, `[PAD] [UNK] [CLS] [SEP]
[MASK]`) are added tokens that, written in the text, stay ordinary text (neither allowed nor
disallowed: pass allowed_special="all" to match them) and that decode leaves out unless
skip_special_tokens=False; the unknown token always shows. Training reads texts (any iterable of
str: a list, a generator, an open file) and/or files (read line by line, never whole), normalizes
and pre-tokenizes them into a pre-token count, then trains the model.

Empty text and text with nothing but whitespace encode to [] (plus the post-processor's tokens).
Lone surrogates become U+FFFD, as in tiktoken.
"""

from __future__ import annotations

import io as _io
from collections import Counter
from pathlib import Path
from typing import Iterable

from . import _core
from . import normalizers as _normalizers
from . import pre_tokenizers as _pre
from .models import CharBPE, CharLevel, Model, WordLevel, WordPiece
from .models import char_bpe as _char_bpe
from .models import wordpiece as _wordpiece
from .stage import check_text as _check_text
from .stage import has_surrogates as _has_surrogates
from .stage import replace_surrogates as _replace_surrogates
from .tokenizer import Tokenizer

DEFAULT_THREADS = 8


class PipelineTokenizer(Tokenizer):
    """The one Tokenizer with the defaults of the pipeline families (see the module docstring)."""

    def __init__(self, model: Model, *, normalizer=None, pre_tokenizer=None, post_processor=None, decoder=None,
                 pad_token: str | None = None, name: str = "tokenizer", **options):
        if not isinstance(model, Model):
            raise TypeError(f"model must be a tokenforge.models model, got {type(model).__name__}")
        if "special_tokens" not in options:
            unk = getattr(model, "unk_token", None)
            options["special_tokens"] = {t: model.vocab[t] for t in model.special_tokens if t != unk}
        options.setdefault("allowed_special", frozenset())
        options.setdefault("disallowed_special", ())
        options.setdefault("skip_special_tokens", True)
        super().__init__(model, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                         decoder=decoder if decoder is not None else model.default_decoder(), pad_token=pad_token,
                         name=name, **options)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} model={self.model.kind} vocab_size={self.vocab_size}>"


# ---------------------------------------------------------------------------------------------------
# Training input


def iter_texts(texts: Iterable[str] | None = None, files: Iterable | None = None) -> Iterable[str]:
    """The training texts: an iterable of str (a list, a generator, an open text file), then the
    lines of each file (read as UTF-8, invalid bytes replaced)."""
    if texts is not None:
        if isinstance(texts, (str, Path)):
            raise TypeError("texts must be an iterable of str (for files use files=[...])")
        for t in texts:
            _check_text(t)
            yield t
    for f in files or ():
        if isinstance(f, _io.TextIOBase):
            yield from f
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            yield from fh


def count_pre_tokens(texts, files, normalize, pre_tokenizer) -> Counter:
    """The pre-token count {piece: count}, built in bounded batches of about a megabyte of text
    (normalized line by line, then split and counted natively where the splitter is native)."""
    counts: Counter = Counter()
    batch: list[str] = []
    size = 0
    how = pre_tokenizer.native

    def flush():
        if how is not None:
            try:
                counts.update(_core.count_words([normalize(t) for t in batch], how))
            except UnicodeEncodeError:  # lone surrogates: U+FFFD before normalizing, as in encode
                counts.update(_core.count_words([normalize(_replace_surrogates(t)) for t in batch], how))
        else:
            for t in batch:
                counts.update(pre_tokenizer.split(normalize(_replace_surrogates(t) if _has_surrogates(t) else t)))

    for t in iter_texts(texts, files):
        batch.append(t)
        size += len(t)
        if size > 1 << 20:
            flush()
            batch, size = [], 0
    flush()
    return counts


class _Trainable(PipelineTokenizer):
    _model_cls: type
    _default_normalizer = None
    _default_pre_tokenizer = "whitespace"

    @classmethod
    def _train(cls, texts, files, *, normalizer, pre_tokenizer, post_processor, name, **model_args):
        normalizer = _normalizers.resolve(cls._default_normalizer() if normalizer == "default" and cls._default_normalizer else
                                          (None if normalizer == "default" else normalizer))
        pre = _pre.resolve(cls._default_pre_tokenizer if pre_tokenizer == "default" else pre_tokenizer)
        counts = count_pre_tokens(texts, files, normalizer.normalize if normalizer else (lambda s: s), pre)
        model = cls._model_cls.train_from_counts(counts, **model_args)
        return cls(model, normalizer=normalizer, pre_tokenizer=pre, post_processor=post_processor, name=name)


class CharBPETokenizer(_Trainable):
    """Character-level BPE with word markers (models.CharBPE), Whitespace pre-tokenizer by default."""

    _model_cls = CharBPE

    def __init__(self, model: CharBPE, *, normalizer=None, pre_tokenizer="whitespace", post_processor=None,
                 pad_token=None, name="char_bpe"):
        super().__init__(model, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                         pad_token=pad_token, name=name)

    @classmethod
    def train(cls, texts: Iterable[str] | None = None, *, files=None, vocab_size: int = 8000, min_frequency: int = 1,
              end_of_word: str | None = "</w>", start_of_word: str | None = None, attach_markers: bool = True,
              special_tokens=_char_bpe.SPECIAL_TOKENS, unk_token: str | None = "<unk>", normalizer=None,
              pre_tokenizer="default", post_processor=None, native: bool = True, name: str = "char_bpe") -> "CharBPETokenizer":
        """Trains on texts and/or files (see models.CharBPE.train_from_counts for the rule)."""
        return cls._train(texts, files, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                          name=name, vocab_size=vocab_size, min_frequency=min_frequency, end_of_word=end_of_word,
                          start_of_word=start_of_word, attach_markers=attach_markers, special_tokens=special_tokens,
                          unk_token=unk_token, native=native)

    @classmethod
    def from_files(cls, vocab_json, merges_txt, *, end_of_word="</w>", start_of_word=None, attach_markers=True,
                   unk_token="<unk>", special_tokens=_char_bpe.SPECIAL_TOKENS, **pipeline_args) -> "CharBPETokenizer":
        """From vocab.json + merges.txt (as written by save_vocab_merges, HF or the tutorials)."""
        model = CharBPE.from_vocab_merges_files(vocab_json, merges_txt, end_of_word=end_of_word, start_of_word=start_of_word,
                                                attach_markers=attach_markers, unk_token=unk_token, special_tokens=special_tokens)
        return cls(model, **pipeline_args)

    def save_vocab_merges(self, directory, prefix: str = ""):
        """Writes vocab.json + merges.txt into directory."""
        return self.model.save_vocab_merges(directory, prefix)


class WordPieceTokenizer(_Trainable):
    """WordPiece (models.WordPiece) with BERT's normalizer and pre-tokenizer by default."""

    _model_cls = WordPiece
    _default_pre_tokenizer = "bert"

    @staticmethod
    def _default_normalizer():
        return _normalizers.BertNormalizer(lowercase=True)

    def __init__(self, model: WordPiece, *, normalizer="default", pre_tokenizer="bert", post_processor=None,
                 pad_token=None, name="wordpiece"):
        if normalizer == "default":
            normalizer = self._default_normalizer()
        super().__init__(model, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                         pad_token=pad_token, name=name)

    @classmethod
    def train(cls, texts: Iterable[str] | None = None, *, files=None, vocab_size: int = 30000, min_frequency: int = 1,
              special_tokens=_wordpiece.BERT_SPECIAL_TOKENS, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
              max_input_chars_per_word: int = 100, normalizer="default", pre_tokenizer="default", post_processor=None,
              native: bool = True, name: str = "wordpiece") -> "WordPieceTokenizer":
        """Trains with the WordPiece score (see models.WordPiece)."""
        return cls._train(texts, files, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                          name=name, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens,
                          unk_token=unk_token, continuing_subword_prefix=continuing_subword_prefix,
                          max_input_chars_per_word=max_input_chars_per_word, native=native)

    @classmethod
    def from_vocab_file(cls, path, *, lowercase: bool = True, unk_token: str = "[UNK]", max_input_chars_per_word: int = 100,
                        post_processor=None, **pipeline_args) -> "WordPieceTokenizer":
        """A BERT tokenizer from its vocab.txt: BertNormalizer(lowercase=...), BertPreTokenizer."""
        model = WordPiece.from_vocab_file(path, unk_token=unk_token, max_input_chars_per_word=max_input_chars_per_word)
        pipeline_args.setdefault("normalizer", _normalizers.BertNormalizer(lowercase=lowercase))
        return cls(model, post_processor=post_processor, **pipeline_args)


class WordTokenizer(_Trainable):
    """Word level (models.WordLevel): Whitespace pre-tokenizer by default."""

    _model_cls = WordLevel

    def __init__(self, model: WordLevel, *, normalizer=None, pre_tokenizer="whitespace", post_processor=None,
                 pad_token=None, name="word"):
        super().__init__(model, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                         pad_token=pad_token, name=name)

    @classmethod
    def train(cls, texts: Iterable[str] | None = None, *, files=None, vocab_size: int | None = None, min_frequency: int = 1,
              special_tokens=("<pad>", "<unk>", "<bos>", "<eos>"), unk_token: str = "<unk>", normalizer=None,
              pre_tokenizer="default", post_processor=None, name: str = "word") -> "WordTokenizer":
        return cls._train(texts, files, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                          name=name, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens,
                          unk_token=unk_token)


class CharTokenizer(_Trainable):
    """Character level (models.CharLevel): no pre-tokenizer by default, so spaces are characters too."""

    _model_cls = CharLevel
    _default_pre_tokenizer = None

    def __init__(self, model: CharLevel, *, normalizer=None, pre_tokenizer=None, post_processor=None,
                 pad_token=None, name="char"):
        super().__init__(model, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                         pad_token=pad_token, name=name)

    @classmethod
    def train(cls, texts: Iterable[str] | None = None, *, files=None, vocab_size: int | None = None, min_frequency: int = 1,
              special_tokens=("<pad>", "<unk>", "<bos>", "<eos>"), unk_token: str = "<unk>", normalizer=None,
              pre_tokenizer="default", post_processor=None, name: str = "char") -> "CharTokenizer":
        return cls._train(texts, files, normalizer=normalizer, pre_tokenizer=pre_tokenizer, post_processor=post_processor,
                          name=name, vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=special_tokens,
                          unk_token=unk_token)
