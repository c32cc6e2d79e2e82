"""PipelineTokenizer: normalize -> pre-tokenize -> model -> post-process, and back.

The tokenizers of the tutorials other than byte-level BPE, with the interface of tokenforge's
byte-level Tokenizer (encode / decode / encode_batch / save / tokenforge.load):

    >>> tok = CharBPETokenizer.train(["low lower newest widest"] * 5, vocab_size=40)
    >>> tok.decode(tok.encode("lowest newer"))
    'lowest newer'
    >>> tok = WordPieceTokenizer.train(["unaffable affable"], vocab_size=40)
    >>> tok.id_to_token(tok.encode("affable")[0])
    'affable'

| class              | normalizer (default)      | pre-tokenizer (default) | model                  |
| ------------------ | ------------------------- | ----------------------- | ---------------------- |
| CharBPETokenizer   | none                      | Whitespace              | models.CharBPE         |
| WordPieceTokenizer | BertNormalizer(lowercase) | BertPreTokenizer        | models.WordPiece       |
| WordTokenizer      | none                      | Whitespace              | models.WordLevel       |
| CharTokenizer      | none                      | none (whole text)       | models.CharLevel       |

Every stage can be replaced (normalizer=..., pre_tokenizer=..., post_processor=...). Training
reads texts (any iterable of str: a list, a generator, an open file) and/or files (read line by
line, never whole), normalizes and pre-tokenizes them into a pre-token count, then trains the model.

Special tokens (`<pad> <unk> <bos> <eos>`, `[PAD] [UNK] [CLS] [SEP] [MASK]`) come only from the
model's unknown-token rule and the post-processor: written in the text they are ordinary text.

Empty text and text with nothing but whitespace encode to [] (plus the post-processor's tokens).
Lone surrogates become U+FFFD, as in tiktoken.
"""

from __future__ import annotations

import io as _io
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from . import _core
from . import normalizers as _normalizers
from . import post_processors as _post
from . import pre_tokenizers as _pre
from .models import KINDS, CharBPE, CharLevel, Model, WordLevel, WordPiece
from .models import char_bpe as _char_bpe
from .models import wordpiece as _wordpiece

DEFAULT_THREADS = 8


