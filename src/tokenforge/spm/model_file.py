"""SentencePiece `.model` files (a serialized `ModelProto`), read and written without the
`protobuf` or `sentencepiece` packages: a small hand-written protobuf wire-format reader.

Only the fields that decide how text is tokenized are interpreted (field numbers from
sentencepiece's `sentencepiece_model.proto`); everything else is kept as raw bytes so a file read and
written again keeps its trainer settings. Not handled: proto2 groups (wire types 3/4, never used by
ModelProto) and the `self_test_data` / `denormalizer_spec` contents (kept as raw bytes).
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

# SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
UNIGRAM, BPE, WORD, CHAR = 1, 2, 3, 4
MODEL_TYPE_NAMES = {UNIGRAM: "unigram", BPE: "bpe", WORD: "word", CHAR: "char"}


@dataclass
class Piece:
    piece: str
    score: float = 0.0
    type: int = NORMAL


class PieceColumns(Sequence):
    """Pieces as three columns (texts, scores, type bytes), without a Piece object each (a GGUF
    file's vocabulary: 32K Piece objects were half of loading one); Piece objects are made on first
    use. Read-only."""

    def __init__(self, texts: list[str], scores: Sequence[float], types: bytes):
        self.texts, self.scores, self.types = texts, scores, types
        self._pieces: list[Piece] | None = None

    def as_list(self) -> list[Piece]:
        if self._pieces is None:
            self._pieces = [Piece(t, s, k) for t, s, k in zip(self.texts, self.scores, self.types)]
        return self._pieces

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, i):
        return self.as_list()[i]

    def __iter__(self):
        return iter(self.as_list())

    def __eq__(self, other) -> bool:
        return self.as_list() == (other.as_list() if isinstance(other, PieceColumns) else other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} pieces)"


class PieceTable(PieceColumns):
    """The pieces of a file read natively, as the same three columns (float32 scores). Loading to
    encode needs the types only: the texts (a str per piece, a third of the time of loading a
    32k-piece model), the scores and the Piece objects are made on first use, and a few texts or
    lookups are answered by the native copy."""

    def __init__(self, proto):  # (not PieceColumns.__init__: texts and scores are made on first use)
        self.proto = proto  # _core.SentencePieceModelProto: the native model is built from it
        self.types: bytes = proto.types()
        self._pieces: list[Piece] | None = None

    @cached_property
    def texts(self) -> list[str]:
        return self.proto.texts()

    @cached_property
    def scores(self) -> array:
        return array("f", self.proto.scores())

    def text(self, i: int) -> str:
        """The text of piece i (0 <= i < len), without making the list of all of them."""
        return self.texts[i] if "texts" in self.__dict__ else self.proto.text(i)

    def texts_at(self, ids: list[int]) -> list[str]:
        """The texts of pieces `ids` (0 <= id < len), without making the list of all of them."""
        if "texts" in self.__dict__:
            texts = self.texts
            return [texts[i] for i in ids]
        return self.proto.texts_at(ids)

    def find(self, text: str) -> int | None:
        """The first piece whose text is `text`, by a scan (for a few lookups), or None."""
        if "texts" in self.__dict__:
            try:
                return self.texts.index(text)
            except ValueError:
                return None
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no piece (they are valid UTF-8)
            return None
        i = self.proto.find(raw)
        return None if i < 0 else i


def columns(pieces) -> tuple[list[str], Sequence[float], bytes]:
    """(texts, scores, types) of a list of Piece or a PieceTable."""
    if isinstance(pieces, PieceColumns):
        return pieces.texts, pieces.scores, pieces.types
    return [p.piece for p in pieces], [p.score for p in pieces], bytes(p.type for p in pieces)


@dataclass
class ModelFile:
    """The parts of a ModelProto that tokenization depends on."""

    pieces: list[Piece] | PieceTable
    model_type: int = UNIGRAM
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    unk_surface: str = " \u2047 "
    normalizer_name: str = "identity"
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    # raw TrainerSpec / NormalizerSpec bytes of a file that was read, re-emitted by `to_bytes`
    raw_trainer_spec: bytes | None = field(default=None, repr=False)
    raw_normalizer_spec: bytes | None = field(default=None, repr=False)


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint longer than 10 bytes")


def fields(data: bytes) -> list[tuple[int, int, object]]:
    """Decodes one message into [(field number, wire type, value)], in file order. Varints are
    ints, fixed32/fixed64 raw 4/8 bytes, length-delimited fields bytes."""
    out, pos, n = [], 0, len(data)
    while pos < n:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("field number 0")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire} (field {number})")
        if pos > n:
            raise ProtobufError(f"truncated field {number}")
        out.append((number, wire, value))
    return out


def _last(fs, number: int, wire: int, default):
    """The last value of a field, as protobuf keeps it for a non-repeated field. A field written with
    another wire type than the schema's is skipped, as protobuf's parser keeps it as an unknown
    field (so a varint where a string belongs can never become `bytes(<huge int>)`)."""
    value = default
    for num, w, v in fs:
        if num == number and w == wire:
            value = v
    return value


def _bool(fs, number: int, default: bool) -> bool:
    return bool(_last(fs, number, 0, int(default)))


def _text(fs, number: int, default: str, what: str) -> str:
    raw = _last(fs, number, 2, None)
    return default if raw is None else _utf8(raw, what)


def _utf8(raw: bytes, what: str) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ProtobufError(f"{what} is not UTF-8") from None


def _f32(raw: bytes) -> float:
    return struct.unpack("<f", raw)[0]


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


_PIECE_TYPES = (NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE)
_MODEL_TYPES = tuple(MODEL_TYPE_NAMES)


def _piece(i: int, message: bytes) -> Piece:
    pf = fields(message)
    text = _text(pf, 1, "", f"piece {i}")
    score = _f32(_last(pf, 2, 5, b"\0\0\0\0"))
    # protobuf reads an enum as its low 32 bits; a value outside the enum is kept as an unknown field,
    # which leaves the default type (sentencepiece loads such a piece as a normal one)
    kind = _signed32(_last(pf, 3, 0, NORMAL))
    if kind not in _PIECE_TYPES:
        kind = NORMAL
    if not math.isfinite(score):
        raise ProtobufError(f"piece {i} has a score that is not a finite number ({score})")
    if "\0" in text:
        raise ProtobufError(f"piece {i} contains a NUL character")
    return Piece(piece=text, score=score, type=kind)


def _check_unique(pieces: list[Piece]) -> None:
    """sentencepiece refuses a piece text defined twice, among the normal pieces (normal,
    user-defined, unused) and among the reserved ones (unknown, control, byte)."""
    seen: dict[tuple[bool, str], int] = {}
    for i, p in enumerate(pieces):
        key = (p.type in (NORMAL, USER_DEFINED, UNUSED), p.piece)
        if key in seen:
            raise ProtobufError(f"piece {i} ({p.piece!r}) is already defined (piece {seen[key]})")
        seen[key] = i


def parse(data: bytes) -> ModelFile:
    """Parses the bytes of a `.model` file. Memory stays proportional to the file: every length is
    checked against the bytes present before anything is sliced. The native reader
    (cpp/model_proto.h) reads what this one accepts; a file it refuses is read again here, which
    names the problem."""
    from .. import _core

    proto = _core.parse_sentencepiece_model(bytes(data))
    if proto is not None:
        return ModelFile(pieces=PieceTable(proto), **proto.settings())
    return parse_python(data)


def parse_python(data: bytes) -> ModelFile:
    """The pure-Python reader: the oracle of the native one, and the one that names errors."""
    try:
        top = fields(data)
        pieces: list[Piece] = []
        for num, wire, value in top:
            if num == 1 and wire == 2:
                pieces.append(_piece(len(pieces), value))
        _check_unique(pieces)
        tf = fields(_last(top, 2, 2, b""))
        nf = fields(_last(top, 3, 2, b""))
        model_type = _last(tf, 3, 0, UNIGRAM)
        if model_type not in _MODEL_TYPES:
            raise ProtobufError(f"unknown model type {model_type}")
        model = ModelFile(
            pieces=pieces,
            model_type=model_type,
            byte_fallback=_bool(tf, 35, False),
            treat_whitespace_as_suffix=_bool(tf, 24, False),
            unk_surface=_text(tf, 44, " \u2047 ", "unk_surface"),
            normalizer_name=_text(nf, 1, "", "normalizer name"),
            precompiled_charsmap=bytes(_last(nf, 2, 2, b"")),
            add_dummy_prefix=_bool(nf, 3, True),
            remove_extra_whitespaces=_bool(nf, 4, True),
            escape_whitespaces=_bool(nf, 5, True),
            raw_trainer_spec=bytes(_last(top, 2, 2, b"")),
            raw_normalizer_spec=bytes(_last(top, 3, 2, b"")),
        )
    except (ProtobufError, struct.error) as e:
        raise ValueError(f"not a SentencePiece model file ({e})") from None
    if not pieces:
        raise ValueError("not a SentencePiece model file (no pieces)")
    return model


def read(path) -> ModelFile:
    with open(path, "rb") as f:
        data = f.read()
    try:
        return parse(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


# --- writing -------------------------------------------------------------------------------------


def _enc_varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _enc_varint(number << 3 | wire)


def _len_field(number: int, payload: bytes) -> bytes:
    return _key(number, 2) + _enc_varint(len(payload)) + payload


def _int_field(number: int, v: int) -> bytes:
    return _key(number, 0) + _enc_varint(v)


def to_bytes(model: ModelFile) -> bytes:
    """Serializes a ModelProto that the `sentencepiece` package can load."""
    out = bytearray()
    for p in model.pieces:
        body = _len_field(1, p.piece.encode("utf-8")) + _key(2, 5) + struct.pack("<f", p.score)
        if p.type != NORMAL:
            body += _int_field(3, p.type)
        out += _len_field(1, body)
    if model.raw_trainer_spec is not None:
        trainer = model.raw_trainer_spec
    else:
        ids = {t: next((i for i, p in enumerate(model.pieces) if p.type == t), -1) for t in (UNKNOWN,)}
        controls = {p.piece: i for i, p in enumerate(model.pieces) if p.type == CONTROL}
        trainer = _int_field(3, model.model_type) + _int_field(4, len(model.pieces))
        trainer += _int_field(24, int(model.treat_whitespace_as_suffix))
        trainer += _int_field(35, int(model.byte_fallback))
        trainer += _int_field(40, ids[UNKNOWN])
        trainer += _int_field(41, controls.get("<s>", -1)) + _int_field(42, controls.get("</s>", -1))
        trainer += _int_field(43, controls.get("<pad>", -1))
    out += _len_field(2, trainer)
    if model.raw_normalizer_spec is not None:
        normalizer = model.raw_normalizer_spec
    else:
        normalizer = _len_field(1, model.normalizer_name.encode("utf-8"))
        if model.precompiled_charsmap:
            normalizer += _len_field(2, model.precompiled_charsmap)
        normalizer += _int_field(3, int(model.add_dummy_prefix))
        normalizer += _int_field(4, int(model.remove_extra_whitespaces))
        normalizer += _int_field(5, int(model.escape_whitespaces))
    out += _len_field(3, normalizer)
    return bytes(out)
