"""The one place split patterns are compiled: `compile_split(pat_str)` -> an object with
`.spans(text)`, the (start, end) code-point offsets of the pattern's matches, leftmost first.

The native engine's `_core.Pattern` runs it when it exists and accepts the pattern (it raises
`UnsupportedPattern`, a ValueError, for patterns outside its subset); otherwise the `regex` module
does. Every Split and ByteLevel(use_regex) stage, and the byte-level encoder's custom patterns, go
through here.
"""

from __future__ import annotations

import functools

import regex

from .. import _core, regex_budget


class RegexMatcher:
    """The `regex` module's matcher (the reference semantics: Python's `regex`, as tiktoken)."""

    def __init__(self, pat_str: str):
        try:
            self._re = regex.compile(pat_str)
        except regex.error as e:
            raise ValueError(f"the split pattern {pat_str[:80]!r} does not compile: {e}") from None
        self.pattern = pat_str

    def spans(self, text: str) -> list[tuple[int, int]]:
        # finditer, not findall: with capture groups, findall gives the groups, not the pieces; in
        # bounded time (regex_budget): the pattern may come from an untrusted file.
        return [m.span() for m in regex_budget.finditer(self._re, text)]

    def split(self, text: str) -> list[str]:
        return [m.group() for m in regex_budget.finditer(self._re, text)]


@functools.lru_cache(maxsize=64)
def compile_split(pat_str: str):
    """A compiled split pattern: the native one if the core has it and accepts the pattern."""
    if not isinstance(pat_str, str) or not pat_str:
        raise ValueError(f"a split pattern must be a non-empty str, got {pat_str!r:.80}")
    native = getattr(_core, "Pattern", None)
    if native is not None:
        try:
            return native(pat_str)
        except ValueError:  # _core.UnsupportedPattern: outside the native subset
            pass
    return RegexMatcher(pat_str)
