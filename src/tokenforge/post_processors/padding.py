"""Truncation and padding, as Hugging Face `tokenizers` applies them around the post-processor.

    >>> Truncation(4).truncate([1, 2, 3, 4, 5, 6])
    ([1, 2, 3, 4], None)
    >>> Truncation(5).truncate([1, 2, 3, 4], [5, 6, 7, 8])      # longest first: 2 + 3
    ([1, 2], [5, 6, 7])
    >>> Padding(length=6, pad_id=0, direction="left").pad([[7, 8, 9]])
    [[0, 0, 0, 7, 8, 9]]

`Truncation` cuts the ids of a text (and of its pair) before the post-processor adds its tokens,
leaving room for them; `Padding` pads finished rows to a fixed length or to the batch's longest,
rounded up to `pad_to_multiple_of`. Both read and write tokenizer.json's "truncation" and "padding"
fields. Not kept: the overflowing windows HF computes with `stride` (tokenforge returns ids only;
`stride` is checked and written back but changes no id).

`pad_batch` is the numpy form (`encode_batch(..., padding=True)`): ids and attention_mask arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from ..stage import REQUIRED, StageError, read_fields

STRATEGIES = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond"}
DIRECTIONS = {"left": "Left", "right": "Right"}


def _direction(value, where: str) -> str:
    name = value.lower() if isinstance(value, str) else value
    if name not in DIRECTIONS:
        raise ValueError(f"{where}: unknown direction {value!r}; use 'left' or 'right'")
    return name


def _count(value, where: str, *, optional: bool = False) -> int | None:
    if optional and value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}: expected a non-negative int, got {value!r:.60}")
    return value


def _cut(ids: list[int], length: int, direction: str, stride: int) -> list[int]:
    if len(ids) <= length:
        return ids
    if 0 < length <= stride:  # HF panics here (its overflowing windows would not advance)
        raise ValueError(f"truncation stride {stride} must be less than the {length} ids a sequence is cut to "
                         "(max_length less the post-processor's tokens, shared by a pair)")
    return ids[:length] if direction == "right" else ids[len(ids) - length:]


@dataclass(frozen=True)
class Truncation:
    """max_length counts the post-processor's tokens too (when they are added); strategy
    longest_first / only_first / only_second, direction right (keep the start) or left."""

    max_length: int
    stride: int = 0
    strategy: str = "longest_first"
    direction: str = "right"

    def __post_init__(self):
        _count(self.max_length, "truncation max_length")
        _count(self.stride, "truncation stride")
        strategy = self.strategy.lower() if isinstance(self.strategy, str) else self.strategy
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown truncation strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}")
        object.__setattr__(self, "strategy", strategy)
        object.__setattr__(self, "direction", _direction(self.direction, "truncation"))

    def check(self, n_added: int) -> None:
        """HF's check when truncation is enabled: the stride must fit in the room left for text."""
        room = self.max_length - n_added
        if room >= 0 and self.stride > room:
            raise ValueError(f"truncation stride {self.stride} is greater than the room left for text, {room} "
                             f"(= max_length {self.max_length} - {n_added} tokens the post-processor adds)")

    def truncate(self, ids: list[int], pair: list[int] | None = None, n_added: int = 0):
        """(ids, pair) cut to max_length - n_added together. As in HF, a max_length smaller than
        n_added leaves the ids whole (HF's room wraps around to a huge number)."""
        max_length = self.max_length - n_added if n_added else self.max_length
        if max_length < 0:
            return ids, pair
        d = self.direction
        if max_length == 0:
            return [], (None if pair is None else [])
        total = len(ids) + (len(pair) if pair is not None else 0)
        if total <= max_length:
            return ids, pair
        to_remove = total - max_length
        if self.strategy == "longest_first":
            if pair is None:
                return _cut(ids, max_length, d, self.stride), None
            # The shorter keeps its length if the longer can take the rest; else both share
            # max_length (the second gets the odd one).
            n1, n2 = len(ids), len(pair)
            swap = n1 > n2
            if swap:
                n1, n2 = n2, n1
            n2 = n1 if n1 > max_length else max(n1, max_length - n1)
            if n1 + n2 > max_length:
                n1 = max_length // 2
                n2 = n1 + max_length % 2
            if swap:
                n1, n2 = n2, n1
            return _cut(ids, n1, d, self.stride), _cut(pair, n2, d, self.stride)
        if self.strategy == "only_second" and pair is None:
            raise ValueError("truncation strategy only_second needs a pair of texts")
        target = ids if self.strategy == "only_first" else pair
        if len(target) <= to_remove:
            raise ValueError(f"truncation ({self.strategy}): the sequence to truncate has {len(target)} ids, "
                             f"too few to remove {to_remove} and fit max_length {self.max_length}")
        cut = _cut(target, len(target) - to_remove, d, self.stride)
        return (cut, pair) if self.strategy == "only_first" else (ids, cut)

    def to_python(self) -> dict:
        """As `tokenizers.Tokenizer.truncation` gives it."""
        return {"max_length": self.max_length, "stride": self.stride, "strategy": self.strategy,
                "direction": self.direction}

    def to_dict(self) -> dict:
        """As tokenizer.json writes it."""
        return {"direction": DIRECTIONS[self.direction], "max_length": self.max_length,
                "strategy": STRATEGIES[self.strategy], "stride": self.stride}

    @classmethod
    def from_dict(cls, d, where: str = "truncation") -> "Truncation | None":
        if d is None:
            return None
        # required as tokenizers requires them (only direction has a default)
        f = read_fields(d, where, {"direction": ("Right", str), "max_length": (REQUIRED, int),
                                   "strategy": (REQUIRED, str), "stride": (REQUIRED, int)}, kind="truncation")
        by_json = {v: k for k, v in STRATEGIES.items()}
        if f["strategy"] not in by_json:
            raise StageError(f"{where}.strategy: expected one of {', '.join(by_json)}, got {f['strategy']!r}")
        if f["direction"] not in ("Left", "Right"):
            raise StageError(f"{where}.direction: expected Left or Right, got {f['direction']!r}")
        try:
            return cls(f["max_length"], f["stride"], by_json[f["strategy"]], f["direction"])
        except ValueError as e:
            raise StageError(f"{where}: {e}") from None


