"""Chat messages as the ids a model sees, for the visualizer's chat input.

- A tokenizer with a `chat_template` (a Jinja template, as Hugging Face tokenizer_config.json has
  it) renders the messages with it, in a sandbox, as transformers' apply_chat_template does; the
  text is then encoded with its special tokens recognized.
- cl100k_base and o200k_base (gpt-4, gpt-4o and the other model names on them) use OpenAI's chat
  format as tiktokenizer shows it: `<|im_start|>ROLE<|im_sep|>CONTENT<|im_end|>` per message, then
  `<|im_start|>assistant<|im_sep|>` (the reply's start), the three markers being special tokens
  after the encoding's vocabulary (100264-100266, 200264-200266). Only the markers are special: a
  message that contains the text "<|im_end|>" gets ordinary tokens for it.
- Other tokenizers have no chat format: a clear error.
"""

from __future__ import annotations

import threading

MAX_MESSAGES = 1000
_IM_FIRST_ID = {"cl100k_base": 100264, "o200k_base": 200264}
OPENAI_CHAT_ENCODINGS = frozenset(_IM_FIRST_ID)
_IM_MARKERS = ("<|im_start|>", "<|im_end|>", "<|im_sep|>")

_lock = threading.Lock()
_chat_encodings: dict[str, object] = {}


def check_messages(messages) -> list[dict]:
    """The messages, checked: a list of {"role": str, "content": str}; ValueError says what is wrong."""
    if not isinstance(messages, list) or not messages:
        raise ValueError('"messages" must be a non-empty list of {"role": ..., "content": ...}')
    if len(messages) > MAX_MESSAGES:
        raise ValueError(f'"messages" has {len(messages)} messages; at most {MAX_MESSAGES}')
    for k, m in enumerate(messages):
        if not isinstance(m, dict) or set(m) - {"role", "content"}:
            raise ValueError(f'message {k} must be an object with "role" and "content"')
        if not isinstance(m.get("role"), str) or not m["role"] or not isinstance(m.get("content"), str):
            raise ValueError(f'message {k}: "role" must be a non-empty string and "content" a string')
        if any(marker in m["role"] for marker in _IM_MARKERS) or "\n" in m["role"]:
            raise ValueError(f"message {k}: a role cannot contain a chat marker or a line break")
    return messages


def template_of(tok) -> str | None:
    """tok.chat_template (set by the model-folder loader from tokenizer_config.json); of a list of
    named templates, the one named "default"."""
    template = getattr(tok, "chat_template", None)
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    return template if isinstance(template, str) else None


def special_token_names(tok) -> dict[str, str]:
    """bos_token / eos_token for the template: tok's attributes, else the folder's
    tokenizer_config.json / special_tokens_map.json (kept as tok.folder_config)."""
    found = {}
    config = getattr(tok, "folder_config", None) or {}
    for key in ("bos_token", "eos_token"):
        value = getattr(tok, key, None)
        for part in ("tokenizer_config", "special_tokens_map"):
            if value is None and isinstance(config.get(part), dict):
                value = config[part].get(key)
        if isinstance(value, dict):  # {"content": "<s>", "lstrip": false, ...}
            value = value.get("content")
        if isinstance(value, str):
            found[key] = value
    return found


def chat_format(tok) -> str | None:
    """"template", "openai" or None: how this tokenizer turns messages into ids."""
    if template_of(tok) is not None:
        return "template"
    if getattr(tok, "name", None) in _IM_FIRST_ID and hasattr(tok, "_mergeable_ranks"):
        return "openai"
    return None


def _openai_encoding(tok):
    """tok with the three chat markers added as special tokens (built once per encoding)."""
    with _lock:
        enc = _chat_encodings.get(tok.name)
        if enc is None:
            from .encoding import Encoding

            first = _IM_FIRST_ID[tok.name]
            specials = dict(tok._special_tokens, **{m: first + k for k, m in enumerate(_IM_MARKERS)})
            enc = Encoding(f"{tok.name}-chat", pat_str=tok._pat_str, mergeable_ranks=tok._mergeable_ranks,
                           special_tokens=specials)
            _chat_encodings[tok.name] = enc
    return enc


def render_template(template: str, messages: list[dict], *, add_generation_prompt: bool = True, **tokens) -> str:
    """The text of the messages under a Jinja chat template, rendered in jinja2's sandbox (a template
    cannot reach Python objects' internals), with transformers' conventions: trim_blocks,
    lstrip_blocks, raise_exception(), the tojson filter."""
    try:
        from jinja2 import TemplateError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise ImportError("a Jinja chat template needs jinja2: pip install 'tokenforge[chat]' (or jinja2)") from None

    def raise_exception(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                                **tokens)
    except TemplateError as e:
        raise ValueError(f"the chat template failed: {e}") from None


def chat_ids(tok, messages: list[dict], *, name: str = "") -> tuple[object, str, list[int]]:
    """(the tokenizer that decodes the ids, the text the model sees, its ids) for messages."""
    messages = check_messages(messages)
    how = chat_format(tok)
    if how == "template":
        text = render_template(template_of(tok), messages, **special_token_names(tok))
        if hasattr(tok, "encode_ordinary"):
            return tok, text, tok.encode(text, allowed_special="all", disallowed_special=())
        try:
            return tok, text, tok.encode(text, add_special_tokens=False)
        except TypeError:
            return tok, text, tok.encode(text)
    if how == "openai":
        enc = _openai_encoding(tok)
        start, end, sep = (enc.encode_single_token(m) for m in _IM_MARKERS)
        ids, text = [], []
        for m in messages:
            ids += [start, *enc.encode_ordinary(m["role"]), sep, *enc.encode_ordinary(m["content"]), end]
            text.append(f"<|im_start|>{m['role']}<|im_sep|>{m['content']}<|im_end|>")
        ids += [start, *enc.encode_ordinary("assistant"), sep]
        text.append("<|im_start|>assistant<|im_sep|>")
        return enc, "".join(text), ids
    raise ValueError(f"{name or getattr(tok, 'name', 'this tokenizer')} has no chat template; chat input works "
                     "with cl100k_base / o200k_base (gpt-4, gpt-4o, ...) and tokenizers that have a chat template")
