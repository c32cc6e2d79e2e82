"""The special-token policy shared by every encode method: what is allowed, what raises.

tiktoken's rule: `allowed_special` tokens in the text become their ids; `disallowed_special` tokens
raise ValueError; anything else is encoded as ordinary text. "all" stands for every special token,
and disallowed_special="all" means every special token not allowed.
"""

from __future__ import annotations

from typing import AbstractSet, Collection, Literal, Union

AllowedSpecial = Union[Literal["all"], AbstractSet[str]]
DisallowedSpecial = Union[Literal["all"], Collection[str]]


class SpecialPolicy:
    """Turns (allowed_special, disallowed_special) into the masks the native core takes, cached."""

    def __init__(self, special_tokens: dict[str, int]):
        self._order = list(special_tokens)  # the native core's index of each special token
        self._index = {tok: i for i, tok in enumerate(self._order)}
        self._all = frozenset(self._order)
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