@dataclass(frozen=True)
class Padding:
    """Rows padded with pad_id to `length` (None: the longest row of the batch), rounded up to a
    multiple of pad_to_multiple_of; direction right (pads after) or left. A row longer than the
    target is left as it is (padding never cuts)."""

    length: int | None = None
    pad_to_multiple_of: int | None = None
    pad_id: int = 0
    pad_token: str = "[PAD]"
    pad_type_id: int = 0
    direction: str = "right"

    def __post_init__(self):
        _count(self.length, "padding length", optional=True)
        _count(self.pad_to_multiple_of, "padding pad_to_multiple_of", optional=True)
        _count(self.pad_id, "padding pad_id")
        _count(self.pad_type_id, "padding pad_type_id")
        if not isinstance(self.pad_token, str):
            raise TypeError(f"padding pad_token must be a str, got {self.pad_token!r:.60}")
        object.__setattr__(self, "direction", _direction(self.direction, "padding"))

    def target(self, rows: list[list[int]]) -> int:
        width = self.length if self.length is not None else max((len(r) for r in rows), default=0)
        m = self.pad_to_multiple_of
        if m and width % m:
            width += m - width % m
        return width

    def pad(self, rows: list[list[int]]) -> list[list[int]]:
        if not rows:
            return rows
        width = self.target(rows)
        fill = [self.pad_id]
        if self.direction == "right":
            return [r + fill * (width - len(r)) if len(r) < width else r for r in rows]
        return [fill * (width - len(r)) + r if len(r) < width else r for r in rows]

    def to_python(self) -> dict:
        """As `tokenizers.Tokenizer.padding` gives it."""
        return {"length": self.length, "pad_to_multiple_of": self.pad_to_multiple_of, "pad_id": self.pad_id,
                "pad_token": self.pad_token, "pad_type_id": self.pad_type_id, "direction": self.direction}

    def to_dict(self) -> dict:
        """As tokenizer.json writes it."""
        return {"strategy": "BatchLongest" if self.length is None else {"Fixed": self.length},
                "direction": DIRECTIONS[self.direction], "pad_to_multiple_of": self.pad_to_multiple_of,
                "pad_id": self.pad_id, "pad_type_id": self.pad_type_id, "pad_token": self.pad_token}

    @classmethod
    def from_dict(cls, d, where: str = "padding") -> "Padding | None":
        if d is None:
            return None
        f = read_fields(d, where, {"strategy": (REQUIRED, (str, dict)), "direction": (REQUIRED, str),
                                   "pad_to_multiple_of": (None, (int, type(None))), "pad_id": (REQUIRED, int),
                                   "pad_type_id": (REQUIRED, int), "pad_token": (REQUIRED, str)}, kind="padding")
        strategy = f["strategy"]
        if strategy == "BatchLongest":
            length = None
        elif isinstance(strategy, dict) and list(strategy) == ["Fixed"] and isinstance(strategy["Fixed"], int) \
                and not isinstance(strategy["Fixed"], bool):
            length = strategy["Fixed"]
        else:
            raise StageError(f"{where}.strategy: expected \"BatchLongest\" or {{\"Fixed\": n}}, got {strategy!r:.60}")
        if f["direction"] not in ("Left", "Right"):
            raise StageError(f"{where}.direction: expected Left or Right, got {f['direction']!r}")
        try:
            return cls(length, f["pad_to_multiple_of"], f["pad_id"], f["pad_token"], f["pad_type_id"], f["direction"])
        except (TypeError, ValueError) as e:
            raise StageError(f"{where}: {e}") from None


