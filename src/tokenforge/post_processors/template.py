"""Post-processors: special tokens around the ids of a text (or a pair of texts).

    >>> bos_eos()           # <bos> text <eos>  (GPT-style language models)
    Template(prefix=['<bos>'], suffix=['<eos>'])
    >>> cls_sep()           # [CLS] text [SEP]  (BERT)
    Template(prefix=['[CLS]'], suffix=['[SEP]'])

TemplateProcessing is Hugging Face's general form ("[CLS] $A [SEP]", "$A:0 [SEP]:0 $B:1 [SEP]:1");
BertProcessing and RobertaProcessing are its two fixed cases; ByteLevel changes offsets only (ids
pass through). A post-processor is bound to the vocabulary (bind) before use: a template token
missing from it is a ValueError. Type ids are kept in the description but tokenforge returns ids
only.
"""

from __future__ import annotations

from ..stage import Stage


class PostProcessor(Stage):
    def bind(self, token_to_id) -> "PostProcessor":
        return self

    def process(self, ids: list[int], pair: list[int] | None = None) -> list[int]:
        return ids if pair is None else ids + pair

    def num_added(self, pair: bool = False) -> int:
        return len(self.process([], [] if pair else None))


def _parse_template(items, where: str) -> list[tuple[str, str, int]]:
    """HF's template: a str ("[CLS] $A [SEP]") or a list of {"SpecialToken"/"Sequence": {"id", "type_id"}};
    -> [("token" | "seq", name, type_id)]."""
    out = []
    if isinstance(items, str):
        items = items.split()
    for n, item in enumerate(items or []):
        if isinstance(item, str):
            name, _, type_id = item.partition(":")
            type_id = int(type_id) if type_id.isdigit() else 0
            if name in ("$A", "$B", "$"):
                out.append(("seq", "A" if name in ("$A", "$") else "B", type_id))
            elif name.startswith("$") and name[1:].isdigit():
                out.append(("seq", "A", int(name[1:])))
            else:
                out.append(("token", name, type_id))
        elif isinstance(item, dict) and len(item) == 1 and "SpecialToken" in item and isinstance(item["SpecialToken"], dict):
            out.append(("token", item["SpecialToken"].get("id"), item["SpecialToken"].get("type_id", 0)))
        elif isinstance(item, dict) and len(item) == 1 and "Sequence" in item and isinstance(item["Sequence"], dict):
            seq = item["Sequence"].get("id")
            if seq not in ("A", "B"):
                raise ValueError(f"{where}[{n}]: the sequence id must be 'A' or 'B', got {seq!r}")
            out.append(("seq", seq, item["Sequence"].get("type_id", 0)))
        else:
            raise ValueError(f"{where}[{n}]: expected a SpecialToken or a Sequence, got {item!r:.80}")
    return out


class TemplateProcessing(PostProcessor):
    kind = "TemplateProcessing"

    def __init__(self, single="$A", pair=None, special_tokens=None):
        self.single = _parse_template(single, "single")
        self.pair = _parse_template(pair, "pair") if pair is not None else None
        # name -> list of ids (HF: {"id": name, "ids": [...], "tokens": [...]}); filled by bind if absent
        self.special_tokens: dict[str, dict] = {}
        if isinstance(special_tokens, dict):
            for name, spec in special_tokens.items():
                if not isinstance(spec, dict) or not isinstance(spec.get("ids"), list):
                    raise ValueError(f"special_tokens[{name!r}]: expected {{'id', 'ids', 'tokens'}}")
                self.special_tokens[name] = {"id": name, "ids": list(spec["ids"]), "tokens": list(spec.get("tokens") or [])}
        elif special_tokens is not None:  # [(token, id), ...] as in HF's Python API
            for name, i in special_tokens:
                self.special_tokens[name] = {"id": name, "ids": [i], "tokens": [name]}
        for template in (self.single, self.pair or []):
            for kind, name, _ in template:
                if kind == "token" and self.special_tokens and name not in self.special_tokens:
                    raise ValueError(f"the template's token {name!r} is not in special_tokens")
        self._single_ids = None

    def bind(self, token_to_id):
        for template in (self.single, self.pair or []):
            for kind, name, _ in template:
                if kind == "token" and name not in self.special_tokens:
                    i = token_to_id(name)
                    if i is None:
                        raise ValueError(f"the post-processor's token {name!r} is not in the vocabulary")
                    self.special_tokens[name] = {"id": name, "ids": [i], "tokens": [name]}
        return self

    def _fill(self, template, a, b) -> list[int]:
        out: list[int] = []
        for kind, name, _ in template:
            if kind == "seq":
                out += a if name == "A" else (b or [])
            else:
                spec = self.special_tokens.get(name)
                if spec is None:
                    raise ValueError(f"the post-processor's token {name!r} is not bound to an id")
                out += spec["ids"]
        return out

    def process(self, ids, pair=None):
        if pair is None:
            return self._fill(self.single, ids, None)
        if self.pair is None:
            raise ValueError("this template has no pair form")
        return self._fill(self.pair, ids, pair)

    def __eq__(self, other) -> bool:  # a Template equals the TemplateProcessing it is written as
        return isinstance(other, TemplateProcessing) and type(self).kind == type(other).kind and self.to_dict() == other.to_dict()

    __hash__ = Stage.__hash__

    @staticmethod
    def _json(template):
        return [{"SpecialToken": {"id": n, "type_id": t}} if k == "token" else {"Sequence": {"id": n, "type_id": t}}
                for k, n, t in template]

    def to_dict(self) -> dict:
        pair = self.pair
        if pair is None:  # HF requires a pair template: the single one, then B likewise
            pair = self.single + [(k, "B" if k == "seq" else n, 1) for k, n, _ in self.single]
        return {"type": self.kind, "single": self._json(self.single), "pair": self._json(pair),
                "special_tokens": {n: dict(s) for n, s in self.special_tokens.items()}}


