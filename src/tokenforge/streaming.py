"""Where a stream of text may be cut without changing how it is split into pieces.

`encode_iterable` must give exactly the ids of the whole concatenation while holding only a bounded
buffer, so it encodes the buffer up to a *safe cut* and keeps the rest. A cut at c is safe when the
split pattern is certain to end a piece at c whatever text follows, and nothing before c depends on
what comes after. For the three named patterns (GPT-2, cl100k, o200k) two places qualify:

- a space between two ASCII letters ("a b"): the letter run ends at the space, and the space starts
  the next piece (" b...") in each pattern;
- after a newline between a non-space and an ASCII letter ("x\\nb"): no branch carries a newline into
  a letter run (the letter branches' optional prefix excludes CR and LF), and as the newline is not
  part of a longer whitespace run, the end of text does not change how it is split (`\\s++$`).

A special token containing the separator would make that cut unsafe, so the rule is then not used.
For custom patterns the same cuts are used; a pattern that can match across them would make the
streamed ids differ (documented in docs/design.md).
"""

from __future__ import annotations

import re

_SPACE_CUT = re.compile(r"[A-Za-z] [A-Za-z]")
_NEWLINE_CUT = re.compile(r"\S\n[A-Za-z]")


def safe_cut(buffer: str, special_tokens) -> int:
    """The largest safe cut position in buffer, or 0 if there is none."""
    rules = []  # (regex, where the cut is: offset from the match start)
    if not any(" " in s for s in special_tokens):
        rules.append((_SPACE_CUT, 1))  # "a| b"
    if not any("\n" in s for s in special_tokens):
        rules.append((_NEWLINE_CUT, 2))  # "x\n|b"
    for window in (4096, len(buffer)):
        start = max(0, len(buffer) - window)
        best = 0
        for rule, offset in rules:
            for m in rule.finditer(buffer, start):
                best = max(best, m.start() + offset)
        if best:
            return best
    return 0
