"""SentencePiece model files (a serialized `ModelProto`), recognised by their protobuf structure
whatever their name: `tokenizer.model`, `tokenizer.model.v3`, `spiece.model`, `tokenizer.gemma`, ...

The reading itself is tokenforge.spm's (spm/model_file.py); this module only tells a model file from
the other formats. A `tokenizer.model` that holds tiktoken ranks (Meta's Llama 3 and 4) is text and
is read by tiktoken_bpe.py instead.
"""

from __future__ import annotations

from ._common import fail


# The first byte of a ModelProto's fields: 1 pieces, 2 trainer spec, 3 normalizer spec, 4 self-test
# data, 5 denormalizer spec, each length-delimited (wire type 2). sentencepiece writes the pieces
# first; other writers need not (Gemma 4's file starts with its normalizer spec).
MODEL_PROTO_STARTS = (0x0A, 0x12, 0x1A, 0x22, 0x2A)


def looks_like(data: bytes) -> bool:
    """True when the bytes start like a ModelProto: its first fields are ModelProto's, each a
    length-delimited message that decodes as protobuf fields, and a piece (its first field a UTF-8
    string) comes among the first six (the specs are small; CLIP's merges file starts with '"',
    0x22, too, but its bytes do not decode so)."""
    from ..spm import model_file as mf

    if len(data) < 4 or data[0] not in MODEL_PROTO_STARTS:
        return False
    pos = 0
    for _ in range(6):
        if pos >= len(data) or data[pos] not in MODEL_PROTO_STARTS:
            return False
        try:
            size, start = mf._varint(data, pos + 1)
            if start + size > len(data):
                return False
            sub = mf.fields(data[start : start + size])
        except mf.ProtobufError:
            return False
        if data[pos] == 0x0A:  # a piece: field 1 is its text
            if not sub or sub[0][:2] != (1, 2):
                return False
            try:
                bytes(sub[0][2]).decode("utf-8")
            except UnicodeDecodeError:
                return False
            return True
        pos = start + size
    return False


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
