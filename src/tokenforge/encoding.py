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


MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": "o200k_base",
    "o3-": "o200k_base",
    "o4-mini-": "o200k_base",
    "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base",
    "gpt-4.1-": "o200k_base",
    "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base",
    "gpt-4-": "cl100k_base",
    "gpt-3.5-turbo-": "cl100k_base",
    "gpt-35-turbo-": "cl100k_base",
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": "o200k_base",
    "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base",
    "ft:babbage-002": "cl100k_base",
}

MODEL_TO_ENCODING: dict[str, str] = {
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-3.5": "cl100k_base",
    "gpt-35-turbo": "cl100k_base",
    "davinci-002": "cl100k_base",
    "babbage-002": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
    "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    "text-davinci-003": "p50k_base",
    "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base",
    "text-curie-001": "r50k_base",
    "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base",
    "davinci": "r50k_base",
    "curie": "r50k_base",
    "babbage": "r50k_base",
    "ada": "r50k_base",
    "code-davinci-002": "p50k_base",
    "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base",
    "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base",
    "cushman-codex": "p50k_base",
    "text-davinci-edit-001": "p50k_edit",
    "code-davinci-edit-001": "p50k_edit",
    "text-similarity-davinci-001": "r50k_base",
    "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base",
    "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base",
    "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base",
    "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base",
    "code-search-ada-code-001": "r50k_base",
    "gpt2": "gpt2",
    "gpt-2": "gpt2",
}


def encoding_name_for_model(model_name: str) -> str:
    """The encoding name a model uses; KeyError naming the model if it is unknown."""
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. "
        "Please use `tokenforge.get_encoding` to explicitly get the tokeniser you expect."
    )
