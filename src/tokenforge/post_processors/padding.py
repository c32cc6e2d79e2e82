"""Batches padded to a rectangle, as model code expects: ids (int64, padded on the right with the
pad token) and attention_mask (int64, 1 for a real token, 0 for padding)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
