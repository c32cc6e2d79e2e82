"""Tokenizer: the one tokenizer of every family, a pipeline of named stages.

    text --(added tokens found)--> normalizer --> pre-tokenizer --> model --> post-processor --> ids
    ids  --> tokens --> decoder --> text

    >>> tok = Tokenizer.from_ranks({bytes([i]): i for i in range(256)} | {b"ab": 256}, pattern="gpt2")
    >>> tok.encode("abc")
    [256, 99]

The stages are Hugging Face's components (tokenforge.normalizers, pre_tokenizers, models,
post_processors, decoders); added tokens follow HF's rules and special tokens tiktoken's policy
(special.py). Every family answers the same methods: encode / encode_ordinary / encode_batch /
encode_to_numpy / encode_batch_to_numpy / encode_with_offsets / decode / save / n_vocab /
token_to_id / id_to_token.

The heavy work runs native where a stage has a native form: byte-level BPE fused with its split
pattern and special tokens into one call per text (models.ByteBPE, the tiktoken-style fast path),
WordPiece and character BPE fused with their word splitter, SentencePiece's models with their
normalizer. Any other combination runs stage by stage (Python between native model calls): same
ids, slower.

Two conventions differ by family and are set when a tokenizer is made, so that each keeps the
behaviour of the library it mirrors: whether special tokens written in the text are matched
(`allowed_special`: tiktoken-style tokenizers raise on them unless allowed, tokenizer.json files
match them as Hugging Face does) and whether decode skips special tokens (`skip_special_tokens`).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import unicodedata
from typing import TYPE_CHECKING, AbstractSet, Collection, Iterable, Iterator, Literal, Mapping, Sequence

if TYPE_CHECKING:  # (numpy is imported where it is used: `import tokenforge` does not load it)
    import numpy as np

from . import _core as _core_mod
from . import decoders as _decoders
from . import normalizers as _normalizers
from . import patterns as _patterns
from . import post_processors as _post
from . import pre_tokenizers as _pre
from .models import ByteBPE, LongestMatch, SentencePiece
from .special import AddedToken, AddedVocabulary, SpecialPolicy, disallowed_error
from .stage import UnknownTokenError, check_text, has_surrogates, replace_surrogates
from .streaming import cut_long_texts, has_long_text

DEFAULT_THREADS = 8
STREAM_BUFFER = 1 << 16  # characters buffered by encode_iterable before it looks for a cut

# Unicode normalization forms a byte-level Tokenizer may be given by name.
NORMALIZATION_FORMS = ("NFC", "NFD", "NFKC", "NFKD")

__all__ = ["Tokenizer", "UnknownTokenError", "WRITERS"]

# Writers of the file formats, name -> function(tok, path). tokenforge.io and tokenforge.formats
# register theirs when imported (tokenforge/__init__.py imports both): the pipeline never imports
# the formats, which import it.
WRITERS: dict = {}
# tokenforge's own file, (to_dict, from_dict), registered by tokenforge.io: pickling uses it.
OWN_FORMAT: dict = {}
FORMAT_ALIASES = {"hf": "huggingface", "tokenizer.json": "huggingface", "vocab": "listing", "vocab.txt": "bert_vocab"}

_NOT_GIVEN = object()


def _byte_level_pattern(pre) -> str | None:
    """The split pattern of a byte-level pre-tokenizer whose pieces are that pattern's matches:
    ByteLevel(use_regex) alone, or [a splitter, ByteLevel(use_regex=False)]; else None."""
    if isinstance(pre, _pre.Sequence):
        steps = pre.pretokenizers
        if len(steps) == 1:
            return _byte_level_pattern(steps[0])
        if (len(steps) == 2 and isinstance(steps[1], _pre.ByteLevel) and not steps[1].use_regex
                and not steps[1].add_prefix_space and hasattr(steps[0], "tiktoken_pattern")):
            return steps[0].tiktoken_pattern(_patterns.TOTAL)
        return None
    if isinstance(pre, _pre.ByteLevel):
        return pre.tiktoken_pattern()
    return None


def _isolated_split_sequence(pre):
    """For [Split(P1, isolated), ..., Split(Pk, isolated), ByteLevel(use_regex=False)] (DeepSeek
    V3's pre-tokenizer), the native `_core.SplitSequence` of P1..Pk when the engine runs every
    pattern; else None."""
    if not isinstance(pre, _pre.Sequence) or len(pre.pretokenizers) < 3:
        return None
    *splits, last = pre.pretokenizers
    if not (isinstance(last, _pre.ByteLevel) and not last.use_regex and not last.add_prefix_space):
        return None
    if not all(isinstance(s, _pre.Split) and s.behavior == "isolated" and not s.invert for s in splits):
        return None
    import regex

    try:
        return _core_mod.SplitSequence([regex.escape(s.pattern) if s.literal else s.pattern for s in splits])
    except ValueError:  # a pattern outside the engine's subset: the stages run one by one
        return None


def _twin_form(normalizer, model, added: Sequence[AddedToken]) -> str | None:
    """The Unicode form (NFC, NFD, NFKC, NFKD) of a byte-level tokenizer's normalizer when the
    tokenizer may run text already in that form as if it had no normalizer (Tokenizer._twin_for),
    else None. Hugging Face finds the added tokens with normalized=False in the raw text first and
    the others in the normalized stretches between them; one pass over text that normalizing leaves
    alone finds the same tokens when every added token has no flag but `normalized`, the
    normalized ones are in the form themselves, and no token of one kind can overlap a token of the
    other (neither holds the other, no end of one is the start of the other): occurrences of the
    two kinds are then disjoint in any text, so neither pass takes a place the other would."""
    if type(normalizer) not in (_normalizers.NFC, _normalizers.NFD, _normalizers.NFKC, _normalizers.NFKD) \
            or not isinstance(model, ByteBPE):
        return None
    form = normalizer.form
    if any(t.single_word or t.lstrip or t.rstrip for t in added):
        return None
    raw = [t.content for t in added if not t.normalized]
    normal = [t.content for t in added if t.normalized]
    if not all(unicodedata.is_normalized(form, c) for c in normal) or len(raw) * len(normal) > 10_000:
        return None
    for a in raw:
        for b in normal:
            if a in b or b in a or any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b)))):
                return None
    return form


def _char_map(normalizer, added: list[AddedToken]) -> tuple[str, str] | None:
    """(a, b) when the normalizer only replaces the character a by the character b (Gemma's
    tokenizer.json: ' ' by '▁') and Tokenizer._in_place is exact for these added tokens: none
    has Hugging Face's flags, and no character of a normalized token is a character of another
    token as normalized (so a normalized token never straddles one matched as written)."""
    n = normalizer
    if isinstance(n, _normalizers.Sequence) and len(n.normalizers) == 1:
        n = n.normalizers[0]
    if not (isinstance(n, _normalizers.Replace) and n.literal and len(n.pattern) == 1 and len(n.content) == 1):
        return None
    if not added or any(t.single_word or t.lstrip or t.rstrip for t in added):
        return None
    a, b = n.pattern, n.content
    in_normalized = set("".join(t.content.replace(a, b) for t in added if t.normalized))
    written = set("".join(t.content.replace(a, b) for t in added if not t.normalized))
    return None if in_normalized & written else (a, b)


def _plain_specials(special_tokens: Mapping) -> bool:
    """Whether every special token is a non-empty str with an int id in [0, 2**32 - 1), checked per
    column (no Python code per token: a sentencepiece file with a thousand control pieces spent a
    fifth of its loading here)."""
    texts, ids = special_tokens.keys(), special_tokens.values()
    return (set(map(type, texts)) <= {str} and all(texts) and set(map(type, ids)) <= {int}
            and (not ids or (min(ids) >= 0 and max(ids) < 2**32 - 1)))


class Tokenizer:
    """normalizer -> pre-tokenizer -> model -> post-processor, decoder back; added tokens around.

    `Tokenizer(model, normalizer=..., pre_tokenizer=..., post_processor=..., decoder=...,
    added_tokens=[AddedToken(...)] or special_tokens={text: id})`, or for byte-level BPE the
    shorthand `Tokenizer(pattern=..., mergeable_ranks=..., special_tokens=..., merges=...)`.
    """

    def __init__(
        self,
        model=None,
        *,
        normalizer=None,
        pre_tokenizer=_NOT_GIVEN,
        post_processor=None,
        decoder=_NOT_GIVEN,
        added_tokens: Sequence[AddedToken] = (),
        special_tokens: Mapping[str, int] | Sequence[str] | None = None,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
        skip_special_tokens: bool = False,
        pad_token: str | None = None,
        name: str = "tokenizer",
        pattern: str | None = None,
        mergeable_ranks: Mapping[bytes, int] | None = None,
        merges: Sequence[tuple[bytes, bytes]] | None = None,
        ignore_merges: bool | None = None,
    ):
        self.name = name
        if mergeable_ranks is not None or pattern is not None:  # the byte-level shorthand
            if model is not None:
                raise TypeError("give either a model or mergeable_ranks=/pattern=, not both")
            if mergeable_ranks is None or pattern is None:
                raise TypeError("a byte-level tokenizer needs both pattern= and mergeable_ranks=")
            if normalizer is not None and isinstance(normalizer, str) and normalizer not in NORMALIZATION_FORMS:
                raise ValueError(f"normalizer must be None or one of {', '.join(NORMALIZATION_FORMS)}, got {normalizer!r}")
            try:
                model = ByteBPE(mergeable_ranks, merges, ignore_merges)
            except TypeError as e:
                raise TypeError(str(e) if "bool" in str(e) else "mergeable_ranks must map bytes to int ids in [0, 2**32 - 1)") from None
            if pre_tokenizer is _NOT_GIVEN:
                pre_tokenizer = _pre.Sequence([_pre.Regex(pattern), _pre.ByteLevel(use_regex=False)])
        elif model is None:
            raise TypeError("Tokenizer needs a model (or pattern= and mergeable_ranks= for byte-level BPE)")
        self._model = model
        self._normalizer = _normalizers.resolve(normalizer)
        self._pre_tokenizer = _pre.resolve(None if pre_tokenizer is _NOT_GIVEN else pre_tokenizer)
        self._decoder = model.default_decoder() if decoder is _NOT_GIVEN and hasattr(model, "default_decoder") else (
            None if decoder is _NOT_GIVEN else decoder)
        self._post = post_processor.bind(self._any_token_to_id) if post_processor is not None else None
        self._added = self._added_tokens(added_tokens, special_tokens)
        self._default_allowed = allowed_special
        self._default_disallowed = disallowed_special
        self.skip_special_tokens = bool(skip_special_tokens)
        if pad_token is None:
            pad_token = next((t for t in ("<pad>", "[PAD]") if self.token_to_id(t) is not None), None)
        elif self.token_to_id(pad_token) is None:
            raise ValueError(f"the pad token {pad_token!r} is not in the vocabulary")
        self.pad_token = pad_token
        self._truncation: _post.Truncation | None = None
        self._padding: _post.Padding | None = None
        self._plan()

    # ----------------------------------------------------------------------------------------------
    # Construction

    @classmethod
    def from_ranks(cls, ranks: Mapping[bytes, int], *, pattern: str, special_tokens: Mapping[str, int] | None = None,
                   name: str = "tokenizer") -> "Tokenizer":
        """A byte-level tokenizer from tiktoken-style ranks (token bytes -> rank, the rank is the id)."""
        return cls(pattern=pattern, mergeable_ranks=ranks, special_tokens=special_tokens, name=name)

    @classmethod
    def from_vocab_merges(cls, vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]], *,
                          special_tokens: Mapping[str, int] | Sequence[str] | None = None, pattern: str = "gpt2",
                          ignore_merges: bool = False, name: str = "tokenizer") -> "Tokenizer":
        """A byte-level tokenizer from a vocabulary (id -> bytes) and merges (byte pairs, in merge order).

        Ids need not follow merge order (GPT-2's encoder.json permutes the 256 byte tokens). Entries
        of `vocab` that are special tokens are taken as such. `special_tokens` is a {text: id}
        mapping, or a list of texts (as train_bpe takes): each gets its id from `vocab` if there,
        else the next id after the largest.
        """
        vocab = {int(i): bytes(b) for i, b in vocab.items()}
        if special_tokens is None:
            special_tokens = {}
        elif not isinstance(special_tokens, Mapping):
            if isinstance(special_tokens, (str, bytes)):
                raise TypeError("special_tokens must be a {text: id} mapping or a list of texts, not a single str")
            by_bytes = {b: i for i, b in vocab.items()}
            top = max(vocab, default=-1)
            mapping = {}
            for s in special_tokens:
                if not isinstance(s, str) or not s:
                    raise TypeError(f"special tokens must be non-empty str, got {s!r}")
                if s.encode("utf-8") in by_bytes:
                    mapping[s] = by_bytes[s.encode("utf-8")]
                else:
                    top += 1
                    mapping[s] = top
            special_tokens = mapping
        special_tokens = dict(special_tokens)
        special_bytes = {s.encode("utf-8") for s in special_tokens}
        ranks: dict[bytes, int] = {}
        for i, b in vocab.items():
            if b in special_bytes:
                continue
            if b in ranks:
                raise ValueError(f"ids {ranks[b]} and {i} have the same bytes {b!r}")
            ranks[b] = i
        return cls(pattern=pattern, mergeable_ranks=ranks, special_tokens=special_tokens, merges=list(merges),
                   ignore_merges=ignore_merges, name=name)

    def _added_tokens(self, added_tokens, special_tokens) -> list[AddedToken]:
        added = [t if isinstance(t, AddedToken) else AddedToken(**t) for t in added_tokens]
        tokens = added
        if special_tokens is not None:
            if not isinstance(special_tokens, Mapping):  # a list of texts: their ids are the model's
                ids = {}
                for s in special_tokens:
                    i = self._model.token_to_id(s) if isinstance(s, str) else None
                    if i is None:
                        raise ValueError(f"the special token {s!r} is not in the vocabulary (give {{text: id}})")
                    ids[s] = i
                special_tokens = ids
            if not _plain_specials(special_tokens):  # the loop names the problem
                for s, i in special_tokens.items():
                    if not isinstance(s, str) or not s:
                        raise TypeError(f"special tokens must be non-empty str, got {s!r}")
                    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**32 - 1:
                        raise ValueError(f"special token {s!r} has an invalid id {i!r}")
            tokens = added + list(itertools.starmap(AddedToken._matched_as_written, special_tokens.items()))
        for t in added:  # (the special tokens were checked above)
            if not isinstance(t.content, str) or not t.content:
                raise TypeError(f"added tokens must be non-empty str, got {t.content!r}")
            if not isinstance(t.id, int) or isinstance(t.id, bool) or not 0 <= t.id < 2**32 - 1:
                raise ValueError(f"the added token {t.content!r} has an invalid id {t.id!r} (ids are in [0, 2**32 - 1))")
        contents = [t.content for t in tokens]
        if len(set(contents)) != len(contents):
            seen: set[str] = set()
            for c in contents:
                if c in seen:
                    raise ValueError(f"the added token {c!r} appears twice")
                seen.add(c)
        # Two special tokens may share an id (tiktoken's o200k_harmony does); decoding gives the first.
        # A special token may not take a mergeable token's id with other bytes: both would encode
        # to that id, and decoding it gives the mergeable token (special_tokens={'<|endoftext|>': 5}
        # mapped '<|endoftext|>' and b'\x05' to 5).
        if isinstance(self._model, ByteBPE) and special_tokens:
            token_bytes, ranks = self._model.token_bytes, self._model.ranks
            for s, i in special_tokens.items():
                spelled = s.encode("utf-8", "surrogatepass")
                if ranks.get(spelled) == i:  # its own token (GPT-NeoX's): no id -> bytes table made
                    continue
                b = token_bytes(i)
                if b is not None and b != spelled:
                    raise ValueError(f"the special token {s!r} has id {i}, the id of the token {b!r} "
                                     "(give it an id no token has)")
        return tokens

    def _plan(self) -> None:
        """Decides, once, how encode runs: which stages fuse into one native call."""
        model, pre = self._model, self._pre_tokenizer
        self._specials = {t.content: t.id for t in self._added if t.special}
        # Added tokens that are not special but matched as written (MPT's runs of spaces, Command-R's
        # turn tokens): the engine matches them with the special tokens, always allowed, listed
        # after them (the policy's masks index the engine's tokens).
        always = [t for t in self._added if not t.special and t.as_written]
        self._policy = SpecialPolicy(self._specials, len(always))
        self._ordinary_mask = self._policy.masks(frozenset(), ())[0]
        self._always_matched = [t.content for t in always]
        self._kept_whole = [*self._specials, *self._always_matched]  # (the engine's tokens a batch never cuts)
        self._default_masks: tuple[bytes, bytes] | None = None  # (made by the first _encode_checked)
        first_chars = {t[0] for t in self._specials}  # ("<" alone for every tiktoken encoding)
        self._special_first_chars = tuple(first_chars) if len(first_chars) <= 4 else None
        self._added_vocab = AddedVocabulary(self._added, self._normalize_or_none())
        self._added_by_id: dict[int, AddedToken] = {}
        for t in self._added:
            self._added_by_id.setdefault(t.id, t)
        self._only_plain = all(t.plain for t in self._added)
        self._char_map = _char_map(self._normalizer, self._added)
        # the engine's tokens: the special ones (the policy's order), then the always-matched ones,
        # then those only its decoder needs (not in the model's vocabulary)
        engine_tokens = [(t.content, t.id) for t in self._added if t.special] + [(t.content, t.id) for t in always] + [
            (t.content, t.id) for t in self._added if not t.special and not t.as_written and not model.has_token(t.content, t.id)
        ] if isinstance(model, ByteBPE) else []
        self._engine, self._engine_splits = None, False
        if isinstance(model, ByteBPE):
            pattern = _byte_level_pattern(pre)
            if pattern is not None:
                from .pre_tokenizers.matcher import compile_split

                self._engine, self._engine_splits = model.encoder(pattern, engine_tokens)
                self._pattern = pattern
                self._matcher = None if self._engine_splits else compile_split(pattern)
            elif (sequence := _isolated_split_sequence(pre)) is not None:
                # The pieces come from the native sequence of splits, the engine runs the byte pairs.
                self._engine, self._engine_splits = model.encoder(None, engine_tokens)
                self._matcher = sequence
        # Characters whose bytes the vocabulary has no token for (ByteBPE.droppable): a stretch
        # holding one goes through encode_pieces, which drops them (_encode_stretch).
        self._droppable = model.droppable if self._engine is not None else None
        # The whole of encode in one native call: byte-level engine with its pattern, plain
        # special tokens only, no normalizer.
        self._fast = self._engine is not None and self._engine_splits and self._normalizer is None \
            and self._droppable is None and all(t.as_written for t in self._added)
        self._fused_words = getattr(pre, "native", None) is not None and hasattr(model, "encode_text") and \
            hasattr(model, "_native") and not isinstance(model, (ByteBPE, SentencePiece))
        self._normal_form = None if self._fast else _twin_form(self._normalizer, model, self._added)
        self._refresh_direct()

    def _refresh_direct(self) -> None:
        """Sets _engine_only: the engine runs the whole of encode (byte-level with its pattern, and
        no post-processor, truncation or padding). And _direct_encode / _direct_numpy, the engine's
        own encode and encode_to_numpy, when the commonest call (a str, the tokenizer's own
        special-token policy) needs nothing else: the default masks made (by the first call that
        takes the long way). encode and encode_to_numpy then test one attribute instead of five and
        look up no method (session 27: 40-character lines of English and code 1.03-1.09x faster, the
        two bodies timed on one instance). Called by everything that changes one of those conditions."""
        self._engine_only = self._fast and self._post is None and self._truncation is None and self._padding is None
        self._twin: Tokenizer | None = None  # (made again when first needed: it copies these settings)
        direct = self._engine_only and self._default_masks is not None
        self._direct_encode = self._engine.encode if direct else None
        self._direct_numpy = self._engine.encode_to_numpy if direct else None

    def _twin_for(self, text) -> Tokenizer | None:
        """For a tokenizer whose normalizer is a Unicode form (GPT-NeoX's and Pythia's NFC), the
        same tokenizer without it when `text` (a str, or a batch's list of them) is already in that form:
        normalizing it changes nothing, and every stretch between added tokens is in the form too (a
        slice of a normalized text is normalized: composition and reordering only look at
        neighbours), so the engine's one-call path gives the stage-by-stage path's ids (_twin_form
        says when the added tokens allow it). None when not."""
        form = self._normal_form
        if form is None:
            return None
        if type(text) is str:
            if not (text.isascii() or unicodedata.is_normalized(form, text)):  # (ASCII is in every form: O(1))
                return None
        elif type(text) is not list or not all(type(t) is str and (t.isascii() or unicodedata.is_normalized(form, t))
                                               for t in text):
            return None
        twin = self._twin
        if twin is None:
            twin = object.__new__(type(self))  # (a shallow copy: copy.copy would pickle, __reduce__)
            twin.__dict__.update(self.__dict__)
            twin._normalizer = None
            twin._added = [dataclasses.replace(t, normalized=False) for t in self._added]
            twin._plan()  # (its own engine: the added tokens normalized=True are matched as written)
            if not twin._fast:
                self._normal_form = None
                return None
            self._twin = twin
        return twin

    def _normalize_or_none(self):
        return None if self._normalizer is None else self._normalizer.normalize

    def _any_token_to_id(self, token: str) -> int | None:
        i = self._model.token_to_id(token)
        if i is None:
            for t in getattr(self, "_added", ()):
                if t.content == token:
                    return t.id
        return i

    # -- the stages, readable and replaceable --------------------------------------------------------
    @property
    def model(self):
        return self._model

    @property
    def normalizer(self):
        return self._normalizer

    @normalizer.setter
    def normalizer(self, value):
        self._normalizer = _normalizers.resolve(value)
        self._plan()

    @property
    def pre_tokenizer(self):
        return self._pre_tokenizer

    @pre_tokenizer.setter
    def pre_tokenizer(self, value):
        self._pre_tokenizer = _pre.resolve(value)
        self._plan()

    @property
    def post_processor(self):
        return self._post

    @post_processor.setter
    def post_processor(self, value):
        self._post = value.bind(self._any_token_to_id) if value is not None else None
        self._refresh_direct()

    @property
    def decoder(self):
        return self._decoder

    @decoder.setter
    def decoder(self, value):
        self._decoder = value

    # What the applications' fast paths look at (dataset.py): the fused native engine, and the
    # number of its hand-written scanner (-1: none, or a normalizer or added tokens in the way).
    @property
    def _core(self):
        return self._engine

    @property
    def _splits_natively(self) -> bool:
        # The engine splits with the pattern itself (else `regex` splits and the engine runs BPE).
        return self._engine is not None and self._engine_splits

    @property
    def _native_pattern(self) -> int:
        # The safe cuts of streaming, training and sharding (cpp/pretokenize.h) are proven for the
        # hand-written scanners only: 0 GPT-2, 1 cl100k, 2 o200k, else -1. Not with added tokens
        # matched in ordinary text (MPT's runs of spaces): those paths cut and encode without them.
        if not self._fast or self._pattern is None or self._always_matched:
            return -1
        try:
            scanner = _core_mod.Pattern(self._pattern).scanner
        except _core_mod.UnsupportedPattern:
            return -1
        return {"gpt2": 0, "cl100k": 1, "o200k": 2}.get(scanner, -1)

    # tiktoken's private names, which code written for tiktoken.Encoding reads.
    @property
    def _mergeable_ranks(self) -> dict:
        return self._model.ranks

    @property
    def _special_tokens(self) -> dict:
        return dict(self._specials)

    @property
    def _pat_str(self) -> str | None:
        return self.pattern

    @property
    def added_tokens(self) -> list[AddedToken]:
        return list(self._added)

    # ----------------------------------------------------------------------------------------------
    # Encoding

    def normalize(self, text: str) -> str:
        check_text(text)
        return self._normalizer.normalize(text) if self._normalizer is not None else text

    def pre_tokenize(self, text: str) -> list[str]:
        """The pieces (words) the model sees: normalized, then split."""
        return [p for p, _, _ in self._pre_tokenizer.pieces(self.normalize(_clean(text)))]

    def encode_ordinary(self, text: str) -> list[int]:
        """Encodes text, treating special tokens as ordinary text (no post-processor tokens).

        >>> enc.encode_ordinary("hello world")  # doctest: +SKIP
        [15339, 1917]
        """
        check_text(text)
        # Text without special tokens: the engine with the always-matched tokens only (_ordinary_mask).
        if self._fast:  # (_engine_call's retry written out: one Python call less per text)
            try:
                return self._engine.encode(text, self._ordinary_mask)
            except UnicodeEncodeError:
                return self._engine.encode(replace_surrogates(text), self._ordinary_mask)
        if self._normal_form is not None and (twin := self._twin_for(text)) is not None:
            return twin.encode_ordinary(text)
        return self._encode(text, frozenset(), b"")

    def encode(self, text: str, *, pair: str | None = None, add_special_tokens: bool = True,
               allowed_special: Literal["all"] | AbstractSet[str] | None = None,
               disallowed_special: Literal["all"] | Collection[str] | None = None) -> list[int]:
        """Encodes text (and its `pair`, as Hugging Face's encode(sequence, pair)): added tokens
        found as the tokenizer's rules say (special tokens: allowed ones become their ids,
        disallowed ones raise ValueError, tiktoken's policy; the defaults are the tokenizer's),
        then truncated, the post-processor's special tokens added unless
        add_special_tokens=False, and padded, as enable_truncation / enable_padding set."""
        direct = self._direct_encode
        if direct is not None and type(text) is str and pair is None and allowed_special is None \
                and disallowed_special is None:
            # The commonest call, the tokenizer's own policy, straight to the engine (_encode_checked
            # written out: a Python call is a sixth of a short line's time); any error, the long way.
            masks = self._default_masks
            try:
                return direct(text, masks[0], masks[1])
            except (UnicodeEncodeError, _core_mod.DisallowedSpecial):
                pass
        if pair is None and self._engine_only:
            check_text(text)
            return self._encode_checked(self._engine.encode, text, allowed_special, disallowed_special)
        if pair is None and self._normal_form is not None and (twin := self._twin_for(text)) is not None:
            return twin.encode(text, add_special_tokens=add_special_tokens, allowed_special=allowed_special,
                               disallowed_special=disallowed_special)
        ids = self._encode_one(text, allowed_special, disallowed_special)
        if pair is None and self._truncation is None and self._padding is None:
            if add_special_tokens and self._post is not None:
                ids = self._post.process(ids)
            return ids
        pair_ids = None if pair is None else self._encode_one(pair, allowed_special, disallowed_special)
        return self._finish([ids], None if pair_ids is None else [pair_ids], add_special_tokens,
                            self._truncation, self._padding)[0]

    def _encode_one(self, text, allowed_special, disallowed_special) -> list[int]:
        """Text -> ids before the post-processor."""
        check_text(text)
        if self._fast:
            return self._encode_checked(self._engine.encode, text, allowed_special, disallowed_special)
        if len(text) > 2048 and self._stretches_natively():
            # The stretches between added tokens in one native call, as a batch of one text (Gemma's
            # "\n" is an added token: 8,400 stretches in 300,000 characters of English, each a
            # native call of its own before: 4.7 -> 7.3 MB/s).
            return self._stretches_batch([text], allowed_special, disallowed_special, 1)[0]
        allowed, mask, text = self._resolve_special(text, allowed_special, disallowed_special)
        return self._encode(text, allowed, mask)

    def _finish(self, rows, pairs, add_special_tokens, truncation, padding) -> list[list[int]]:
        """Hugging Face's post_process over a batch: each row (with its pair) truncated to leave
        room for the post-processor's tokens, the tokens added, then every row padded."""
        post = self._post if add_special_tokens else None
        out = []
        for k, ids in enumerate(rows):
            pair = pairs[k] if pairs is not None else None
            if truncation is not None:
                ids, pair = truncation.truncate(ids, pair, post.num_added(pair is not None) if post is not None else 0)
            if post is not None:
                ids = post.process(ids, pair)
            elif pair is not None:
                ids = ids + pair
            out.append(ids)
        return padding.pad(out) if padding is not None else out

    # -- truncation and padding, Hugging Face's methods -----------------------------------------------
    def enable_truncation(self, max_length: int, stride: int = 0, strategy: str = "longest_first",
                          direction: str = "right") -> None:
        """encode and encode_batch cut each text (with its pair) so that, with the post-processor's
        tokens, a row has at most max_length ids; strategy longest_first / only_first /
        only_second, direction right (keep the start) or left. encode_ordinary is not affected."""
        truncation = _post.Truncation(max_length, stride, strategy, direction)
        truncation.check(self._post.num_added() if self._post is not None else 0)
        self._truncation = truncation
        self._refresh_direct()

    def no_truncation(self) -> None:
        self._truncation = None
        self._refresh_direct()

    @property
    def truncation(self) -> dict | None:
        """The truncation settings as `tokenizers` gives them (max_length, stride, strategy,
        direction), or None."""
        return None if self._truncation is None else self._truncation.to_python()

    def enable_padding(self, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0, pad_token: str = "[PAD]",
                       length: int | None = None, pad_to_multiple_of: int | None = None) -> None:
        """encode pads to `length`, encode_batch to `length` or else the longest row, rounded up to
        a multiple of pad_to_multiple_of, with pad_id (the defaults are `tokenizers`': give the
        pad token's id, e.g. pad_id=tok.token_to_id("[PAD]")). A longer row is never cut."""
        self._padding = _post.Padding(length, pad_to_multiple_of, pad_id, pad_token, pad_type_id, direction)
        self._refresh_direct()

    def no_padding(self) -> None:
        self._padding = None
        self._refresh_direct()

    @property
    def padding(self) -> dict | None:
        """The padding settings as `tokenizers` gives them (length, pad_to_multiple_of, pad_id,
        pad_token, pad_type_id, direction), or None."""
        return None if self._padding is None else self._padding.to_python()

    def __call__(self, text: str, **kwargs) -> list[int]:
        return self.encode(text, **kwargs)

    def _resolve_special(self, text, allowed_special, disallowed_special):
        """(allowed set or "all", native allowed mask, text) after the disallowed check."""
        mask, disallowed = self._special_masks(allowed_special, disallowed_special)
        if allowed_special is None:
            allowed_special = self._default_allowed
        if disallowed:
            text = self._check_disallowed(text, disallowed)
        allowed = "all" if allowed_special == "all" else (frozenset(allowed_special) & self._policy_all if allowed_special else frozenset())
        return allowed, mask, text

    def _special_masks(self, allowed_special, disallowed_special) -> tuple[bytes, bytes]:
        """(allowed, disallowed) masks for the engine, with the tokenizer's defaults."""
        if allowed_special is None:
            allowed_special = self._default_allowed
        if disallowed_special is None:
            disallowed_special = self._default_disallowed
        return self._policy.masks(allowed_special, disallowed_special)

    def _encode_checked(self, engine_encode, text: str, allowed_special, disallowed_special):
        """The engine's encode or encode_to_numpy, with tiktoken's disallowed-special check made
        in the same native call (the text is converted to UTF-8 once; the check is a native scan
        that costs less than one Python step). For a short text the Python steps are most of the
        time (enc.encode("hello world") took 2.7 us a call when each step was a method, as long as
        tiktoken), so the commonest call, with the tokenizer's own policy, takes its masks made
        once and calls the engine directly (_engine_call's retry written out)."""
        if allowed_special is None and disallowed_special is None:
            masks = self._default_masks
            if masks is None:
                masks = self._default_masks = self._special_masks(None, None)
                self._refresh_direct()
        else:
            masks = self._special_masks(allowed_special, disallowed_special)
        try:
            return engine_encode(text, masks[0], masks[1])
        except UnicodeEncodeError:
            text = replace_surrogates(text)
        except _core_mod.DisallowedSpecial as e:
            raise self._policy.error_for(e) from None
        try:
            return engine_encode(text, masks[0], masks[1])
        except _core_mod.DisallowedSpecial as e:
            raise self._policy.error_for(e) from None

    @functools.cached_property
    def _policy_all(self) -> frozenset:
        return frozenset(self._specials)

    def _holds_no_special(self, text: str) -> bool:
        """True when none of the special tokens' first characters is in text (so none of them is):
        `in` reads the str as it is, where the engine's search would first convert it to UTF-8,
        and most texts have no '<'. False when it cannot tell (more than 4 first characters)."""
        chars = self._special_first_chars
        if chars is None:
            return False
        for c in chars:  # (a loop: a generator in any() cost more than the search on a short text)
            if c in text:
                return False
        return True

    def _check_disallowed(self, text: str, disallowed: bytes) -> str:
        if self._engine is not None:
            if self._holds_no_special(text):
                return text
            try:
                index = self._engine.find_special(text, disallowed)
            except UnicodeEncodeError:
                text = replace_surrogates(text)
                index = self._engine.find_special(text, disallowed)
            if index >= 0:
                raise disallowed_error(self._policy.token_at(index))
            return text
        for tok, flag in zip(self._policy.order, disallowed):
            if flag and tok in text:
                first = min((t for t, f in zip(self._policy.order, disallowed) if f and t in text), key=text.index)
                raise disallowed_error(first)
        return text

    @staticmethod
    def _engine_call(fn, text, *args):
        try:
            return fn(text, *args)
        except UnicodeEncodeError:
            return fn(replace_surrogates(text), *args)

    def _encode(self, text: str, allowed, mask: bytes) -> list[int]:
        """The stage-by-stage path: added tokens, then each stretch of text between them."""
        if self._char_map is not None:
            rows = self._in_place([text], allowed, 1)
            if rows is not None:
                return rows[0]
        ids: list[int] = []
        for k, part in enumerate(self._parts(text, allowed)):
            if not isinstance(part, str):
                ids.append(part)
            elif ids:
                ids += self._encode_stretch(part, k == 0)
            else:  # (the first stretch's list itself: a text without added tokens is not copied)
                ids = self._encode_stretch(part, k == 0)
        return ids

    def _parts(self, text: str, allowed):
        """The ids of the added tokens in text and, between them, the normalized stretches of text
        (non-empty str), in order."""
        if has_surrogates(text):
            text = replace_surrogates(text)
        for part, token_id in self._added_vocab.split(text, allowed):
            if token_id is not None:
                yield token_id
                continue
            norm = self._normalizer.normalize(part) if self._normalizer is not None else part
            for sub, sub_id in self._added_vocab.split(norm, allowed, normalized=True):
                yield sub if sub_id is None else sub_id

    def _byte_pieces(self, text: str) -> list[bytes]:
        """The pre-tokenizer's pieces of a stretch, as UTF-8 (for the engine's encode_pieces)."""
        if self._engine_splits:
            return self._engine.split(text)
        if isinstance(self._matcher, _core_mod.SplitSequence):
            return self._matcher.pieces(text)
        return [text[s:e].encode("utf-8") for s, e in self._matcher.spans(text)]

    def _encode_stretch(self, text: str, at_start: bool) -> list[int]:
        """Normalized text without added tokens -> ids (pre-tokenizer and model), a new list."""
        if not text:
            return []
        model = self._model
        if self._engine is not None:  # byte-level BPE with a known pattern
            if self._droppable is not None and self._droppable.search(text):
                return self._engine.encode_pieces(self._byte_pieces(text))
            if self._engine_splits:
                return self._engine.encode(text, b"")
            if isinstance(self._matcher, _core_mod.SplitSequence):
                return self._engine.encode_split(text, self._matcher)
            return self._engine.encode_pieces(self._byte_pieces(text))
        if isinstance(model, SentencePiece) and isinstance(self._pre_tokenizer, _pre.NoPreTokenizer):
            return model.encode_text(text)
        if isinstance(model, LongestMatch) and isinstance(self._pre_tokenizer, _pre.NoPreTokenizer):
            return model.encode_bytes(text)  # (a str: its UTF-8)
        if self._fused_words:
            return model.encode_text(text, self._pre_tokenizer.native)
        pieces = self._pre_tokenizer.pieces(text, at_start)
        return model.encode_pieces([p for p, _, _ in pieces]) if hasattr(model, "encode_pieces") else \
            model.encode_words([p for p, _, _ in pieces])

    def encode_to_numpy(self, text: str, *, allowed_special=None, disallowed_special=None,
                        add_special_tokens: bool = True) -> np.ndarray:
        """Like encode, as a numpy uint32 array."""
        direct = self._direct_numpy  # (as in encode)
        if direct is not None and type(text) is str and allowed_special is None and disallowed_special is None:
            masks = self._default_masks
            try:
                return direct(text, masks[0], masks[1])
            except (UnicodeEncodeError, _core_mod.DisallowedSpecial):
                pass
        if self._engine_only:
            check_text(text)
            return self._encode_checked(self._engine.encode_to_numpy, text, allowed_special, disallowed_special)
        if self._normal_form is not None and (twin := self._twin_for(text)) is not None:
            return twin.encode_to_numpy(text, allowed_special=allowed_special, disallowed_special=disallowed_special,
                                        add_special_tokens=add_special_tokens)
        check_text(text)
        import numpy as np

        return np.asarray(self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special,
                                      add_special_tokens=add_special_tokens), dtype=np.uint32)

    def encode_batch(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS, allowed_special=None,
                     disallowed_special=None, add_special_tokens: bool = True, padding=False, truncation: bool = False,
                     max_length: int | None = None):
        """Encodes many texts in parallel native threads (up to num_threads, one per CPU the process
        may run on, and one per 16,384 characters of text at most: a few short texts run on the
        caller's thread, where starting threads would cost more than the work); equal to
        [encode(t) for t in text], with the tokenizer's padding (enable_padding) to the batch's
        longest row. An item may be a (text, pair) tuple, as in Hugging Face's encode_batch.

        With padding=True / "longest" / "max_length" or truncation=True: a BatchEncoding of numpy
        int64 arrays (ids, attention_mask), rows padded on the right with the pad token; truncation
        cuts each text's ids so that, with the post-processor's tokens, a row has at most max_length.
        """
        texts, pairs = _check_batch(text, pairs=True)
        if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        if pairs is None and self._normal_form is not None and (twin := self._twin_for(texts)) is not None:
            return twin.encode_batch(texts, num_threads=num_threads, allowed_special=allowed_special,
                                     disallowed_special=disallowed_special, add_special_tokens=add_special_tokens,
                                     padding=padding, truncation=truncation, max_length=max_length)
        if pairs is not None:
            rows = [self._encode_one(t, allowed_special, disallowed_special) for t in texts]
            pairs = [self._encode_one(t, allowed_special, disallowed_special) for t in pairs]
        elif self._fast:
            rows = self._engine_batch(self._engine.encode_batch, texts, num_threads, allowed_special, disallowed_special)
        elif self._native_batch_ok(allowed_special):
            rows = self._model_batch(texts, num_threads)
        elif self._stretches_natively():
            rows = self._stretches_batch(texts, allowed_special, disallowed_special, num_threads)
        else:
            rows = [self._encode_one(t, allowed_special, disallowed_special) for t in texts]
        return self._finish_batch(rows, pairs, add_special_tokens, padding, truncation, max_length)

    def _engine_batch(self, engine_batch, texts, num_threads, allowed_special, disallowed_special):
        """The engine's encode_batch or encode_batch_to_numpy under the special-token policy: the
        disallowed-special check runs in the threads that encode (one UTF-8 per text); a lone
        surrogate makes the batch again with the surrogates replaced, as tiktoken does."""
        mask, disallowed = self._special_masks(allowed_special, disallowed_special)

        def run(texts):
            return engine_batch(texts, mask, num_threads, disallowed)

        try:
            try:
                return self._in_parts(run, texts, num_threads, self._kept_whole)
            except UnicodeEncodeError:
                return self._in_parts(run, [replace_surrogates(t) for t in texts], num_threads, self._kept_whole)
        except _core_mod.DisallowedSpecial as e:
            raise self._policy.error_for(e) from None

    def _in_parts(self, run, texts, num_threads, specials):
        """run(texts), a native batch (lists, or numpy ids and offsets), with the texts much longer
        than a thread's share cut at safe cuts first and each one's ids joined again
        (streaming.cut_long_texts): a batch's threads take whole texts. Only for the named
        patterns, whose safe cuts are proven. Without a long text (nearly every batch), run(texts)
        after one max(map(len, texts))."""
        if not has_long_text(texts) or not self._engine.named_split:
            return run(texts)
        cut = cut_long_texts(texts, num_threads, specials)
        if cut is None:
            return run(texts)
        parts, firsts = cut
        out = run(parts)
        if isinstance(out, tuple):  # numpy: the parts' ids are the texts' ids, one after the other
            ids, offsets = out
            return ids, offsets[firsts]
        rows = []
        for a, b in zip(firsts, firsts[1:]):
            row = out[a]
            for k in range(a + 1, b):
                row.extend(out[k])
            rows.append(row)
        return rows

    def _stretches_natively(self) -> bool:
        """Whether encode_batch may encode the stretches between added tokens in one native batch:
        the byte-level engine with a native split, or a model without a pre-tokenizer that batches
        whole texts (Llama-2-style BPE, RWKV's longest match)."""
        if self._engine is not None:
            return self._engine_splits or isinstance(self._matcher, _core_mod.SplitSequence)
        return isinstance(self._pre_tokenizer, _pre.NoPreTokenizer) and hasattr(self._model, "encode_batch_texts") \
            and getattr(self._model, "_native", None) is not None

    def _stretches_batch(self, texts, allowed_special, disallowed_special, num_threads) -> list[list[int]]:
        """encode_batch of a pipeline with added tokens (most tokenizer.json files): the added
        tokens and the normalizer per text here (_parts, as _encode does), then every stretch of
        text between added tokens through a native batch at once, on the threads (the split and the
        model are most of the work). A plan holds ids, and -1 - k for stretch k."""
        resolved = []  # (allowed, text) of each text
        for text in texts:
            check_text(text)
            allowed, _, text = self._resolve_special(text, allowed_special, disallowed_special)
            resolved.append((allowed, text))
        if self._char_map is not None and resolved and all(a == resolved[0][0] for a, _ in resolved):
            rows = self._in_place([t for _, t in resolved], resolved[0][0], num_threads)
            if rows is not None:
                return rows
        by_parts = getattr(self._model, "encode_parts_batch", None) if self._engine is None else None
        if by_parts is not None:  # (the model joins each text's parts itself)
            rows = by_parts([list(self._parts(text, allowed)) for allowed, text in resolved], num_threads)
            if rows is not None:
                return rows
        plans, stretches = [], []
        for allowed, text in resolved:
            plan = []
            for part in self._parts(text, allowed):
                if isinstance(part, str):
                    plan.append(-1 - len(stretches))
                    stretches.append(part)
                else:
                    plan.append(part)
            plans.append(plan)
        if self._engine is None:  # (a model of whole texts)
            encoded = self._model.encode_batch_texts(stretches, num_threads)
        elif self._engine_splits:
            encoded = self._engine.encode_batch(stretches, b"", num_threads, b"")
        else:
            encoded = self._engine.encode_split_batch(stretches, self._matcher, num_threads)
        if self._droppable is not None:  # (those stretches again, their absent bytes dropped)
            for k, stretch in enumerate(stretches):
                if self._droppable.search(stretch):
                    encoded[k] = self._encode_stretch(stretch, False)
        rows = []
        for plan in plans:
            ids: list[int] = []
            for x in plan:
                if x >= 0:
                    ids.append(x)
                else:
                    ids += encoded[-1 - x]
            rows.append(ids)
        return rows

    def _in_place(self, texts: list[str], allowed, num_threads: int) -> list[list[int]] | None:
        """The ids of texts with added tokens of a tokenizer whose normalizer replaces one
        character by one (_char_map: Gemma's ' ' by '▁'), in one native pass per text: the tokens
        matched as written found in the text, the normalized ones in the normalized text (no
        normalized token can straddle one matched as written, which _char_map checks, so one pass
        finds what Hugging Face's stretch-by-stretch search finds), the stretches between them
        encoded (models/bpe.py: encode_in_place_batch). None where the model cannot."""
        run = getattr(self._model, "encode_in_place_batch", None) if self._engine is None else None
        if run is None:
            return None
        vocab = self._added_vocab
        texts = [replace_surrogates(t) if has_surrogates(t) else t for t in texts]
        return run(texts, vocab.finder_and_ids(allowed), vocab.finder_and_ids(allowed, normalized=True), self._char_map,
                   num_threads)

    def _native_batch_ok(self, allowed_special) -> bool:
        """True when no added token can appear (none matchable) and the model batches natively."""
        allowed = self._default_allowed if allowed_special is None else allowed_special
        matchable = [t for t in self._added if not t.special or allowed == "all" or t.content in allowed]
        return not matchable and (self._fused_words or (isinstance(self._model, (SentencePiece, LongestMatch))
                                                        and isinstance(self._pre_tokenizer, _pre.NoPreTokenizer)))

    def _model_batch(self, texts: list[str], num_threads: int) -> list[list[int]]:
        if self._normalizer is not None:
            texts = [self._normalizer.normalize(replace_surrogates(t) if has_surrogates(t) else t) for t in texts]
        if isinstance(self._model, SentencePiece):
            return self._model.encode_texts(texts, num_threads)
        if isinstance(self._model, LongestMatch):
            return self._model.encode_batch_texts([replace_surrogates(t) if has_surrogates(t) else t for t in texts],
                                                  num_threads)
        try:
            return self._model.encode_texts(texts, self._pre_tokenizer.native, num_threads)
        except UnicodeEncodeError:
            return self._model.encode_texts([replace_surrogates(t) for t in texts], self._pre_tokenizer.native, num_threads)

    def _finish_batch(self, rows, pairs, add_special_tokens, padding, truncation, max_length):
        """The tokenizer's truncation and padding (lists of ids, as Hugging Face's ids), or, when
        the call asks for padding or truncation, those (transformers' keywords) in numpy arrays."""
        if padding in (False, None, "do_not_pad") and not truncation:
            return self._finish(rows, pairs, add_special_tokens, self._truncation, self._padding)
        post = self._post if add_special_tokens else None
        cut = self._truncation
        if truncation:
            if max_length is None:
                raise ValueError("truncation needs max_length")
            if max_length < (post.num_added() if post is not None else 0):
                raise ValueError(f"max_length={max_length} is shorter than the template's special tokens")
            cut = _post.Truncation(max_length)
        rows = self._finish(rows, pairs, add_special_tokens, cut, None)
        if max_length is not None and padding in (True, "longest") and any(len(r) > max_length for r in rows):
            raise ValueError("a row is longer than max_length: pass truncation=True")
        if self._padding is not None:  # enable_padding's id and side, else the pad token's on the right
            pad_id, direction = self._padding.pad_id, self._padding.direction
        else:
            pad_id, direction = None if self.pad_token is None else self.token_to_id(self.pad_token), "right"
        return _post.pad_batch(rows, pad_id=pad_id, padding=padding, max_length=max_length, direction=direction)

    def encode_batch_to_numpy(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS, allowed_special=None,
                              disallowed_special=None, add_special_tokens: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Like encode_batch, as two numpy arrays: every text's ids one after another (uint32),
        and offsets (int64, one more than the texts): text k's ids are ids[offsets[k]:offsets[k + 1]].
        For byte-level BPE the native threads write the ids straight into the array (no Python
        int per id, and nothing serial on the caller's thread but the copy into one array).

        >>> ids, offsets = enc.encode_batch_to_numpy(["hello world", "goodbye"])  # doctest: +SKIP
        >>> ids[offsets[1]:offsets[2]]  # doctest: +SKIP
        array([19045, 29474], dtype=uint32)
        """
        texts = _check_batch(text)
        if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        if self._engine_only:
            return self._engine_batch(self._engine.encode_batch_to_numpy, texts, num_threads, allowed_special,
                                      disallowed_special)
        if self._normal_form is not None and (twin := self._twin_for(texts)) is not None:
            return twin.encode_batch_to_numpy(texts, num_threads=num_threads, allowed_special=allowed_special,
                                              disallowed_special=disallowed_special,
                                              add_special_tokens=add_special_tokens)
        import numpy as np

        rows = self.encode_batch(texts, num_threads=num_threads, allowed_special=allowed_special,
                                 disallowed_special=disallowed_special, add_special_tokens=add_special_tokens)
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
        return np.fromiter(itertools.chain.from_iterable(rows), dtype=np.uint32, count=int(offsets[-1])), offsets

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS) -> list[list[int]]:
        """Encodes many texts in parallel, treating special tokens as ordinary text."""
        texts = _check_batch(text)
        if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        if self._fast:
            def run(texts):
                return self._engine.encode_batch(texts, self._ordinary_mask, num_threads)

            try:
                return self._in_parts(run, texts, num_threads, self._always_matched)
            except UnicodeEncodeError:
                return self._in_parts(run, [replace_surrogates(t) for t in texts], num_threads, self._always_matched)
        if self._normal_form is not None and (twin := self._twin_for(texts)) is not None:
            return twin.encode_ordinary_batch(texts, num_threads=num_threads)
        return [self.encode_ordinary(t) for t in texts]

    def count_tokens(self, text: str) -> int:
        """len(encode_ordinary(text)), without building the list of ids where it can."""
        check_text(text)
        if self._fast:
            return self._engine_call(self._engine.count, text, self._ordinary_mask)
        if self._normal_form is not None and (twin := self._twin_for(text)) is not None:
            return twin.count_tokens(text)
        return len(self.encode_ordinary(text))

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text that is exactly one token (mergeable or special); KeyError otherwise."""
        if isinstance(text_or_bytes, (bytes, bytearray)) and isinstance(self._model, ByteBPE):
            i = self._model.ranks.get(bytes(text_or_bytes))
            if i is not None:
                return i
            text = bytes(text_or_bytes).decode("utf-8", "replace")
        else:
            text = text_or_bytes.decode("utf-8", "replace") if isinstance(text_or_bytes, (bytes, bytearray)) else text_or_bytes
            if isinstance(self._model, ByteBPE):
                i = self._model.ranks.get(text.encode("utf-8"))
                if i is not None:
                    return i
            else:
                i = self._model.token_to_id(text)
                if i is not None:
                    return i
        for t in self._added:
            if t.content == text:
                return t.id
        raise UnknownTokenError(f"{text_or_bytes!r} is not a single token")

    def encode_reference(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """encode through the readable definitions: the regex pre-tokenizer and the model's
        pure-Python rule (the oracle of the native code; no added tokens)."""
        text = self.normalize(_clean(text))
        words = self._pre_tokenizer.split_reference(text)
        model = self._model
        ids = model.encode_words_reference(words) if hasattr(model, "encode_words_reference") else model.encode_pieces(words)
        if add_special_tokens and self._post is not None:
            ids = self._post.process(ids)
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The token texts of text (without the post-processor's tokens)."""
        return [self.id_to_token(i) for i in self.encode(text, add_special_tokens=False)]

    def encode_with_offsets(self, text: str, **kwargs) -> tuple[list[int], list[tuple[int, int]]]:
        """The ids (without post-processor tokens) and, for each, the (start, end) character span of
        the text it came from. A token inside a character (a byte of it) gets that character's span.
        ValueError where the normalizer changed the text (tokenforge keeps no alignment through
        normalizers)."""
        from .offsets import encode_with_offsets

        return encode_with_offsets(self, text, **kwargs)

    def encode_iterable(self, iterable: Iterable[str], *, allowed_special=None, disallowed_special=None) -> Iterator[int]:
        """Yields the ids of the concatenation of `iterable` lazily (a file handle, a generator).

        Text is buffered only up to the last place where a piece boundary is certain (see
        streaming.safe_cut), so memory stays bounded by the longest stretch without one, and the
        ids are exactly those of encoding the whole concatenation. Byte-level tokenizers only.
        """
        from .streaming import safe_cut

        if self._engine is None:
            raise ValueError("encode_iterable needs a byte-level tokenizer with a split pattern")
        kw = dict(allowed_special=allowed_special, disallowed_special=disallowed_special, add_special_tokens=False)
        parts: list[str] = []
        size, next_check = 0, STREAM_BUFFER
        for chunk in iterable:
            check_text(chunk)
            parts.append(chunk)
            size += len(chunk)
            if size < next_check:
                continue
            buffer = "".join(parts)
            cut = safe_cut(buffer, [t.content for t in self._added])  # (no cut inside any added token)
            if cut > 0:
                yield from self.encode(buffer[:cut], **kw)
                buffer = buffer[cut:]
            parts, size = [buffer], len(buffer)
            # Without a cut, wait for the buffer to double: the search stays linear overall.
            next_check = size + STREAM_BUFFER if cut > 0 else 2 * size
        buffer = "".join(parts)
        if buffer:
            yield from self.encode(buffer, **kw)

    # ----------------------------------------------------------------------------------------------
    # Decoding

    def _token_text(self, i) -> str:
        t = self._added_by_id.get(i) if isinstance(i, int) else None
        if t is not None:
            return t.content
        s = self._model.id_to_token(i) if isinstance(i, int) and not isinstance(i, bool) else None
        if s is None:
            raise UnknownTokenError(f"invalid token id {i!r} (not in the vocabulary)")
        return s

    def _skip(self, ids, skip_special_tokens) -> list[int]:
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = list(ids)
        skip = self.skip_special_tokens if skip_special_tokens is None else skip_special_tokens
        if skip:
            special = self._special_ids
            ids = [i for i in ids if i not in special]
        return ids

    def decode(self, tokens: Sequence[int], errors: str = "replace", *, skip_special_tokens: bool | None = None) -> str:
        """The text of ids (the decoder's rule). Special tokens are left out if skip_special_tokens
        (default: the tokenizer's). Byte-level tokenizers: invalid UTF-8 is replaced unless
        errors="strict"."""
        ids = self._skip(tokens, skip_special_tokens)
        if self._byte_decoding():
            return self.decode_bytes(ids).decode("utf-8", errors=errors)
        words = [self._token_text(i) for i in ids]
        if self._decoder is None:
            return " ".join(words)
        return self._decoder.decode(words)

    def _byte_decoding(self) -> bool:
        return isinstance(self._model, (ByteBPE, LongestMatch)) and isinstance(self._decoder, _decoders.ByteLevel)

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of a sequence of ids. An unknown id raises ValueError naming it."""
        if hasattr(tokens, "tolist"):
            tokens = tokens.tolist()
        if isinstance(self._model, ByteBPE):
            engine = self._engine or self._decode_engine
            try:
                return engine.decode_bytes(tokens)
            except ValueError as e:
                raise UnknownTokenError(str(e)) from None
            except TypeError:
                raise TypeError("ids must be a sequence of int") from None
        return b"".join(self.decode_tokens_bytes(tokens))

    @functools.cached_property
    def _decode_engine(self):
        return self._model.encoder(None, [(t.content, t.id) for t in self._added])[0]

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id."""
        return self.decode_tokens_bytes([token])[0]

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each id."""
        if isinstance(self._model, ByteBPE):
            engine = self._engine or self._decode_engine
            try:
                return engine.decode_tokens_bytes(tokens)
            except ValueError as e:
                raise UnknownTokenError(str(e)) from None
        out = []
        for i in tokens:
            t = self._added_by_id.get(i)
            if t is not None:
                out.append(t.content.encode("utf-8"))
                continue
            b = self._model.token_bytes(i) if hasattr(self._model, "token_bytes") else None
            if b is None:
                b = self.decode([i], skip_special_tokens=False).encode("utf-8") if self._model.id_to_token(i) is not None else None
            if b is None:
                raise UnknownTokenError(f"invalid token id {i!r} (not in the vocabulary)")
            out.append(b)
        return out

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text and, for each token, the index of the character where it starts.

        A token that begins inside a multi-byte character starts at that character.
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (bool(token) and 0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        text = b"".join(token_bytes).decode("utf-8", errors="strict")
        return text, offsets

    def decode_batch(self, batch, *, errors: str = "replace", num_threads: int = DEFAULT_THREADS,
                     skip_special_tokens: bool | None = None) -> list[str]:
        """Decodes many sequences of ids."""
        return [self.decode(ids, errors=errors, skip_special_tokens=skip_special_tokens) for ids in batch]

    def decode_bytes_batch(self, batch, *, num_threads: int = DEFAULT_THREADS) -> list[bytes]:
        """Decodes many sequences of ids to bytes."""
        return [self.decode_bytes(ids) for ids in batch]

    # ----------------------------------------------------------------------------------------------
    # Vocabulary

    def token_to_id(self, token: str) -> int | None:
        """The id of a token as the vocabulary spells it (byte-level: GPT-2's characters), or of an
        added token; None if there is none."""
        i = self._model.token_to_id(token)
        if i is None:
            for t in self._added:
                if t.content == token:
                    return t.id
        return i

    def id_to_token(self, i: int) -> str | None:
        t = self._added_by_id.get(i)
        if t is not None and (self._model.id_to_token(i) is None or t.special):
            return t.content
        return self._model.id_to_token(i)

    def _tokens_up_to(self, n: int) -> list[str | None] | None:
        """[self.id_to_token(i) for i in range(n)] in bulk when the model can list its tokens so
        (byte-level BPE: ByteBPE.tokens_up_to), else None."""
        bulk = getattr(self._model, "tokens_up_to", None)
        if bulk is None:
            return None
        tokens = bulk(n)
        for i, t in self._added_by_id.items():  # (as id_to_token: the first added token of an id)
            if 0 <= i < n and (tokens[i] is None or t.special):
                tokens[i] = t.content
        return tokens

    def get_vocab(self) -> dict[str, int]:
        """Every token (as the vocabulary spells it) -> id, added tokens included (HF's get_vocab)."""
        v = dict(self._model.vocab)
        for t in self._added:
            v.setdefault(t.content, t.id)
        return v

    @property
    def vocab(self):
        """Byte-level tokenizers: every id -> its bytes, special tokens included (tiktoken style).
        Others: every token -> id (as get_vocab)."""
        if isinstance(self._model, ByteBPE):
            vocab = {i: b for b, i in self._model.ranks.items()}
            vocab.update((i, t.encode("utf-8")) for i, t in self._model.decode_only.items())
            vocab.update((t.id, t.content.encode("utf-8")) for t in self._added if t.id not in vocab)
            return dict(sorted(vocab.items()))
        return self.get_vocab()

    @functools.cached_property
    def _special_ids(self) -> frozenset:
        return frozenset(t.id for t in self._added if t.special)

    @property
    def max_token_value(self) -> int:
        added = max((t.id for t in self._added), default=-1)
        if isinstance(self._model, ByteBPE):  # (its largest id is kept: o200k's 200k ids took 3.5 ms a call)
            return max(self._model._top_id, added)
        return max(max(self._model.vocab.values(), default=-1), added)

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's definition)."""
        return self.max_token_value + 1

    @property
    def vocab_size(self) -> int:
        """The number of distinct ids (model tokens and added tokens)."""
        return len(set(self.get_vocab().values()))

    @property
    def eot_token(self) -> int:
        return self._specials["<|endoftext|>"]

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._specials)

    @property
    def special_tokens(self) -> dict[str, int]:
        """Special added tokens, and the special tokens the model itself keeps (its unknown token)."""
        model_specials = getattr(self._model, "special_tokens", None) or ()
        d = {t: self._model.token_to_id(t) for t in model_specials if self._model.token_to_id(t) is not None}
        d.update(self._specials)
        return d

    def is_special_token(self, token: int) -> bool:
        return token in self._special_ids

    @property
    def pattern(self) -> str | None:
        """The split pattern of a byte-level tokenizer (its pieces are this regex's matches), or None."""
        return getattr(self, "_pattern", None)

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted."""
        if isinstance(self._model, ByteBPE):
            return sorted(self._model.ranks)
        return sorted(t.encode("utf-8") for t in self._model.vocab)

    @property
    def merges(self):
        """The merges in priority order (byte-level: byte pairs; derived from ranks if not explicit)."""
        return self._model.merges

    # ----------------------------------------------------------------------------------------------
    # Persistence

    def save(self, path, *, format: str = "tokenforge") -> None:
        """Writes the tokenizer to a file, atomically: tokenforge's own format, or any of
        tokenforge.formats ("huggingface", "tiktoken", "gpt2", "vocab_merges", "bert_vocab", ...)."""
        name = FORMAT_ALIASES.get(format, format)
        writer = WRITERS.get(name) if name != "to_tiktoken" else None  # (to_tiktoken makes an object, not a file)
        if writer is None:
            raise ValueError(f"unknown format {format!r}; known: {', '.join(repr(f) for f in WRITERS if f != 'to_tiktoken')}")
        writer(self, path)

    def to_tiktoken(self):
        """A `tiktoken.Encoding` with the same ranks, pattern and special tokens (tiktoken must be
        installed). ValueError if tiktoken's rule cannot reproduce this tokenizer's ids."""
        writer = WRITERS.get("to_tiktoken")
        if writer is None:
            raise ValueError("tokenforge.formats is not loaded")
        return writer(self)

    def _state(self) -> dict:
        """The byte-level shorthand's arguments (what the byte-level file formats write)."""
        if not isinstance(self._model, ByteBPE):
            raise ValueError(f"{self.name}: not a byte-level BPE tokenizer")
        if self._model.decode_only:
            raise ValueError(f"{self.name}: {len(self._model.decode_only)} decode-only tokens (spelled outside GPT-2's "
                             "alphabet, as in tokenizer.json) have no place in the byte-level shorthand")
        if self.pattern is None:
            raise ValueError(f"{self.name}: the pre-tokenizer {self._pre_tokenizer!r} is not one split pattern")
        if not (self._normalizer is None or isinstance(self._normalizer, (_normalizers.NFC, _normalizers.NFD,
                                                                           _normalizers.NFKC, _normalizers.NFKD))):
            raise ValueError(f"{self.name}: the normalizer {self._normalizer!r} is not a Unicode form")
        if not self._only_plain or any(not t.special for t in self._added):
            raise ValueError(f"{self.name}: added tokens with Hugging Face's flags have no byte-level shorthand")
        if self._post is not None or not isinstance(self._decoder, _decoders.ByteLevel):
            raise ValueError(f"{self.name}: a post-processor or a decoder other than ByteLevel has no byte-level shorthand")
        m = self._model
        return {
            "name": self.name,
            "normalizer": None if self._normalizer is None else self._normalizer.kind,
            "pattern": self.pattern,
            "mergeable_ranks": m.ranks,
            "special_tokens": dict(self._specials),
            "merges": m.merges_given,
            "ignore_merges": m.ignore_merges,
        }

    def __reduce__(self):
        return (_unpickle, (type(self), OWN_FORMAT["to_dict"](self)))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} model={getattr(self._model, 'kind', '?')} n_vocab={self.n_vocab}>"


def _unpickle(cls, obj: dict):
    tok = OWN_FORMAT["from_dict"](obj)
    if type(tok) is not cls and issubclass(cls, type(tok)):  # Encoding, a family class: constructors only
        tok.__class__ = cls
    return tok


def _clean(text: str) -> str:
    check_text(text)
    return replace_surrogates(text) if has_surrogates(text) else text


def _check_batch(text, *, pairs: bool = False):
    """The texts of a batch; with pairs=True, (texts, pair texts or None) where items may be
    (text, pair) tuples (all or none)."""
    if isinstance(text, str):
        raise TypeError("a batch is a list of str, not one str")
    texts = list(text)
    if pairs and texts and any(isinstance(t, (tuple, list)) for t in texts):
        if not all(isinstance(t, (tuple, list)) and len(t) == 2 for t in texts):
            raise TypeError("a batch of pairs must hold (text, pair) tuples only")
        firsts, seconds = [t[0] for t in texts], [t[1] for t in texts]
        for t in firsts + seconds:
            check_text(t)
        return firsts, seconds
    for t in texts:
        check_text(t)
    return (texts, None) if pairs else texts
