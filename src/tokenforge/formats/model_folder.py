"""A model folder as `transformers` lays it out (what `save_pretrained` writes and `from_pretrained`
reads): the tokenizer's own file plus tokenizer_config.json, special_tokens_map.json, added_tokens.json.

The tokenizer is read from the first of these that the folder holds, each recognised by content like
any file: `tokenizer.json`; `tekken.json`; `tokenizer.model` (a sentencepiece model, or tiktoken ranks as
Meta ships Llama 3/4); `vocab.json` + `merges.txt`; `vocab.txt`. The other files add:
- the chat template (tokenizer_config.json "chat_template", or chat_template.jinja / chat_template.json),
  kept as `tok.chat_template` (None when there is none) and written back by nothing else;
- the whole tokenizer_config.json and special_tokens_map.json, kept as `tok.folder_config`
  ({"tokenizer_config": ..., "special_tokens_map": ...}) so bos/eos/pad names are not lost;
- added tokens (added_tokens.json, tokenizer_config.json "added_tokens_decoder") for folders without a
  tokenizer.json, which lists its own: they become special tokens of a byte-level BPE vocab.json +
  merges.txt; for the other files each must already be the file's token at that id (else a
  ValueError: tokens are never dropped silently); a vocab.txt folder takes `do_lower_case` from
  tokenizer_config.json.
A tokenizer.json's truncation and padding are left out (transformers applies them only when a call
asks). Keywords go to the loader of the tokenizer's file.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._common import fail, parse_json

CANDIDATES = ("tokenizer.json", "tekken.json", "tokenizer.model", "vocab.json", "encoder.json", "vocab.txt")


def _json(path: Path):
    if not path.is_file():
        return None
    obj = parse_json(path.read_bytes(), path)
    if not isinstance(obj, dict):
        fail(path, None, f"a JSON {type(obj).__name__}, expected an object")
    return obj


def chat_template_of(folder: Path, config: dict | None):
    if config and config.get("chat_template") is not None:
        return config["chat_template"]
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    obj = _json(folder / "chat_template.json")
    return obj.get("chat_template") if obj else None


def _added_tokens(folder: Path, config: dict | None) -> dict[str, int]:
    added: dict[str, int] = {}
    decoder = (config or {}).get("added_tokens_decoder") or {}
    if not isinstance(decoder, dict):
        fail(folder / "tokenizer_config.json", "added_tokens_decoder", "expected an object id -> {content: ...}")
    for token, info in decoder.items():
        content = info.get("content") if isinstance(info, dict) else None
        if not isinstance(content, str) or not str(token).isdigit():
            fail(folder / "tokenizer_config.json", f"added_tokens_decoder[{token!r}]", "expected id -> {content: ...}")
        added[content] = int(token)
    extra = _json(folder / "added_tokens.json") or {}
    for content, i in extra.items():
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            fail(folder / "added_tokens.json", f"[{content!r}]", f"invalid id {i!r}")
        added[content] = i
    return added


def load(folder: Path, *, sniff, load_bytes, read_own=None, **overrides):
    """Called by detect.load, which passes its sniff() and load_bytes() (no import back to it)."""
    config = _json(folder / "tokenizer_config.json")
    special_map = _json(folder / "special_tokens_map.json")
    main = next((folder / n for n in CANDIDATES if (folder / n).is_file()), None)
    if main is None:
        fail(folder, None, f"a folder without a tokenizer file (looked for {', '.join(CANDIDATES)})")
    data = main.read_bytes()
    kind, _ = sniff(main, data)
    if kind == "vocab":
        added = _added_tokens(folder, config)
        if added and "special_tokens" not in overrides:
            from . import bpe_files

            vocab = parse_json(data, main)
            # the vocabulary's own special entries (not bytes, not merged) plus the added tokens
            tok = bpe_files.load_from_vocab(main, vocab, **overrides)
            overrides = {**overrides, "special_tokens": {**tok.special_tokens, **added}}
    elif kind == "huggingface" and "ignore" not in overrides:
        # transformers turns the file's truncation and padding off unless a call asks for them
        overrides = {**overrides, "ignore": {"truncation", "padding"}}
    elif kind == "bert_vocab" and config and "do_lower_case" in config and "lowercase" not in overrides:
        overrides = {**overrides, "lowercase": bool(config["do_lower_case"])}
    tok = load_bytes(main, data, read_own=read_own, **overrides)
    if kind not in ("huggingface", "vocab"):
        _check_added_tokens(folder, main, tok, _added_tokens(folder, config))
    try:
        tok.chat_template = chat_template_of(folder, config)
        tok.folder_config = {"tokenizer_config": config, "special_tokens_map": special_map}
    except AttributeError:  # a class with __slots__
        fail(folder, None, f"cannot attach the folder's settings to a {type(tok).__name__}")
    return tok


def _token_of(tok, i: int):
    """The token with id i as the tokenizer knows it (a special token's text, a piece, or bytes)."""
    specials = getattr(tok, "special_tokens", None)
    if isinstance(specials, dict):
        for s, j in specials.items():
            if j == i:
                return s
    for name in ("id_to_piece", "id_to_token", "decode_single_token_bytes"):
        get = getattr(tok, name, None)
        if get is not None:
            try:
                token = get(i)
            except (KeyError, ValueError, IndexError):
                return None
            return token.decode("utf-8", "replace") if isinstance(token, bytes) else token
    return None


def _check_added_tokens(folder: Path, main: Path, tok, added: dict[str, int]) -> None:
    """Added tokens the tokenizer's own file does not hold would be lost: an error, not a silent drop."""
    for content, i in added.items():
        if _token_of(tok, i) != content:
            fail(folder, None, f"the added token {content!r} (id {i}) is not in {main.name}, and tokenforge adds "
                               f"tokens to a {type(tok).__name__} read from it only through tokenizer.json")


def save(tok, path) -> None:
    """Writes a model folder that transformers' AutoTokenizer and tokenforge.load read: tokenizer.json
    (the Hugging Face export, whose errors say what it cannot express), tokenizer_config.json (the
    loaded one, with the chat template and tokenizer_class PreTrainedTokenizerFast), and
    special_tokens_map.json when the loaded folder had one."""
    from . import save_foreign
    from ._common import write_atomic

    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder}: a model folder is a directory; this is a file")
    folder.mkdir(parents=True, exist_ok=True)
    save_foreign(tok, folder / "tokenizer.json", "huggingface")
    loaded = getattr(tok, "folder_config", None) or {}
    config = dict(loaded.get("tokenizer_config") or {})
    # the class that reads tokenizer.json alone (a slow class would look for its own files)
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    for stale in ("auto_map", "vocab_file", "merges_file", "tokenizer_file"):
        config.pop(stale, None)
    if getattr(tok, "chat_template", None) is not None:
        config["chat_template"] = tok.chat_template
    write_atomic(folder / "tokenizer_config.json", json.dumps(config, ensure_ascii=False, indent=2).encode("utf-8"))
    if loaded.get("special_tokens_map") is not None:
        write_atomic(folder / "special_tokens_map.json",
                     json.dumps(loaded["special_tokens_map"], ensure_ascii=False, indent=2).encode("utf-8"))
