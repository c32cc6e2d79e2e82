"""Encoding: the tiktoken-compatible face of the Tokenizer (the model-name table is in registry.py).

`tokenforge.Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)` builds a custom
encoding exactly as `tiktoken.Encoding` does, with the same checks.
"""

from __future__ import annotations

from typing import Mapping

from .tokenizer import Tokenizer


class Encoding(Tokenizer):
    """A tiktoken-style encoding: ids are ranks, the pattern is a regex or a pattern name."""

    _registered = False

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int],
        explicit_n_vocab: int | None = None,
    ):
        super().__init__(pattern=pat_str, mergeable_ranks=mergeable_ranks, special_tokens=special_tokens, name=name)
        if explicit_n_vocab is not None:
            if len(self.model.ranks) + len(self._specials) != explicit_n_vocab:
                raise ValueError(
                    f"explicit_n_vocab is {explicit_n_vocab} but there are {len(self.model.ranks)} mergeable "
                    f"and {len(self._specials)} special tokens"
                )
            if self.max_token_value != explicit_n_vocab - 1:
                raise ValueError(f"explicit_n_vocab is {explicit_n_vocab} but the largest id is {self.max_token_value}")

    # Set by the registry on the encodings it builds: (get_encoding, (name,)), so that a named
    # encoding pickles by name and workers load it from their cache.
    _by_name = None

    def __reduce__(self):
        if self._by_name is not None:
            return self._by_name
        return super().__reduce__()

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"
