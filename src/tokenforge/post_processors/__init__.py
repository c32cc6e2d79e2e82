"""Post-processors: special tokens around encoded texts (template.py), and padding (padding.py).

    >>> cls_sep()           # [CLS] text [SEP]  (BERT)
    Template(prefix=['[CLS]'], suffix=['[SEP]'])
    >>> t = TemplateProcessing("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1", [("[CLS]", 1), ("[SEP]", 2)])
    >>> t.process([7, 8]), t.process([7], [9])
    ([1, 7, 8, 2], [1, 7, 2, 9, 2])
"""

from __future__ import annotations

from ..stage import REQUIRED, StageError, read_fields
from .padding import BatchEncoding, pad_batch
from .template import (BertProcessing, ByteLevel, PostProcessor, RobertaProcessing, Sequence, Template, TemplateProcessing,
                       bos_eos, cls_sep)

__all__ = ["BatchEncoding", "BertProcessing", "ByteLevel", "PostProcessor", "RobertaProcessing", "Sequence", "Template",
           "TemplateProcessing", "bos_eos", "cls_sep", "from_dict", "pad_batch"]


def _token_id(value, where):
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int) and not isinstance(value[1], bool)):
        raise StageError(f"{where}: expected [token, id], got {value!r:.60}")
    return tuple(value)


def from_dict(d, where: str = "post_processor") -> PostProcessor | None:
    """Rebuilds a post-processor from its description (tokenforge's or tokenizer.json's)."""
    if d is None:
        return None
    kind = d.get("type") if isinstance(d, dict) else None
    try:
        if kind == "Template":  # tokenforge's older shape
            f = read_fields(d, where, {"prefix": ((), list), "suffix": ((), list)})
            return Template(f["prefix"], f["suffix"])
        if kind == "TemplateProcessing":
            f = read_fields(d, where, {"single": (REQUIRED, (list, str)), "pair": (None, (list, str, type(None))),
                                       "special_tokens": ({}, dict)})
            for name, spec in f["special_tokens"].items():
                ids = spec.get("ids") if isinstance(spec, dict) else None
                if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
                    raise StageError(f"{where}.special_tokens[{name!r}].ids: expected a list of ids")
            return TemplateProcessing(f["single"], f["pair"], f["special_tokens"])
        if kind == "BertProcessing":
            f = read_fields(d, where, {"sep": (REQUIRED, list), "cls": (REQUIRED, list)})
            return BertProcessing(_token_id(f["sep"], f"{where}.sep"), _token_id(f["cls"], f"{where}.cls"))
        if kind == "RobertaProcessing":
            f = read_fields(d, where, {"sep": (REQUIRED, list), "cls": (REQUIRED, list), "trim_offsets": (True, bool),
                                       "add_prefix_space": (True, bool)})
            return RobertaProcessing(_token_id(f["sep"], f"{where}.sep"), _token_id(f["cls"], f"{where}.cls"),
                                     f["trim_offsets"], f["add_prefix_space"])
        if kind == "ByteLevel":
            return ByteLevel(**read_fields(d, where, {"add_prefix_space": (True, bool), "trim_offsets": (True, bool),
                                                      "use_regex": (True, bool)}))
        if kind == "Sequence":
            f = read_fields(d, where, {"processors": (REQUIRED, list)})
            return Sequence([from_dict(p, f"{where}.processors[{i}]") for i, p in enumerate(f["processors"])])
    except StageError:
        raise
    except ValueError as e:
        raise StageError(f"{where}: {e}") from None
    raise StageError(f"{where}: post-processor {kind!r} is not supported (tokenforge has TemplateProcessing, "
                     "BertProcessing, RobertaProcessing, ByteLevel, Sequence)")