@dataclass
class BatchEncoding:
    """A padded batch: ids and attention_mask, both numpy int64 arrays of shape (batch, length)."""

    ids: np.ndarray
    attention_mask: np.ndarray

    def __iter__(self):  # ids, mask = tok.encode_batch(..., padding=True)
        return iter((self.ids, self.attention_mask))


def pad_batch(rows: list[list[int]], *, pad_id: int | None, padding, max_length: int | None,
              direction: str = "right") -> BatchEncoding:
    """The numpy form: padding=True/"longest" pads to the longest row, "max_length" to max_length;
    False requires rows of one length."""
    if padding == "max_length":
        if max_length is None:
            raise ValueError('padding="max_length" needs max_length')
        width = max_length
    elif padding in (True, "longest"):
        width = max((len(r) for r in rows), default=0)
    elif padding in (False, None, "do_not_pad"):
        lengths = {len(r) for r in rows}
        if len(lengths) > 1:
            raise ValueError("the rows have different lengths: pass padding=True (or truncate to one length)")
        width = lengths.pop() if lengths else 0
    else:
        raise ValueError(f"padding must be True, False, 'longest' or 'max_length', got {padding!r}")
    width = max([width, *(len(r) for r in rows)])
    if pad_id is None and any(len(r) < width for r in rows):
        raise ValueError("padding needs a pad token in the vocabulary (pad_token=...)")
    import numpy as np

    ids = np.full((len(rows), width), pad_id if pad_id is not None else 0, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for k, r in enumerate(rows):
        if direction == "right":
            ids[k, : len(r)] = r
            mask[k, : len(r)] = 1
        elif r:
            ids[k, width - len(r):] = r
            mask[k, width - len(r):] = 1
    return BatchEncoding(ids, mask)
