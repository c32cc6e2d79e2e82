"""Time bounds for split patterns run by the `regex` module (patterns the native engine does not run).

A backtracking regex from an untrusted file can take exponential time: `(a|aa)+b` on 36 `a`s and a
`c` takes half a minute, and seven times longer for every four more characters. Hugging Face's
tokenizers bounds this with Oniguruma's retry limit; `regex` offers a timeout instead. Every call
gets a budget proportional to the text: `BASE_SECONDS` plus `SECONDS_PER_CHAR` per character, which
is 30-50x the time any real split pattern needs (they run at 3-5 MB/s, 0.2-0.3 microseconds per
character), so an honest pattern never meets it and a pathological one fails in about a second with
a ValueError instead of hanging the process.
"""

from __future__ import annotations

BASE_SECONDS = 1.0
SECONDS_PER_CHAR = 1e-5


def budget(n_chars: int) -> float:
    """Seconds allowed for one pass of a pattern over n_chars characters."""
    return BASE_SECONDS + SECONDS_PER_CHAR * n_chars


def too_slow(pattern: str) -> ValueError:
    return ValueError(
        f"the split pattern {pattern[:80]!r} takes more than linear time on this text (catastrophic "
        "backtracking); stopped after its time budget. Rewrite the pattern without nested quantifiers"
    )


def finditer(compiled, text: str, pos: int = 0, endpos: int | None = None):
    """The matches of compiled in text[pos:endpos], as a list; ValueError if over budget."""
    end = len(text) if endpos is None else endpos
    try:
        return list(compiled.finditer(text, pos, end, timeout=budget(end - pos)))
    except TimeoutError:
        raise too_slow(compiled.pattern) from None


def fullmatch(compiled, text: str):
    """compiled.fullmatch(text); ValueError if over budget."""
    try:
        return compiled.fullmatch(text, timeout=budget(len(text)))
    except TimeoutError:
        raise too_slow(compiled.pattern) from None
