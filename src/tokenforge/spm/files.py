"""SentencePiece-style tokenizers in tokenforge's own file and in Hugging Face `tokenizer.json`.

tokenforge's file (the envelope of io.py, "model": "unigram" or "sp_bpe"):

    {"format": "tokenforge", "version": 1, "model": "unigram", "name": ...,
     "pieces": [[piece, score, type], ...],          # type: sentencepiece's (1 normal, 2 unk, ...)
     "byte_fallback": bool, "treat_whitespace_as_suffix": bool, "unk_surface": " ⁇ ",
     "normalizer": {"name": "nmt_nfkc", "precompiled_charsmap": base64 | null,
                    "add_dummy_prefix": bool, "remove_extra_whitespaces": bool,
                    "escape_whitespaces": bool}}

Hugging Face (unigram only): model `Unigram` (vocab of [piece, score], unk_id, byte_fallback);
normalizer `Precompiled` (the same charsmap) then the whitespace rules as `Replace` steps; pre-
tokenizer and decoder `Metaspace`. Reading accepts exactly that shape (what this module writes, and
what the sentencepiece conversions of `transformers` write, less their optional pieces) and raises
ValueError naming any other component rather than build a different tokenizer.
"""

from __future__ import annotations

import base64
import json
import re

from .model_file import BPE, BYTE, CHAR, CONTROL, NORMAL, UNIGRAM, UNKNOWN, WORD, ModelFile, Piece

_BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")

MODEL_NAMES = {UNIGRAM: "unigram", BPE: "sp_bpe", WORD: "sp_word", CHAR: "sp_char"}


def to_dict(tok, envelope: dict) -> dict:
    """tokenforge's file of a tokenizer whose model is models.SentencePiece."""
    body = tok.model.to_dict()
    return {**envelope, "model": body.pop("model"), "name": getattr(tok, "name", "sentencepiece"), **body}


def from_dict(obj: dict, *, source: str = "<dict>"):
    from .tokenizer import SentencePieceTokenizer

    model = model_file_from_dict(obj, source=source)
    try:
        tok = SentencePieceTokenizer(model)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{source}: {e}") from None
    tok.name = obj.get("name") or "sentencepiece"
    return tok


def model_file_from_dict(obj: dict, *, source: str = "<dict>") -> ModelFile:
    """The ModelFile of tokenforge's description of a sentencepiece model."""

    def fail(where, what):
        raise ValueError(f"{source}: {where}: {what}")

    model_type = {v: k for k, v in MODEL_NAMES.items()}.get(obj.get("model"))
    if model_type is None:
        fail("model", f"unknown model {obj.get('model')!r}")
    raw = obj.get("pieces")
    if not isinstance(raw, list) or not raw:
        fail("pieces", "missing or empty")
    pieces = []
    for n, entry in enumerate(raw):
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and isinstance(entry[1], (int, float)) and isinstance(entry[2], int)):
            fail(f"pieces[{n}]", f"expected [piece, score, type], got {entry!r:.80}")
        pieces.append(Piece(entry[0], float(entry[1]), entry[2]))
    norm = obj.get("normalizer") or {}
    charsmap = norm.get("precompiled_charsmap")
    return ModelFile(
        pieces=pieces,
        model_type=model_type,
        byte_fallback=bool(obj.get("byte_fallback", False)),
        treat_whitespace_as_suffix=bool(obj.get("treat_whitespace_as_suffix", False)),
        unk_surface=obj.get("unk_surface", " \u2047 "),
        normalizer_name=norm.get("name", "identity"),
        precompiled_charsmap=base64.b64decode(charsmap) if charsmap else b"",
        add_dummy_prefix=bool(norm.get("add_dummy_prefix", True)),
        remove_extra_whitespaces=bool(norm.get("remove_extra_whitespaces", True)),
        escape_whitespaces=bool(norm.get("escape_whitespaces", True)),
    )


# ---- Hugging Face tokenizer.json ------------------------------------------------------------------

_COLLAPSE = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
_STRIP = {"type": "Replace", "pattern": {"Regex": "^ | $"}, "content": ""}


