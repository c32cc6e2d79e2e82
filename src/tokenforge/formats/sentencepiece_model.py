"""SentencePiece model files (a serialized `ModelProto`), recognised by their protobuf structure
whatever their name: `tokenizer.model`, `tokenizer.model.v3`, `spiece.model`, `tokenizer.gemma`, ...

The reading itself is tokenforge.spm's (spm/model_file.py); this module only tells a model file from
the other formats. A `tokenizer.model` that holds tiktoken ranks (Meta's Llama 3 and 4) is text and
is read by tiktoken_bpe.py instead.
"""

from __future__ import annotations

from ._common import fail


def looks_like(data: bytes) -> bool:
    """True when the bytes start like a ModelProto: field 1 (a piece) or 2 (the trainer spec), a
    length-delimited message that decodes as protobuf fields, a piece's first field a UTF-8 string."""
    from ..spm import model_file as mf

    if len(data) < 4 or data[0] not in (0x0A, 0x12):
        return False
    try:
        size, pos = mf._varint(data, 1)
        if size == 0 or pos + size > len(data):
            return False
        sub = mf.fields(data[pos : pos + size])
    except mf.ProtobufError:
        return False
    if not sub:
        return False
    if data[0] == 0x0A:  # a piece: field 1 is its text
        number, wire, value = sub[0]
        if number != 1 or wire != 2:
            return False
        try:
            bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def load(path, data: bytes, **overrides):
    from ..spm.tokenizer import SentencePieceTokenizer

    if overrides:
        fail(path, None, f"a sentencepiece model says everything itself; it takes no keywords ({', '.join(overrides)})")
    try:
        tok = SentencePieceTokenizer.from_bytes(data)
    except ValueError as e:
        fail(path, None, str(e))
    tok.name = getattr(path, "name", "").split(".")[0] or tok.name
    return tok
