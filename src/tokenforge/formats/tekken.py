"""Mistral's tekken JSON (`tekken.json`, `tekken_240911.json`): tiktoken ranks with their split pattern,
special tokens first, read and written as mistral_common's Tekkenizer does
(mistral_common/tokens/tokenizers/tekken.py).

    {"config": {"pattern": ..., "num_vocab_tokens": 150000, "default_vocab_size": 131072,
                "default_num_special_tokens": 1000, "version": "v3"},
     "vocab": [{"rank": 0, "token_bytes": base64, "token_str": ...}, ...],
     "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": true}, ...]   (optional)}

The rules: ids 0 .. default_num_special_tokens - 1 are special tokens (the file's list, or before
v7 mistral_common's fixed list, padded with `<SPECIAL_n>`); the vocabulary is cut to its first
default_vocab_size - default_num_special_tokens entries, and each rank is shifted by the number of
special tokens to give its id. Mistral's encode never reads special tokens from text; tokenforge's
encode refuses them unless allowed (tiktoken's policy), and `encode_ordinary` is Mistral's encode.

Not kept: the "image" / "audio" sections (the text tokenizer does not use them); `is_control` (every
special token is written back as a control token). Saving writes version "v7" with the special
tokens listed, which mistral_common reads with the same ids.
"""

from __future__ import annotations

import base64
import json

from ._common import build, check_every_byte, fail, write_atomic

# mistral_common's Tekkenizer.DEPRECATED_SPECIAL_TOKENS: the special tokens of files before v7 that
# do not list them.
DEPRECATED_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)
VERSIONS_WITHOUT_LIST = ("v1", "v2", "v3", "v7")  # later versions must list their special tokens
_OPTIONS = {"name"}


def looks_like(obj) -> bool:
    config = obj.get("config") if isinstance(obj, dict) else None
    vocab = obj.get("vocab") if isinstance(obj, dict) else None
    return (isinstance(config, dict) and "pattern" in config and isinstance(vocab, list)
            and (not vocab or (isinstance(vocab[0], dict) and "token_bytes" in vocab[0])))


def _int(source, obj: dict, key: str, where: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        fail(source, f"{where}.{key}", f"expected a non-negative integer, got {v!r:.40}")
    return v


def load(path, obj: dict, **overrides):
    unknown = set(overrides) - _OPTIONS
    if unknown:
        fail(path, None, f"a tekken file says its pattern and special tokens itself; it takes only "
                         f"{', '.join(sorted(_OPTIONS))}, not {', '.join(sorted(unknown))}")
    config = obj["config"]
    pattern = config.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        fail(path, "config.pattern", "missing or not a non-empty string")
    vocab_size = _int(path, config, "default_vocab_size", "config")
    n_special = _int(path, config, "default_num_special_tokens", "config")
    inner = vocab_size - n_special
    vocab = obj["vocab"]
    if inner < 0 or inner > len(vocab):
        fail(path, "config.default_vocab_size", f"{vocab_size} does not fit {n_special} special tokens and "
                                                f"{len(vocab)} vocabulary entries")
    ranks: dict[bytes, int] = {}
    for n, entry in enumerate(vocab[:inner]):
        where = f"vocab[{n}]"
        if not isinstance(entry, dict):
            fail(path, where, "not an object")
        if entry.get("rank") != n:
            fail(path, f"{where}.rank", f"expected {n} (ranks are the entries' positions), got {entry.get('rank')!r:.40}")
        try:
            b = base64.b64decode(entry.get("token_bytes"), validate=True)
        except (TypeError, ValueError):
            fail(path, f"{where}.token_bytes", "missing or not base64")
        if not b:
            fail(path, f"{where}.token_bytes", "empty token")
        if b in ranks:
            fail(path, where, f"token {b!r} appears twice (first at rank {ranks[b] - n_special})")
        ranks[b] = n + n_special
    check_every_byte(ranks, path, "vocab")
    specials = _special_tokens(path, obj, config, n_special)
    kwargs = dict(pattern=pattern, mergeable_ranks=ranks, special_tokens=specials,
                  name=getattr(path, "stem", None) or "tekken")
    return build(path, kwargs, overrides)


def _special_tokens(path, obj: dict, config: dict, n_special: int) -> dict[str, int]:
    listed = obj.get("special_tokens")
    if listed is None:
        version = config.get("version")
        if version not in VERSIONS_WITHOUT_LIST:
            fail(path, "special_tokens", f"missing, and a {version!r} tekken file must list its special tokens")
        listed = [{"rank": i, "token_str": s} for i, s in enumerate(DEPRECATED_SPECIAL_TOKENS)]
    if not isinstance(listed, list):
        fail(path, "special_tokens", "not a list")
    if len(listed) > n_special:
        fail(path, "special_tokens", f"{len(listed)} special tokens, more than default_num_special_tokens={n_special}")
    specials: dict[str, int] = {}
    for n, entry in enumerate(listed):
        where = f"special_tokens[{n}]"
        s = entry.get("token_str") if isinstance(entry, dict) else None
        if not isinstance(s, str) or not s:
            fail(path, f"{where}.token_str", "missing or not a non-empty string")
        if entry.get("rank") != n:
            fail(path, f"{where}.rank", f"expected {n}, got {entry.get('rank')!r:.40}")
        if s in specials:
            fail(path, where, f"the special token {s!r} appears twice")
        specials[s] = n
    for i in range(len(listed), n_special):  # mistral_common's filler
        specials[f"<SPECIAL_{i}>"] = i
    return specials


def save(tok, path) -> None:
    """Writes a byte-level tokenizer whose special tokens are ids 0..k-1 and whose ranks follow them
    as a tekken file; anything else is a ValueError naming what tekken cannot say."""
    from .tiktoken_bpe import ranks_of

    try:
        ranks = ranks_of(tok)  # tiktoken's rule, no normalizer
    except ValueError as e:
        raise ValueError(f"tekken: {e}") from None
    specials = dict(tok.special_tokens)
    k = len(specials)
    if sorted(specials.values()) != list(range(k)):
        raise ValueError("tekken: the special tokens must have the ids 0..k-1 (tekken puts them first)")
    if sorted(ranks.values()) != list(range(k, k + len(ranks))):
        raise ValueError(f"tekken: the vocabulary's ids must run from {k} (after the special tokens) without gaps")
    by_id = sorted(ranks.items(), key=lambda kv: kv[1])
    obj = {
        "config": {"pattern": tok.pattern, "num_vocab_tokens": len(ranks), "default_vocab_size": k + len(ranks),
                   "default_num_special_tokens": k, "version": "v7"},
        "vocab": [{"rank": i - k, "token_bytes": base64.b64encode(b).decode("ascii"),
                   "token_str": _text_or_none(b)} for b, i in by_id],
        "special_tokens": [{"rank": i, "token_str": s, "is_control": True}
                           for s, i in sorted(specials.items(), key=lambda kv: kv[1])],
    }
    write_atomic(path, json.dumps(obj, ensure_ascii=False).encode("utf-8"))


def _text_or_none(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None  # as mistral_common writes a token that is not text
