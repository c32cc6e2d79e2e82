"""The pre-tokenizer stage: cut (normalized) text into *pieces*; the model never merges across them.

A piece is (text, start, end): its text (which a stage may transform: Metaspace turns spaces into
"▁", ByteLevel spells bytes as GPT-2 characters) and the span of the input it came from. `split`
gives the texts only. Stages that cut only (Split, Whitespace, ...) leave texts as they are.

Splitting follows Hugging Face's rules: a stage finds its delimiters (pattern matches), then a
*behavior* decides what becomes of them: "removed", "isolated" (a piece each), "merged_with_previous",
"merged_with_next", "contiguous" (runs of delimiters and runs of the rest); `invert` swaps the roles
of delimiters and the rest. Empty pieces are dropped.
"""

from __future__ import annotations

from ..stage import Stage

Piece = tuple  # (text, start, end)

BEHAVIORS = {"Removed": "removed", "Isolated": "isolated", "MergedWithPrevious": "merged_with_previous",
             "MergedWithNext": "merged_with_next", "Contiguous": "contiguous"}
BEHAVIOR_NAMES = {v: k for k, v in BEHAVIORS.items()}


class PreTokenizer(Stage):
    """Base: pieces(text, at_start) -> [(text, start, end)]; split(text) -> [text]."""

    def pieces(self, text: str, at_start: bool = True) -> list[Piece]:
        """The pieces of text; `at_start` says whether text begins the input (Metaspace's
        prepend_scheme="first" prepends only there)."""
        return self.pieces_of([(text, 0, len(text))], at_start)

    def pieces_of(self, pieces: list[Piece], at_start: bool = True) -> list[Piece]:
        out = []
        for text, start, end in pieces:
            shift = len(text) - (end - start)  # characters a previous stage put before the text
            for t, s, e in self.split_one(text, at_start and start == 0):
                out.append((t, _clamp(start + s - shift, start, end), _clamp(start + e - shift, start, end)))
        return out

    def split_one(self, text: str, at_start: bool) -> list[Piece]:  # pragma: no cover - subclasses define it
        raise NotImplementedError

    def split(self, text: str) -> list[str]:
        return [t for t, _, _ in self.pieces(text)]

    def split_reference(self, text: str) -> list[str]:
        """split through the readable definition (the oracle of native splitters)."""
        return self.split(text)

    def __call__(self, text: str) -> list[str]:
        return self.split(text)

    # The native word splitter's number (pre_tokenizers/words.py), if one runs this stage.
    native: int | None = None


def _clamp(x: int, lo: int, hi: int) -> int:
    return lo if x < lo else hi if x > hi else x


def apply_behavior(text: str, spans: list[tuple[int, int]], behavior: str, invert: bool = False) -> list[Piece]:
    """Hugging Face's split: delimiters at `spans` (sorted, disjoint), then `behavior`."""
    segments: list[tuple[int, int, bool]] = []
    prev = 0
    for s, e in spans:
        if prev != s:
            segments.append((prev, s, False))
        segments.append((s, e, True))
        prev = e
    if prev != len(text):
        segments.append((prev, len(text), False))
    if invert:
        segments = [(s, e, not m) for s, e, m in segments]
    if behavior == "removed":
        kept = [(s, e) for s, e, m in segments if not m]
    elif behavior == "isolated":
        kept = [(s, e) for s, e, _ in segments]
    elif behavior == "merged_with_previous":
        kept, previous_match = [], False
        for s, e, m in segments:
            if m and not previous_match and kept:
                kept[-1] = (kept[-1][0], e)
            else:
                kept.append((s, e))
            previous_match = m
    elif behavior == "merged_with_next":
        kept, previous_match = [], False
        for s, e, m in reversed(segments):
            if m and not previous_match and kept:
                kept[-1] = (s, kept[-1][1])
            else:
                kept.append((s, e))
            previous_match = m
        kept.reverse()
    elif behavior == "contiguous":
        kept, previous_match = [], None
        for s, e, m in segments:
            if kept and m == previous_match:
                kept[-1] = (kept[-1][0], e)
            else:
                kept.append((s, e))
            previous_match = m
    else:
        raise ValueError(f"unknown split behavior {behavior!r}; one of {', '.join(BEHAVIOR_NAMES)}")
    return [(text[s:e], s, e) for s, e in kept if e > s]


def behavior_of(value, where: str) -> str:
    """A behavior from HF's name ("Isolated") or tokenforge's ("isolated")."""
    if value in BEHAVIORS:
        return BEHAVIORS[value]
    if value in BEHAVIOR_NAMES:
        return value
    from ..stage import StageError

    raise StageError(f"{where}: unknown behavior {value!r} (one of {', '.join(BEHAVIORS)})")
