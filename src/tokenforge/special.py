"""Added tokens (Hugging Face's rules) and the special-token policy (tiktoken's), shared by every
encode method.

An added token is a token found in the text before the pipeline runs (BERT's "[MASK]",
"<|endoftext|>"). Hugging Face's flags: `special` (a special token: skipped when decoding with
skip_special_tokens, and subject to the policy below), `single_word` (only where no word character
touches it), `lstrip` / `rstrip` (it swallows the whitespace on its left / right), `normalized`
(matched in the normalized text, by its normalized form, instead of in the text as given). Matching
is leftmost-longest over all tokens at once; the text between matches goes through the pipeline on
its own.

tiktoken's policy for special tokens: `allowed_special` tokens in the text become their ids;
`disallowed_special` tokens raise ValueError; anything else is encoded as ordinary text. "all"
stands for every special token, and disallowed_special="all" means every special token not allowed.
Added tokens that are not special are always matched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Collection, Literal, Union

import regex

from . import _core

AllowedSpecial = Union[Literal["all"], AbstractSet[str]]
DisallowedSpecial = Union[Literal["all"], Collection[str]]


class SpecialPolicy:
    """Turns (allowed_special, disallowed_special) into the masks the native core takes, cached."""

    def __init__(self, special_tokens: dict[str, int], always: int = 0):
        """`always`: how many tokens the native core has after the special ones that every query
        considers (added tokens that are not special: matched in any text, never disallowed)."""
        self._order = list(special_tokens)  # the native core's index of each special token
        self._index = {tok: i for i, tok in enumerate(self._order)}
        self._all = frozenset(self._order)
        self._always = b"\x01" * always
        self._cache: dict[tuple, tuple[bytes, bytes]] = {}

    @property
    def order(self) -> list[str]:
        return self._order

    def masks(self, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial) -> tuple[bytes, bytes]:
        """Returns (allowed mask, disallowed mask): one byte per special token, 1 = selected."""
        key = (_freeze(allowed_special, "allowed_special"), _freeze(disallowed_special, "disallowed_special"))
        masks = self._cache.get(key)
        if masks is None:
            allowed = self._all if key[0] == "all" else key[0] & self._all
            disallowed = self._all - allowed if key[1] == "all" else key[1] & self._all
            masks = (self._mask(allowed), self._mask(disallowed))
            if self._always:
                masks = ((masks[0] or bytes(len(self._order))) + self._always, masks[1])
            if len(self._cache) < 256:
                self._cache[key] = masks
        return masks

    def _mask(self, tokens: frozenset) -> bytes:
        if not tokens:
            return b""
        mask = bytearray(len(self._order))
        for tok in tokens:
            mask[self._index[tok]] = 1
        return bytes(mask)

    def token_at(self, index: int) -> str:
        return self._order[index]

    def error_for(self, native: Exception) -> ValueError:
        """tiktoken's error for the native core's DisallowedSpecial (its argument: the token's index)."""
        return disallowed_error(self.token_at(int(native.args[0])))


def _freeze(value, name: str):
    if value == "all":
        return "all"
    if isinstance(value, str):
        raise TypeError(f'{name} must be "all" or a collection of special-token strings, not the str {value!r}')
    if isinstance(value, frozenset):
        return value
    try:
        return frozenset(value)
    except TypeError:
        raise TypeError(f'{name} must be "all" or a collection of special-token strings') from None


def disallowed_error(token: str) -> ValueError:
    return ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        f"If you want this text to be encoded as a special token, pass it to `allowed_special`, "
        f"e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        f"To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


@dataclass(frozen=True)
class AddedToken:
    content: str
    id: int
    special: bool = True
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool = False

    @property
    def plain(self) -> bool:
        """Matched exactly as written, in the text as given (tiktoken's kind of special token)."""
        return self.special and self.as_written

    @property
    def as_written(self) -> bool:
        """Matched exactly as written, in the text as given (no flags), special or not."""
        return not (self.single_word or self.lstrip or self.rstrip or self.normalized)

    @classmethod
    def _matched_as_written(cls, content: str, id: int) -> "AddedToken":
        """AddedToken(content, id) (special, no flags), made without the frozen dataclass's seven
        object.__setattr__ calls: a file with a thousand control pieces or 6,410 added tokens made
        them at every load. The caller has checked content and id."""
        token = object.__new__(cls)
        token.__dict__.update(content=content, id=id, special=True, single_word=False, lstrip=False, rstrip=False,
                              normalized=False)
        return token

    def to_dict(self) -> dict:
        return {"id": self.id, "content": self.content, "single_word": self.single_word, "lstrip": self.lstrip,
                "rstrip": self.rstrip, "normalized": self.normalized, "special": self.special}


_ENDS_WITH_WORD = regex.compile(r"\w\Z")
_STARTS_WITH_WORD = regex.compile(r"\w")  # used with match(text, pos)
_SPACE_AT_END = regex.compile(r"\s*\Z")
_SPACE_AT_START = regex.compile(r"\s*")


class AddedVocabulary:
    """Finds added tokens in text, as Hugging Face's AddedVocabulary does."""

    # How many compiled matchers (one per set of allowed special tokens) are kept.
    MAX_CACHED = 16

    def __init__(self, tokens: list[AddedToken], normalize=None):
        self.tokens = list(tokens)
        self._normalize = normalize
        self._by_content: dict[str, AddedToken] = {}
        for t in self.tokens:
            self._by_content.setdefault(t.content, t)
        self._normalized_by_content: dict[str, AddedToken] = {}
        for t in self.tokens:
            if t.normalized:
                key = normalize(t.content) if normalize is not None else t.content
                if key:
                    self._normalized_by_content.setdefault(key, t)
        self._cache: dict = {}

    def _matcher(self, normalized: bool, allowed: frozenset | str):
        key = (normalized, allowed)
        hit = self._cache.get(key)
        if hit is None:
            table = self._normalized_by_content if normalized else {t.content: t for t in self.tokens if not t.normalized}
            keys = [k for k, t in table.items() if not t.special or allowed == "all" or t.content in allowed]
            keys.sort(key=len, reverse=True)  # alternation is leftmost-first: longest first gives leftmost-longest
            # The native finder (one Aho-Corasick pass, whatever the number of tokens) finds what
            # an alternation of the keys finds; that alternation serves texts with lone surrogates.
            hit = (_core.LiteralFinder(keys) if keys else None, keys, table)
            if len(self._cache) >= self.MAX_CACHED:  # bounded; no lock (fork-safe): a race only compiles twice
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def _found(self, text: str, allowed, normalized: bool) -> list[tuple[int, int, str]]:
        """(start, stop, key) of each added token found in text, leftmost-longest, in order."""
        finder, keys, _ = self._matcher(normalized, allowed)
        if finder is None:
            return []
        try:
            return [(start, stop, keys[k]) for start, stop, k in finder.find_all(text)]
        except UnicodeEncodeError:  # lone surrogates (compiled here: 1,283 tokens took 0.2 s)
            pattern = regex.compile("|".join(map(regex.escape, keys)))
            return [(*m.span(), m.group()) for m in pattern.finditer(text)]

    def finder_and_ids(self, allowed, *, normalized: bool = False) -> tuple[object, list[int]]:
        """The native finder of the tokens `allowed` (matched as written, or normalized) and the id
        of each of its literals, for a native caller; (None, []) when there are none."""
        key = ("ids", normalized, allowed)
        hit = self._cache.get(key)
        if hit is None:
            finder, keys, table = self._matcher(normalized, allowed)
            hit = (finder, [table[k].id for k in keys])
            self._cache[key] = hit  # (bounded with the matchers: cleared with them)
        return hit

    def split(self, text: str, allowed, *, normalized: bool = False) -> list[tuple[str, int | None]]:
        """[(text, None) or (token content, id)] covering the text, in order."""
        finder, keys, table = self._matcher(normalized, allowed)
        if finder is None:
            return [(text, None)] if text else []
        found = self._found(text, allowed, normalized)
        out: list[tuple[str, int | None]] = []
        start_offset = 0
        for start, stop, content in found:
            tok = table[content]
            if tok.single_word:
                if (start > 0 and _ENDS_WITH_WORD.search(text, 0, start)) or (stop < len(text) and _STARTS_WITH_WORD.match(text, stop)):
                    continue
            if tok.lstrip:
                start = max(_SPACE_AT_END.search(text, 0, start).start(), start_offset)
            if tok.rstrip:
                stop = _SPACE_AT_START.match(text, stop).end()
            if start_offset < start:
                out.append((text[start_offset:start], None))
            out.append((tok.content, tok.id))
            start_offset = stop
        if start_offset < len(text):
            out.append((text[start_offset:], None))
        return out
