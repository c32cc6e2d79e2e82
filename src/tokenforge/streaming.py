"""Where a stream of text may be cut without changing how it is split into pieces.

`encode_iterable` and the dataset encoder must give exactly the ids of the whole text while holding
only a bounded buffer, so they encode the buffer up to a *safe cut* and keep the rest. A cut at c is
safe when the split pattern is certain to end a piece at c whatever text follows, and nothing before
c depends on what comes after. For the three named patterns (GPT-2, cl100k, o200k) three places
qualify:

- a space between two ASCII letters ("a b"): the letter run ends at the space, and the space starts
  the next piece (" b...") in each pattern;
- after a newline between a non-space and an ASCII letter ("x\\nb"): no branch carries a newline into
  a letter run (the letter branches' optional prefix excludes CR and LF), and as the newline is not
  part of a longer whitespace run, the end of text does not change how it is split (`\\s++$`);
- before a punctuation mark that follows a letter or a digit ("中|，", "12|,"): letter and digit
  runs end at punctuation in each pattern, and a piece never starts before a letter or digit and
  takes the punctuation after it. This is the cut of text without ASCII spaces (Chinese, Japanese,
  numeric CSV). The apostrophe is excluded (o200k attaches "'s" to the word before), and the marks
  are a fixed list, so a character that Python's Unicode tables do not know is never taken for one.

A cut is not used where a special token could straddle it (the two characters around it occur
together in a special token). For custom patterns the same cuts are used; a pattern that can match
across them would make the streamed ids differ (documented in docs/design.md).
"""

from __future__ import annotations

import os
import re

from . import _core

_PUNCT = re.escape("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~") + "，。、；：？！「」『』（）《》〈〉【】〔〕…—・·～"
_RULES = (  # (regex, where the cut is: offset from the match start)
    (re.compile(r"[A-Za-z] [A-Za-z]"), 1),  # "a| b"
    (re.compile(r"\S\n[A-Za-z]"), 2),  # "x\n|b"
    (re.compile(r"[^\W_][" + _PUNCT + "]"), 1),  # "中|，"
)


def safe_cut(buffer: str, special_tokens=(), *, start: int = 0, end: int | None = None) -> int:
    """The largest safe cut position in buffer[:end] at or after `start`, or 0 if there is none
    (a cut at `end` itself is not considered: what follows it is unknown).

    The search looks at the end first and then at windows that double backwards, so finding a cut
    costs about the length of text after it; with `start` a caller that already searched
    buffer[:start] in vain keeps the total work linear."""
    specials = [s for s in special_tokens if s]
    end = len(buffer) if end is None else min(end, len(buffer))
    window = 4096
    lo = end
    while lo > start:
        hi, lo = lo, max(start, end - window)
        best = 0
        # Matches may overlap the window's upper edge by two characters.
        for rule, offset in _RULES:
            for m in rule.finditer(buffer, max(0, lo - 2), min(end, hi + 2)):
                c = m.start() + offset
                if c > best and c >= max(lo, 1) and not _straddles(buffer, c, specials):
                    best = c
        if best:
            return best
        window *= 4
    return 0


def _straddles(buffer: str, c: int, specials) -> bool:
    pair = buffer[c - 1:c + 1]
    return any(pair in s for s in specials)


# A part of a cut text has at least this many characters (each part is one more text of the batch).
MIN_PART = 65_536


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), at least 1: the most threads a batch uses."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (no affinity masks on this system)
        return os.cpu_count() or 1


def has_long_text(texts: list[str]) -> bool:
    """Whether cut_long_texts could cut a text of the batch (the test made before every batch)."""
    return bool(texts) and max(map(len, texts)) >= 2 * MIN_PART


def cut_long_texts(texts: list[str], threads: int, special_tokens=()) -> tuple[list, list[int]] | None:
    """A batch for `threads` threads (at most one per usable CPU) with its long texts cut at safe
    cuts: (parts, firsts), text k being parts[firsts[k]:firsts[k + 1]] joined, where a part of a
    cut text is (text, begin, end), code points [begin, end) (the native batches read them in place:
    a slice of a 1.3M-character str took half a millisecond to copy); None when no text is cut.

    A batch's threads take whole texts, so a text longer than half a thread's share of the batch
    keeps one thread busy after the others have finished (session 30: the batches of real documents
    from Debian's packages that hold the longest, 9.4M and 6.7M characters, ran at 0.9-1.1x one
    thread's speed on two). Such a text is cut into parts of about a quarter share (at least
    MIN_PART characters), each at the last safe cut before its end (`_core.safe_cut_str`, the
    places of safe_cut above in code points, none where a special token could straddle it): the
    parts' ids, one after the other, are the text's ids under the named patterns."""
    lengths = list(map(len, texts))
    longest = max(lengths, default=0)
    if threads < 2 or longest < 2 * MIN_PART:
        return None
    threads = min(threads, usable_cpus())
    if threads < 2:
        return None
    share = sum(lengths) // threads
    limit = max(share // 2, 2 * MIN_PART)
    if longest <= limit:
        return None
    target = max(share // 4, MIN_PART)
    specials = [s for s in special_tokens if s]

    def cut_before(text, start, end):  # the last safe cut in (start, end) that no special straddles
        while True:
            cut = _core.safe_cut_str(text, start + 1, end)
            if not cut or not _straddles(text, cut, specials):
                return cut
            end = cut

    parts: list[str] = []
    firsts: list[int] = []
    for text, length in zip(texts, lengths):
        firsts.append(len(parts))
        start = 0
        while length > limit and length - start > target + target // 2:
            end = start + target
            cut = cut_before(text, start, end)
            while not cut and end < length:  # none in the stretch: the next one (each looked at once)
                searched, end = end, min(length, end + target)
                cut = cut_before(text, max(start, searched - 2), end)
            if not cut:
                break
            parts.append((text, start, cut))
            start = cut
        parts.append((text, start, length) if start else text)
    firsts.append(len(parts))
    return parts, firsts
