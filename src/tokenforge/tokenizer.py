"""Tokenizer: byte-level BPE behind the tiktoken API (encode / decode / batch / streaming).

A Tokenizer is an optional Unicode normalization form, a split pattern, a vocabulary of mergeable
tokens (bytes -> id), optional explicit merges, and special tokens. The heavy work runs in the
native core (`tokenforge._core`), which gets everything once at construction and then only text
in, ids out, with the GIL released.

Two merge rules (see cpp/bpe.h): without explicit merges the ids are tiktoken ranks and any two
adjacent parts whose concatenation is a token may merge; with explicit merges (Hugging Face,
`merges.txt`) only listed pairs merge, in list order.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import AbstractSet, Collection, Iterable, Iterator, Literal, Mapping, Sequence

import numpy as np

from . import _core, patterns, regex_budget
from .special import SpecialPolicy, disallowed_error

DEFAULT_THREADS = 8
STREAM_BUFFER = 1 << 16  # characters buffered by encode_iterable before it looks for a cut

# Unicode normalization forms a Tokenizer may apply to text before splitting (unicodedata's names).
NORMALIZATION_FORMS = ("NFC", "NFD", "NFKC", "NFKD")


class UnknownTokenError(KeyError, ValueError):
    """A token id or token that is not in the vocabulary (a KeyError and a ValueError)."""

    def __str__(self) -> str:  # KeyError would show the repr of the message
        return str(self.args[0]) if self.args else ""


def _replace_surrogates(text: str) -> str:
    # Lone surrogates become U+FFFD and surrogate pairs their code point, as tiktoken does.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")


class Tokenizer:
    """A byte-level BPE tokenizer.

    >>> tok = Tokenizer.from_ranks({bytes([i]): i for i in range(256)} | {b"ab": 256}, pattern="gpt2")
    >>> tok.encode("abc")
    [256, 99]
    """

    def __init__(
        self,
        *,
        pattern: str,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int] | None = None,
        merges: Sequence[tuple[bytes, bytes]] | None = None,
        ignore_merges: bool | None = None,
        name: str = "tokenizer",
        normalizer: str | None = None,
    ):
        self.name = name
        if normalizer is not None and normalizer not in NORMALIZATION_FORMS:
            raise ValueError(f"normalizer must be None or one of {', '.join(NORMALIZATION_FORMS)}, got {normalizer!r}")
        self._normalizer = normalizer
        self._pat_str = patterns.resolve(pattern)
        self._mergeable_ranks = dict(mergeable_ranks)
        self._special_tokens = dict(special_tokens or {})
        self._merges = None if merges is None else [(bytes(a), bytes(b)) for a, b in merges]
        # tiktoken's rule always emits a piece that is a token whole; with explicit merges that is
        # Hugging Face's `ignore_merges` option, off unless asked for.
        self._ignore_merges = merges is None if ignore_merges is None else bool(ignore_merges)
        self._validate()
        self._policy = SpecialPolicy(self._special_tokens)
        core_args = (
            [(i, b) for b, i in self._mergeable_ranks.items()],
            self._merge_rules(),
            self._ignore_merges,
        )
        specials = [(s.encode("utf-8"), self._special_tokens[s]) for s in self._policy.order]
        try:
            try:  # the native split engine, when the pattern is in its subset
                self._core = _core.Encoder(*core_args, self._pat_str, specials)
                self._splits_natively = True
            except _core.UnsupportedPattern:  # `regex` splits, the core runs BPE
                self._core = _core.Encoder(*core_args, None, specials)
                self._splits_natively = False
        except TypeError:
            raise TypeError("mergeable_ranks must map bytes to int ids in [0, 2**32 - 1)") from None
        # No locks: a fork while another thread held one would deadlock the child. Compiled regexes
        # are built outside any lock (two threads may both compile; one result is kept).
        self._split_regex = None
        self._special_regexes: dict[bytes, object] = {}
        # The number of the hand-written scanner that runs the pattern (0 GPT-2, 1 cl100k, 2 o200k), or
        # -1: the safe cuts of streaming, training and sharding are proven for those patterns only.
        scanner = _core.Pattern(self._pat_str).scanner if self._splits_natively else None
        self._native_pattern = {"gpt2": 0, "cl100k": 1, "o200k": 2}.get(scanner, -1)
        if not self._splits_natively:  # a file's bad pattern fails here, not at the first encode
            import regex

            try:
                self._split_regex = regex.compile(self._pat_str)
            except regex.error as e:
                raise ValueError(f"the split pattern {self._pat_str[:80]!r} does not compile: {e}") from None

    # ----------------------------------------------------------------------------------------------
    # Construction

    @classmethod
    def from_ranks(
        cls,
        ranks: Mapping[bytes, int],
        *,
        pattern: str,
        special_tokens: Mapping[str, int] | None = None,
        name: str = "tokenizer",
    ) -> "Tokenizer":
        """A tokenizer from tiktoken-style ranks (token bytes -> rank, the rank is the id)."""
        return cls(pattern=pattern, mergeable_ranks=ranks, special_tokens=special_tokens, name=name)

    @classmethod
    def from_vocab_merges(
        cls,
        vocab: Mapping[int, bytes],
        merges: Sequence[tuple[bytes, bytes]],
        *,
        special_tokens: Mapping[str, int] | None = None,
        pattern: str = "gpt2",
        ignore_merges: bool = False,
        name: str = "tokenizer",
    ) -> "Tokenizer":
        """A tokenizer from a vocabulary (id -> bytes) and merges (byte pairs, in merge order).

        Ids need not follow merge order (GPT-2's encoder.json permutes the 256 byte tokens). Entries
        of `vocab` that are special tokens are taken as such.
        """
        special_tokens = dict(special_tokens or {})
        special_bytes = {s.encode("utf-8") for s in special_tokens}
        ranks: dict[bytes, int] = {}
        for i, b in vocab.items():
            b = bytes(b)
            if b in special_bytes:
                continue
            if b in ranks:
                raise ValueError(f"ids {ranks[b]} and {i} have the same bytes {b!r}")
            ranks[b] = int(i)
        return cls(
            pattern=pattern,
            mergeable_ranks=ranks,
            special_tokens=special_tokens,
            merges=list(merges),
            ignore_merges=ignore_merges,
            name=name,
        )

    def _validate(self) -> None:
        # Types and id ranges of mergeable tokens are checked by the native constructor's
        # conversion (TypeError / OverflowError, rephrased in __init__); here the rest.
        if any(isinstance(i, bool) for i in self._mergeable_ranks.values()):  # an int to the native conversion
            raise TypeError("mergeable_ranks must map bytes to int ids in [0, 2**32 - 1), not bool")
        top = max(self._mergeable_ranks.values(), default=0)
        if isinstance(top, int) and top >= 2**32 - 1:  # 2**32 - 1 marks "no token" in the native core
            raise ValueError(f"mergeable token ids must be below 2**32 - 1, got {top}")
        if len(set(self._mergeable_ranks.values())) != len(self._mergeable_ranks):
            raise ValueError("two mergeable tokens have the same id")
        for s, i in self._special_tokens.items():
            if not isinstance(s, str) or not s:
                raise TypeError(f"special tokens must be non-empty str, got {s!r}")
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**32 - 1:
                raise ValueError(f"special token {s!r} has an invalid id {i!r}")
        # Two special tokens may share an id (tiktoken's o200k_harmony does); decoding gives the
        # first one.

    def _merge_rules(self) -> list[tuple[int, int, int]]:
        if self._merges is None:
            return []
        ranks = self._mergeable_ranks
        rules = []
        for n, (a, b) in enumerate(self._merges):
            try:
                rules.append((ranks[a], ranks[b], ranks[a + b]))
            except KeyError:
                missing = next(x for x in (a, b, a + b) if x not in ranks)
                raise ValueError(f"merge {n} ({a!r}, {b!r}) uses {missing!r}, which is not in the vocabulary") from None
        return rules

    # ----------------------------------------------------------------------------------------------
    # Encoding

    def encode_ordinary(self, text: str) -> list[int]:
        """Encodes text, treating special tokens as ordinary text.

        >>> enc.encode_ordinary("hello world")  # doctest: +SKIP
        [15339, 1917]
        """
        _check_text(text)
        return self._encode(text, b"")

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Encodes text; special tokens follow tiktoken's allowed/disallowed policy.

        A disallowed special token in the text raises ValueError; by default all are disallowed.
        """
        _check_text(text)
        allowed, disallowed = self._policy.masks(allowed_special, disallowed_special)
        text = self._check_disallowed(text, disallowed)
        return self._encode(text, allowed)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> np.ndarray:
        """Like encode, as a numpy uint32 array."""
        _check_text(text)
        allowed, disallowed = self._policy.masks(allowed_special, disallowed_special)
        text = self._check_disallowed(text, disallowed)
        if not self._splits_natively or self._normalizer is not None:
            return np.asarray(self._encode(text, allowed), dtype=np.uint32)
        try:
            return self._core.encode_to_numpy(text, allowed)
        except UnicodeEncodeError:
            return self._core.encode_to_numpy(_replace_surrogates(text), allowed)

    def encode_batch(
        self,
        text: Sequence[str],
        *,
        num_threads: int = DEFAULT_THREADS,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[list[int]]:
        """Encodes many texts in parallel native threads; equal to [encode(t) for t in text]."""
        texts = self._check_batch(text)
        allowed, disallowed = self._policy.masks(allowed_special, disallowed_special)
        texts = [self._check_disallowed(t, disallowed) for t in texts] if disallowed else texts
        return self._encode_many(texts, allowed, num_threads)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = DEFAULT_THREADS) -> list[list[int]]:
        """Encodes many texts in parallel, treating special tokens as ordinary text."""
        return self._encode_many(self._check_batch(text), b"", num_threads)

    def count_tokens(self, text: str) -> int:
        """len(encode_ordinary(text)), without building the list of ids."""
        _check_text(text)
        if not self._splits_natively or self._normalizer is not None:
            return len(self._encode(text, b""))
        try:
            return self._core.count(text, b"")
        except UnicodeEncodeError:
            return self._core.count(_replace_surrogates(text), b"")

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of a text that is exactly one token (mergeable or special); KeyError otherwise."""
        b = text_or_bytes.encode("utf-8") if isinstance(text_or_bytes, str) else bytes(text_or_bytes)
        if b in self._mergeable_ranks:
            return self._mergeable_ranks[b]
        special = self._special_by_bytes.get(b)
        if special is None:
            raise UnknownTokenError(f"{text_or_bytes!r} is not a single token")
        return special

    def encode_iterable(
        self,
        iterable: Iterable[str],
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> Iterator[int]:
        """Yields the ids of the concatenation of `iterable` lazily (a file handle, a generator).

        Text is buffered only up to the last place where a piece boundary is certain (see
        streaming.safe_cut), so memory stays bounded by the longest stretch without one, and the
        ids are exactly those of encoding the whole concatenation.
        """
        from .streaming import safe_cut

        parts: list[str] = []
        size, next_check = 0, STREAM_BUFFER
        for chunk in iterable:
            _check_text(chunk)
            parts.append(chunk)
            size += len(chunk)
            if size < next_check:
                continue
            buffer = "".join(parts)
            cut = safe_cut(buffer, self._special_tokens)
            if cut > 0:
                yield from self.encode(buffer[:cut], allowed_special=allowed_special, disallowed_special=disallowed_special)
                buffer = buffer[cut:]
            parts, size = [buffer], len(buffer)
            # Without a cut, wait for the buffer to double: the search stays linear overall.
            next_check = size + STREAM_BUFFER if cut > 0 else 2 * size
        buffer = "".join(parts)
        if buffer:
            yield from self.encode(buffer, allowed_special=allowed_special, disallowed_special=disallowed_special)

    def _check_batch(self, text) -> list[str]:
        if isinstance(text, str):
            raise TypeError("encode_batch takes a list of str, not a str")
        texts = list(text)
        for t in texts:
            _check_text(t)
        return texts

    def _check_disallowed(self, text: str, disallowed: bytes) -> str:
        if not disallowed:
            return text
        try:
            index = self._core.find_special(text, disallowed)
        except UnicodeEncodeError:
            text = _replace_surrogates(text)
            index = self._core.find_special(text, disallowed)
        if index >= 0:
            raise disallowed_error(self._policy.token_at(index))
        return text

    def _encode(self, text: str, allowed: bytes) -> list[int]:
        if self._normalizer is not None:
            return self._encode_normalized(text, allowed)
        return self._encode_normal(text, allowed)

    def _encode_normalized(self, text: str, allowed: bytes) -> list[int]:
        """Special tokens are found in the text as given; the text between them is normalized
        (as Hugging Face tokenizers does for added tokens that are not `normalized`)."""
        normalize = functools.partial(unicodedata.normalize, self._normalizer)
        special_re = self._regexes(allowed)[1] if any(allowed) else None
        if special_re is None:
            return self._encode_normal(normalize(text), b"")
        ids: list[int] = []
        start = 0
        for m in special_re.finditer(text):
            ids += self._encode_normal(normalize(text[start : m.start()]), b"")
            ids.append(self._special_tokens[m.group()])
            start = m.end()
        return ids + self._encode_normal(normalize(text[start:]), b"")

    def _encode_normal(self, text: str, allowed: bytes) -> list[int]:
        if not self._splits_natively:
            return self._encode_with_regex(text, allowed)
        try:
            return self._core.encode(text, allowed)
        except UnicodeEncodeError:
            return self._core.encode(_replace_surrogates(text), allowed)

    def _encode_many(self, texts: list[str], allowed: bytes, num_threads: int) -> list[list[int]]:
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive int, got {num_threads!r}")
        if self._normalizer is not None:
            if any(allowed):
                return [self._encode_normalized(t, allowed) for t in texts]
            texts = [unicodedata.normalize(self._normalizer, t) for t in texts]
        if not self._splits_natively:
            return [self._encode_with_regex(t, allowed) for t in texts]
        try:
            return self._core.encode_batch(texts, allowed, num_threads)
        except UnicodeEncodeError:
            return self._core.encode_batch([_replace_surrogates(t) for t in texts], allowed, num_threads)

    def _encode_with_regex(self, text: str, allowed: bytes) -> list[int]:
        """The path for custom split patterns: `regex` splits, the native core runs BPE."""
        split, special_re = self._regexes(allowed)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _replace_surrogates(text)
        ids: list[int] = []
        start = 0
        if special_re is not None:
            for m in special_re.finditer(text):
                pieces = [p.group().encode("utf-8") for p in regex_budget.finditer(split, text, start, m.start())]
                ids += self._core.encode_pieces(pieces)
                ids.append(self._special_tokens[m.group()])
                start = m.end()
        # finditer, not findall: with capture groups in the pattern, findall gives the groups (tuples,
        # or only part of each piece), not the pieces.
        ids += self._core.encode_pieces([p.group().encode("utf-8") for p in regex_budget.finditer(split, text[start:])])
        return ids

    # How many compiled special-token regexes (one per distinct set of allowed special tokens) a
    # tokenizer keeps; the oldest goes first.
    _MAX_SPECIAL_REGEXES = 16

    def _regexes(self, allowed: bytes):
        import regex

        split = self._split_regex
        if split is None:
            split = self._split_regex = regex.compile(self._pat_str)
        cache = self._special_regexes
        special_re = cache.get(allowed, False)
        if special_re is False:
            toks = sorted((t for t, m in zip(self._policy.order, allowed) if m), key=len, reverse=True)
            special_re = regex.compile("|".join(map(regex.escape, toks))) if toks else None
            while len(cache) >= self._MAX_SPECIAL_REGEXES:
                try:
                    del cache[next(iter(cache))]
                except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                    break
            cache[allowed] = special_re
        return split, special_re

    # ----------------------------------------------------------------------------------------------
    # Decoding

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes of a sequence of ids. An unknown id raises ValueError naming it."""
        try:
            return self._core.decode_bytes(tokens)
        except ValueError as e:
            raise UnknownTokenError(str(e)) from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of a sequence of ids; invalid UTF-8 is replaced unless errors="strict"."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one id."""
        return self.decode_tokens_bytes([token])[0]

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each id."""
        try:
            return self._core.decode_tokens_bytes(tokens)
        except ValueError as e:
            raise UnknownTokenError(str(e)) from None

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text and, for each token, the index of the character where it starts.

        A token that begins inside a multi-byte character starts at that character.
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        text = b"".join(token_bytes).decode("utf-8", errors="strict")
        return text, offsets

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = DEFAULT_THREADS) -> list[str]:
        """Decodes many sequences of ids."""
        return [self.decode(tokens, errors=errors) for tokens in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = DEFAULT_THREADS) -> list[bytes]:
        """Decodes many sequences of ids to bytes."""
        return [self.decode_bytes(tokens) for tokens in batch]

    # ----------------------------------------------------------------------------------------------
    # Vocabulary

    @functools.cached_property
    def _special_by_bytes(self) -> dict[bytes, int]:
        return {s.encode("utf-8"): i for s, i in self._special_tokens.items()}

    @functools.cached_property
    def max_token_value(self) -> int:
        return max([*self._mergeable_ranks.values(), *self._special_tokens.values()], default=-1)

    @property
    def n_vocab(self) -> int:
        """One more than the largest id (tiktoken's definition)."""
        return self.max_token_value + 1

    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._special_tokens)

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self._special_tokens)

    @property
    def pattern(self) -> str:
        return self._pat_str

    @property
    def normalizer(self) -> str | None:
        """The Unicode normalization form applied to text before splitting, or None."""
        return self._normalizer

    def is_special_token(self, token: int) -> bool:
        return token in self._special_ids

    @functools.cached_property
    def _special_ids(self) -> frozenset:
        return frozenset(self._special_tokens.values())

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every mergeable token, sorted."""
        return sorted(self._mergeable_ranks)

    @property
    def vocab(self) -> dict[int, bytes]:
        """Every id -> its bytes, special tokens included."""
        vocab = {i: b for b, i in self._mergeable_ranks.items()}
        vocab.update((i, s.encode("utf-8")) for s, i in self._special_tokens.items())
        return dict(sorted(vocab.items()))

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in priority order, as byte pairs."""
        if self._merges is None:
            if self._merges_derived is None:
                from .reference import recover_merges

                self._merges_derived = recover_merges(self._mergeable_ranks)
            return list(self._merges_derived)
        return list(self._merges)

    _merges_derived = None

    # ----------------------------------------------------------------------------------------------
    # Persistence

    def save(self, path, *, format: str = "tokenforge") -> None:
        """Writes the tokenizer to one file, atomically (see tokenforge.io)."""
        from .io import save

        save(self, path, format=format)

    def to_tiktoken(self):
        """A `tiktoken.Encoding` with the same ranks, pattern and special tokens (tiktoken must be
        installed). ValueError if tiktoken's rule cannot reproduce this tokenizer's ids (see
        tokenforge.formats.tiktoken_bpe)."""
        from .formats.tiktoken_bpe import to_encoding

        return to_encoding(self)

    def _state(self) -> dict:
        return {
            "name": self.name,
            "normalizer": self._normalizer,
            "pattern": self._pat_str,
            "mergeable_ranks": self._mergeable_ranks,
            "special_tokens": self._special_tokens,
            "merges": self._merges,
            "ignore_merges": self._ignore_merges,
        }

    def __reduce__(self):
        return (_rebuild, (type(self), self._state()))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} n_vocab={self.n_vocab}>"


def _rebuild(cls, state: dict):
    obj = Tokenizer.__new__(cls)
    Tokenizer.__init__(obj, **state)
    return obj