def _replace_surrogates(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


class PipelineTokenizer:
    """A tokenizer made of a normalizer, a pre-tokenizer, a model and a post-processor."""

    def __init__(self, model: Model, *, normalizer=None, pre_tokenizer=None, post_processor=None,
                 pad_token: str | None = None, name: str = "tokenizer"):
        if not isinstance(model, Model):
            raise TypeError(f"model must be a tokenforge.models model, got {type(model).__name__}")
        self.model = model
        self.normalizer = _normalizers.resolve(normalizer)
        self.pre_tokenizer = _pre.resolve(pre_tokenizer)
        self.post_processor = post_processor
        self._prefix_ids, self._suffix_ids = post_processor.bind(model.token_to_id) if post_processor else ([], [])
        if pad_token is None:
            pad_token = next((t for t in ("<pad>", "[PAD]") if t in model.vocab), None)
        elif pad_token not in model.vocab:
            raise ValueError(f"the pad token {pad_token!r} is not in the vocabulary")
        self.pad_token = pad_token
        self.name = name
        self._skip_ids = {model.vocab[t] for t in model.special_tokens if t != getattr(model, "unk_token", None)}

    # -- the stages -------------------------------------------------------------------------------
    def normalize(self, text: str) -> str:
        return self.normalizer.normalize(text) if self.normalizer is not None else text

    def pre_tokenize(self, text: str) -> list[str]:
        """The pieces (words) the model sees: normalized, then split."""
        return self.pre_tokenizer.split(self.normalize(text))

    def _words(self, text: str) -> list[str]:
        _check_text(text)
        if _has_surrogates(text):
            text = _replace_surrogates(text)
        return self.pre_tokenize(text)

    # -- encoding ---------------------------------------------------------------------------------
    def _normalized(self, text: str) -> str:
        _check_text(text)
        return self.normalize(text)

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """The ids of text (with the post-processor's special tokens unless add_special_tokens=False)."""
        how = self.pre_tokenizer.native
        if how is not None:  # split and encode in one native call
            try:
                ids = self.model.encode_text(self._normalized(text), how)
            except UnicodeEncodeError:  # lone surrogates: U+FFFD before normalizing (as HF sees them)
                ids = self.model.encode_text(self._normalized(_replace_surrogates(text)), how)
        else:
            ids = self.model.encode_words(self._words(text))
        if add_special_tokens and (self._prefix_ids or self._suffix_ids):
            ids = self._prefix_ids + ids + self._suffix_ids
        return ids

    def encode_reference(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """encode through the regex pre-tokenizer and the pure-Python model (the oracle of the
        native code)."""
        ids = self.model.encode_words_reference(self.pre_tokenizer.split_reference(self._normalized(_replace_surrogates(text))))
        if add_special_tokens:
            ids = self._prefix_ids + ids + self._suffix_ids
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The token texts of text (without the post-processor's tokens)."""
        return self.model.tokens_of(self.encode(text, add_special_tokens=False))

    def encode_batch(self, texts: Sequence[str], *, num_threads: int = DEFAULT_THREADS, add_special_tokens: bool = True,
                     padding=False, truncation: bool = False, max_length: int | None = None):
        """Encodes many texts, the model in parallel native threads.

        Without padding or truncation: a list of id lists, equal to [encode(t) for t in texts].
        With padding=True / "longest" / "max_length" or truncation=True: a BatchEncoding of numpy
        int64 arrays (ids, attention_mask), rows padded on the right with the pad token; truncation
        cuts each text's ids so that, with the template's tokens, a row has at most max_length.
        """
        if isinstance(texts, str):
            raise TypeError("encode_batch takes a list of str, not a str")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        how = self.pre_tokenizer.native
        if how is not None:
            texts = list(texts)
            try:
                rows = self.model.encode_texts([self._normalized(t) for t in texts], how, num_threads)
            except UnicodeEncodeError:
                rows = self.model.encode_texts([self._normalized(_replace_surrogates(t)) for t in texts], how, num_threads)
        else:
            rows = self.model.encode_batch_words([self._words(t) for t in texts], num_threads)
        if truncation:
            if max_length is None:
                raise ValueError("truncation needs max_length")
            room = max_length - (len(self._prefix_ids) + len(self._suffix_ids) if add_special_tokens else 0)
            if room < 0:
                raise ValueError(f"max_length={max_length} is shorter than the template's special tokens")
            rows = [r[:room] for r in rows]
        if add_special_tokens and (self._prefix_ids or self._suffix_ids):
            rows = [self._prefix_ids + r + self._suffix_ids for r in rows]
        if padding in (False, None, "do_not_pad") and not truncation:
            return rows
        if max_length is not None and padding in (True, "longest") and any(len(r) > max_length for r in rows):
            raise ValueError("a row is longer than max_length: pass truncation=True")
        pad_id = None if self.pad_token is None else self.model.vocab[self.pad_token]
        return _post.pad_batch(rows, pad_id=pad_id, padding=padding, max_length=max_length)

    # -- decoding ---------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """The text of ids. Special tokens (padding, <bos>/<eos>, [CLS]/[SEP]...) are left out unless
        skip_special_tokens=False; the unknown token always shows. Inexact where normalization, the
        pre-tokenizer's spacing or `<unk>` lost information (see each model's documentation)."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        tokens = self.model.tokens_of(list(ids))
        if skip_special_tokens:
            tokens = [t for t, i in zip(tokens, ids) if i not in self._skip_ids]
        return self.model.decode_tokens(tokens)

    def decode_batch(self, batch, *, skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in batch]

    # -- vocabulary -------------------------------------------------------------------------------
    def token_to_id(self, token: str) -> int | None:
        return self.model.token_to_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self.model.id_to_token(i)

    @property
    def vocab(self) -> dict[str, int]:
        return dict(self.model.vocab)

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    @property
    def n_vocab(self) -> int:
        return max(self.model.vocab.values(), default=-1) + 1

    @property
    def special_tokens(self) -> dict[str, int]:
        return {t: self.model.vocab[t] for t in self.model.special_tokens}

    # -- files ------------------------------------------------------------------------------------
    def save(self, path, *, format: str = "tokenforge") -> None:
        """Writes the whole pipeline to one JSON file (see tokenforge.io); tokenforge.load reads it."""
        from .io import save

        save(self, path, format=format)

    def _to_file_dict(self) -> dict:
        from .io import FORMAT_NAME, FORMAT_VERSION

        d = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "model": self.model.kind, "name": self.name,
             "normalizer": None if self.normalizer is None else self.normalizer.to_dict(),
             "pre_tokenizer": self.pre_tokenizer.to_dict(),
             "post_processor": None if self.post_processor is None else self.post_processor.to_dict(),
             "pad_token": self.pad_token}
        d.update(self.model.to_dict())
        return d

    def __reduce__(self):
        return (_from_file_dict, (self._to_file_dict(),))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} model={self.model.kind} vocab_size={self.vocab_size}>"


_PIPELINE_KEYS = {"format", "version", "model", "name", "normalizer", "pre_tokenizer", "post_processor", "pad_token"}


def _from_file_dict(obj: dict, source: str = "<dict>") -> PipelineTokenizer:
    kind = obj["model"]
    model = KINDS[kind].from_dict({k: v for k, v in obj.items() if k not in _PIPELINE_KEYS})
    cls = {"wordpiece": WordPieceTokenizer, "char_bpe": CharBPETokenizer, "word": WordTokenizer, "char": CharTokenizer}[kind]
    tok = PipelineTokenizer.__new__(cls)
    PipelineTokenizer.__init__(tok, model, normalizer=_normalizers.from_dict(obj.get("normalizer")),
                               pre_tokenizer=_pre.from_dict(obj.get("pre_tokenizer")),
                               post_processor=_post.from_dict(obj.get("post_processor")),
                               pad_token=obj.get("pad_token"), name=obj.get("name") or "tokenizer")
    return tok


def from_file_dict(obj: dict, *, source: str = "<dict>") -> PipelineTokenizer:
    """Rebuilds a tokenizer from tokenforge's file (io.from_dict dispatches here); bad content
    raises ValueError naming the source."""
    try:
        return _from_file_dict(obj, source)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{source}: invalid {obj.get('model')} tokenizer: {e}") from None


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


def _has_surrogates(t: str) -> bool:
    try:
        t.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


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

    def decode(self, ids, *, skip_special_tokens: bool = True, cleanup: bool = True) -> str:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        tokens = self.model.tokens_of(list(ids))
        if skip_special_tokens:
            tokens = [t for t, i in zip(tokens, ids) if i not in self._skip_ids]
        return self.model.decode_tokens(tokens, cleanup=cleanup)


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
