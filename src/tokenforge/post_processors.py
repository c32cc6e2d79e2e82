"""Post-processing: special tokens around each encoded text, and batches padded to a rectangle.

    >>> bos_eos()           # <bos> text <eos>  (GPT-style language models)
    Template(prefix=['<bos>'], suffix=['<eos>'])
    >>> cls_sep()           # [CLS] text [SEP]  (BERT)
    Template(prefix=['[CLS]'], suffix=['[SEP]'])

Padding and truncation (PipelineTokenizer.encode_batch) give numpy arrays, as model code expects:
ids (int64, padded on the right with the pad token) and attention_mask (int64, 1 for a real token,
0 for padding). Truncation keeps the template's tokens and cuts the text's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


class Template:
    """Adds fixed special tokens before and after the ids of a text."""

    def __init__(self, prefix: Sequence[str] = (), suffix: Sequence[str] = ()):
        self.prefix, self.suffix = [str(t) for t in prefix], [str(t) for t in suffix]

    def bind(self, token_to_id) -> tuple[list[int], list[int]]:
        ids = []
        for part in (self.prefix, self.suffix):
            out = []
            for t in part:
                i = token_to_id(t)
                if i is None:
                    raise ValueError(f"the post-processor's token {t!r} is not in the vocabulary")
                out.append(i)
            ids.append(out)
        return ids[0], ids[1]

    @property
    def num_added(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def to_dict(self) -> dict:
        return {"type": "Template", "prefix": self.prefix, "suffix": self.suffix}

    def __eq__(self, other) -> bool:
        return isinstance(other, Template) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Template(prefix={self.prefix!r}, suffix={self.suffix!r})"


def bos_eos(bos: str = "<bos>", eos: str = "<eos>") -> Template:
    return Template([bos], [eos])


def cls_sep(cls: str = "[CLS]", sep: str = "[SEP]") -> Template:
    return Template([cls], [sep])


def from_dict(d: dict | None) -> Template | None:
    if d is None:
        return None
    if not isinstance(d, dict) or d.get("type") != "Template":
        raise ValueError(f"unknown post-processor {d!r:.80}")
    return Template(d.get("prefix", ()), d.get("suffix", ()))


@dataclass
class BatchEncoding:
    """A padded batch: ids and attention_mask, both numpy int64 arrays of shape (batch, length)."""

    ids: np.ndarray
    attention_mask: np.ndarray

    def __iter__(self):  # ids, mask = tok.encode_batch(..., padding=True)
        return iter((self.ids, self.attention_mask))


def pad_batch(rows: list[list[int]], *, pad_id: int | None, padding, max_length: int | None) -> BatchEncoding:
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
    if pad_id is None and any(len(r) < width for r in rows):
        raise ValueError("padding needs a pad token in the vocabulary (pad_token=...)")
    ids = np.full((len(rows), width), pad_id if pad_id is not None else 0, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for k, r in enumerate(rows):
        r = r[:width]
        ids[k, : len(r)] = r
        mask[k, : len(r)] = 1
    return BatchEncoding(ids, mask)
