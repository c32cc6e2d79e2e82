"""The named pretrained encodings (tiktoken's), built once per process and shared.

The URLs and sha256 digests are the official ones, so files cached by tiktoken are accepted.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Callable

from . import patterns
from .encoding import Encoding, encoding_name_for_model
from .vocab_cache import load_data_gym, load_tiktoken_bpe

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

_BASE = "https://openaipublic.blob.core.windows.net/"
_FILES = {
    "r50k_base": ("encodings/r50k_base.tiktoken", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
    "p50k_base": ("encodings/p50k_base.tiktoken", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "cl100k_base": ("encodings/cl100k_base.tiktoken", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    "o200k_base": ("encodings/o200k_base.tiktoken", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
}


def _ranks(file: str) -> dict[bytes, int]:
    path, sha = _FILES[file]
    return load_tiktoken_bpe(_BASE + path, sha)


def _gpt2() -> dict:
    ranks = load_data_gym(
        _BASE + "gpt-2/encodings/main/vocab.bpe",
        _BASE + "gpt-2/encodings/main/encoder.json",
        "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
        "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    )
    return dict(pat_str=patterns.GPT2, mergeable_ranks=ranks, special_tokens={ENDOFTEXT: 50256}, explicit_n_vocab=50257)


def _r50k_base() -> dict:
    return dict(pat_str=patterns.GPT2, mergeable_ranks=_ranks("r50k_base"), special_tokens={ENDOFTEXT: 50256}, explicit_n_vocab=50257)


def _p50k_base() -> dict:
    return dict(pat_str=patterns.GPT2, mergeable_ranks=_ranks("p50k_base"), special_tokens={ENDOFTEXT: 50256}, explicit_n_vocab=50281)


def _p50k_edit() -> dict:
    special = {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283}
    return dict(pat_str=patterns.GPT2, mergeable_ranks=_ranks("p50k_base"), special_tokens=special)


def _cl100k_base() -> dict:
    special = {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260, ENDOFPROMPT: 100276}
    return dict(pat_str=patterns.CL100K, mergeable_ranks=_ranks("cl100k_base"), special_tokens=special)


def _o200k_base() -> dict:
    return dict(pat_str=patterns.O200K, mergeable_ranks=_ranks("o200k_base"), special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018})


def _o200k_harmony() -> dict:
    base = _o200k_base()
    special = {
        **base["special_tokens"],
        "<|startoftext|>": 199998,
        "<|return|>": 200002,
        "<|constrain|>": 200003,
        "<|channel|>": 200005,
        "<|start|>": 200006,
        "<|end|>": 200007,
        "<|message|>": 200008,
        "<|call|>": 200012,
    }
    for i in (200000, 200001, 200004, 200009, 200010, 200011, *range(200013, 201088)):
        special[f"<|reserved_{i}|>"] = i
    return dict(pat_str=base["pat_str"], mergeable_ranks=base["mergeable_ranks"], special_tokens=special)


ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict]] = {
    "gpt2": _gpt2,
    "r50k_base": _r50k_base,
    "p50k_base": _p50k_base,
    "p50k_edit": _p50k_edit,
    "cl100k_base": _cl100k_base,
    "o200k_base": _o200k_base,
    "o200k_harmony": _o200k_harmony,
}

_encodings: dict = {}
_lock = threading.RLock()


def _after_fork_in_child() -> None:
    """A fork while another thread was loading an encoding copies the lock held: the child gets
    a fresh one (the half-loaded encoding was never published, so nothing else is stale)."""
    global _lock
    _lock = threading.RLock()


def _release_at_exit() -> None:
    """Drops the registered encodings before the interpreter tears down the native module, so
    their native encoders are freed in order rather than reported as leaked at exit."""
    _encodings.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_release_at_exit)


def list_encoding_names() -> list[str]:
    """The names get_encoding accepts."""
    return list(ENCODING_CONSTRUCTORS)


def get_encoding(encoding_name: str):
    """The named encoding (loaded once per process), e.g. get_encoding("cl100k_base")."""
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = _encodings.get(encoding_name)
    if enc is not None:
        return enc
    with _lock:
        enc = _encodings.get(encoding_name)
        if enc is None:
            if encoding_name not in ENCODING_CONSTRUCTORS:
                raise ValueError(
                    f"Unknown encoding {encoding_name!r}. Plugins found: tokenforge.registry. "
                    f"Available encodings: {', '.join(list_encoding_names())}"
                )
            enc = Encoding(encoding_name, **ENCODING_CONSTRUCTORS[encoding_name]())
            enc._registered = True
            enc._by_name = (get_encoding, (encoding_name,))
            _encodings[encoding_name] = enc
    return enc


def _load_file(path):
    from .io import load  # an application-level helper: the CLI's and the server's way in

    return load(path)


def get_tokenizer(spec):
    """A tokenizer from a pretrained encoding name or a saved tokenizer file (what the CLI takes)."""
    import os

    from .tokenizer import Tokenizer

    if isinstance(spec, Tokenizer):
        return spec
    if spec in ENCODING_CONSTRUCTORS:
        return get_encoding(spec)
    if os.path.exists(spec):
        return _load_file(spec)
    raise ValueError(f"{spec!r} is neither a pretrained encoding ({', '.join(list_encoding_names())}) nor a file")


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding a model uses, e.g. encoding_for_model("gpt-4o")."""
    return get_encoding(encoding_name_for_model(model_name))
