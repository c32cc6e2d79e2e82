"""The decoder stage: token texts -> text, Hugging Face's way (each decoder maps the list of token
texts to a new list; the Tokenizer joins the last one)."""

from __future__ import annotations

from ..stage import Stage


class Decoder(Stage):
    def decode_chain(self, tokens: list[str]) -> list[str]:  # pragma: no cover - subclasses define it
        raise NotImplementedError

    def decode(self, tokens: list[str]) -> str:
        return "".join(self.decode_chain(list(tokens)))


class Sequence(Decoder):
    kind = "Sequence"

    def __init__(self, decoders):
        self.decoders = list(decoders)

    def decode_chain(self, tokens):
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens

    def to_dict(self) -> dict:
        return {"type": self.kind, "decoders": [d.to_dict() for d in self.decoders]}


class ModelDecoder(Decoder):
    """A model's own rule (models.CharBPE's word markers, ...): model.decode_tokens(tokens)."""

    kind = "Model"

    def __init__(self, model):
        self.model = model

    def decode_chain(self, tokens):
        return [self.model.decode_tokens(list(tokens))]

    def __eq__(self, other) -> bool:
        return isinstance(other, ModelDecoder) and other.model is self.model

    __hash__ = Decoder.__hash__