class Template(TemplateProcessing):
    """Fixed special tokens before and after the ids of a text: prefix $A suffix."""

    def __init__(self, prefix=(), suffix=()):
        self.prefix, self.suffix = [str(t) for t in prefix], [str(t) for t in suffix]
        super().__init__([*self.prefix, "$A", *self.suffix],
                         [*self.prefix, "$A", *self.suffix, "$B:1", *(f"{t}:1" for t in self.suffix)])

    def bind_ids(self, token_to_id) -> tuple[list[int], list[int]]:
        """(prefix ids, suffix ids)."""
        self.bind(token_to_id)
        return ([i for t in self.prefix for i in self.special_tokens[t]["ids"]],
                [i for t in self.suffix for i in self.special_tokens[t]["ids"]])

    @property
    def num_added_tokens(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def __repr__(self) -> str:
        return f"Template(prefix={self.prefix!r}, suffix={self.suffix!r})"


class BertProcessing(TemplateProcessing):
    """[CLS] $A [SEP] (pair: [CLS] $A [SEP] $B [SEP])."""

    kind = "BertProcessing"

    def __init__(self, sep=("[SEP]", None), cls=("[CLS]", None)):
        self.sep, self.cls = tuple(sep), tuple(cls)
        specials = {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in (self.cls, self.sep) if i is not None}
        super().__init__([self.cls[0], "$A", self.sep[0]], [self.cls[0], "$A", self.sep[0], "$B:1", f"{self.sep[0]}:1"],
                         specials or None)

    def to_dict(self) -> dict:
        return {"type": self.kind, "sep": [self.sep[0], self.special_tokens[self.sep[0]]["ids"][0]],
                "cls": [self.cls[0], self.special_tokens[self.cls[0]]["ids"][0]]}


class RobertaProcessing(TemplateProcessing):
    """<s> $A </s> (pair: <s> $A </s> </s> $B </s>); trim_offsets/add_prefix_space change offsets only."""

    kind = "RobertaProcessing"

    def __init__(self, sep=("</s>", None), cls=("<s>", None), trim_offsets: bool = True, add_prefix_space: bool = True):
        self.sep, self.cls = tuple(sep), tuple(cls)
        self.trim_offsets, self.add_prefix_space = bool(trim_offsets), bool(add_prefix_space)
        specials = {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in (self.cls, self.sep) if i is not None}
        super().__init__([self.cls[0], "$A", self.sep[0]], [self.cls[0], "$A", self.sep[0], self.sep[0], "$B:1", f"{self.sep[0]}:1"],
                         specials or None)

    def to_dict(self) -> dict:
        return {"type": self.kind, "sep": [self.sep[0], self.special_tokens[self.sep[0]]["ids"][0]],
                "cls": [self.cls[0], self.special_tokens[self.cls[0]]["ids"][0]],
                "trim_offsets": self.trim_offsets, "add_prefix_space": self.add_prefix_space}


class ByteLevel(PostProcessor):
    """Hugging Face's ByteLevel post-processor: it trims offsets; the ids pass through."""

    kind = "ByteLevel"

    def __init__(self, add_prefix_space: bool = True, trim_offsets: bool = True, use_regex: bool = True):
        self.add_prefix_space, self.trim_offsets, self.use_regex = bool(add_prefix_space), bool(trim_offsets), bool(use_regex)

    def to_dict(self) -> dict:
        return {"type": self.kind, "add_prefix_space": self.add_prefix_space, "trim_offsets": self.trim_offsets,
                "use_regex": self.use_regex}


class Sequence(PostProcessor):
    kind = "Sequence"

    def __init__(self, processors):
        self.processors = list(processors)

    def bind(self, token_to_id):
        for p in self.processors:
            p.bind(token_to_id)
        return self

    def process(self, ids, pair=None):
        for p in self.processors:
            if pair is None:
                ids = p.process(ids)
            else:
                ids, pair = p.process(ids, pair), None
        return ids if pair is None else ids + pair

    def to_dict(self) -> dict:
        return {"type": self.kind, "processors": [p.to_dict() for p in self.processors]}


def bos_eos(bos: str = "<bos>", eos: str = "<eos>") -> Template:
    return Template([bos], [eos])


def cls_sep(cls: str = "[CLS]", sep: str = "[SEP]") -> Template:
    return Template([cls], [sep])