def to_hf(tok) -> dict:
    """A Hugging Face tokenizer.json (as a dict) for a unigram model."""
    m = tok.model
    if m.model_type != UNIGRAM:
        raise ValueError("only unigram models can be written as Hugging Face tokenizer.json")
    if not m.escape_whitespaces or m.treat_whitespace_as_suffix:
        raise ValueError("Hugging Face's Metaspace needs escape_whitespaces and no whitespace suffix")
    steps = []
    if m.precompiled_charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(m.precompiled_charsmap).decode("ascii")})
    if m.remove_extra_whitespaces:
        steps += [_COLLAPSE, _STRIP]
    normalizer = None if not steps else steps[0] if len(steps) == 1 else {"type": "Sequence", "normalizers": steps}
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always" if m.add_dummy_prefix else "never", "split": True}
    special = [
        {"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for i, p in enumerate(m.pieces) if p.type in (UNKNOWN, CONTROL)
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": normalizer,
        "pre_tokenizer": metaspace,
        "post_processor": None,
        "decoder": metaspace,
        "model": {
            "type": "Unigram",
            "unk_id": tok.unk_id,
            "vocab": [[p.piece, p.score] for p in m.pieces],
            "byte_fallback": m.byte_fallback,
        },
    }


def from_hf(obj: dict, *, source: str = "<tokenizer.json>"):
    """A SentencePieceTokenizer from a Hugging Face tokenizer.json with a Unigram model."""
    from .tokenizer import SentencePieceTokenizer

    def fail(where, what):
        raise ValueError(f"{source}: {where}: {what}")

    model = obj.get("model") or {}
    if model.get("type") != "Unigram":
        fail("model", f"not a Unigram model ({model.get('type')!r})")
    charsmap, remove_ws = b"", False
    norm = obj.get("normalizer")
    steps = [] if norm is None else norm.get("normalizers", []) if norm.get("type") == "Sequence" else [norm]
    rest = list(steps)
    if rest and rest[0].get("type") == "Precompiled":
        charsmap = base64.b64decode(rest.pop(0).get("precompiled_charsmap") or "")
    if rest[:2] == [_COLLAPSE, _STRIP]:
        remove_ws, rest = True, rest[2:]
    if rest:
        fail("normalizer", f"unsupported step {rest[0].get('type')!r} (supported: Precompiled, then the whitespace Replace steps)")
    pre = obj.get("pre_tokenizer") or {}
    if pre.get("type") != "Metaspace" or pre.get("replacement", "\u2581") != "\u2581":
        fail("pre_tokenizer", f"expected Metaspace with '\u2581', got {pre.get('type')!r}")
    scheme = pre.get("prepend_scheme", "always" if pre.get("add_prefix_space", True) else "never")
    if scheme not in ("always", "never"):
        fail("pre_tokenizer", f"prepend_scheme {scheme!r} is not supported")
    vocab = model.get("vocab") or []
    unk_id = model.get("unk_id")
    if unk_id is None:
        fail("model", "no unk_id (a Unigram model without one is not supported)")
    special = {t["id"] for t in obj.get("added_tokens") or [] if t.get("special")}
    pieces = []
    for i, (piece, score) in enumerate(vocab):
        if i == unk_id:
            kind = UNKNOWN
        elif model.get("byte_fallback") and _BYTE_PIECE.fullmatch(piece):  # HF looks up exactly "<0x%02X>"
            kind = BYTE
        elif i in special:
            kind = CONTROL
        else:
            kind = NORMAL
        pieces.append(Piece(piece, float(score), kind))
    return SentencePieceTokenizer(
        ModelFile(
            pieces=pieces,
            model_type=UNIGRAM,
            byte_fallback=bool(model.get("byte_fallback")),
            normalizer_name="precompiled" if charsmap else "identity",
            precompiled_charsmap=charsmap,
            add_dummy_prefix=scheme == "always",
            remove_extra_whitespaces=remove_ws,
        )
    )


def save_hf(tok, path) -> None:
    from ..outputs import write_atomic

    write_atomic(path, json.dumps(to_hf(tok), ensure_ascii=False, indent=1).encode("utf-8"))


def load_hf(path):
    def no_duplicates(pairs):  # as formats/_common.parse_json (spm/ sits below formats/)
        obj = {}
        for k, v in pairs:
            if k in obj:
                raise ValueError(f"{path}: the key {k!r} appears twice in one JSON object")
            obj[k] = v
        return obj

    with open(path, "rb") as f:
        try:
            obj = json.loads(f.read(), object_pairs_hook=no_duplicates)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
    return from_hf(obj, source=str(path))
