"""SentencePiece's models (unigram, BPE, word, char) as one stage: the model file's own normalizer
(precompiled charsmap and whitespace rules, spm/normalizer.py) and segmentation run together in the
native core, as sentencepiece runs them (same ids).

    model = SentencePiece(spm.model_file.read("m.model"))

Unknown characters become <0xNN> byte pieces (byte_fallback) or one <unk> per run; user-defined
pieces are copied unnormalized and always chosen. The WORD and CHAR model types run in Python
(word: whitespace-delimited pieces looked up whole; char: one piece per character), over the same
native normalizer. Decoding (SentencePieceDecoder) follows sentencepiece's rules: "▁" -> space,
byte pieces joined as UTF-8, control pieces dropped, <unk> as the model's unk surface, and the
leading "▁" of the text consumed once.
"""

from __future__ import annotations

import re
from functools import cached_property

from .. import _core
from ..decoders.base import Decoder
from ..spm import model_file as mf
from ..spm.model_file import BYTE, CONTROL, UNKNOWN, ModelFile
from ..spm.normalizer import SPACE
from ..stage import UnknownTokenError, replace_surrogates

_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")
ALGORITHMS = {mf.UNIGRAM: "unigram", mf.BPE: "bpe", mf.WORD: "word", mf.CHAR: "char"}


def _indices(types: bytes, kind: int) -> list[int]:
    """The ids of the pieces of one type (types: one byte per piece)."""
    out, i = [], types.find(kind)
    while i >= 0:
        out.append(i)
        i = types.find(kind, i + 1)
    return out


class SentencePiece:
    kind = "sentencepiece"

    def __init__(self, model: ModelFile):
        if model.model_type not in ALGORITHMS:
            raise ValueError(f"unknown SentencePiece model type {model.model_type!r}")
        self.model = model
        self.algorithm = ALGORITHMS[model.model_type]
        pieces = model.pieces
        self._table = pieces if isinstance(pieces, mf.PieceTable) else None  # read natively: texts on first use
        columns = isinstance(pieces, mf.PieceColumns)
        self._types = types = pieces.types if columns else bytes(p.type for p in pieces)
        self._scans = 0
        unk = types.find(UNKNOWN)
        if unk < 0:
            raise ValueError("the model has no unknown piece (<unk>)")
        self.unk_id = unk
        self.byte_ids: dict[int, int] = {}
        byte_pieces = _indices(types, BYTE)
        for i, text in zip(byte_pieces, self._texts(byte_pieces)):
            m = _BYTE_PIECE.fullmatch(text)
            if m:
                self.byte_ids[int(m.group(1), 16)] = i
        native_type = model.model_type if model.model_type in (mf.UNIGRAM, mf.BPE) else mf.UNIGRAM
        if self._table is not None:
            pieces = self._table.proto  # the pieces stay native
        elif isinstance(pieces, mf.PieceColumns):
            pieces = list(zip([t.encode("utf-8") for t in pieces.texts], pieces.scores, pieces.types))
        else:
            pieces = [(p.piece.encode("utf-8"), p.score, p.type) for p in pieces]
        self._native = _core.SentencePieceModel(
            pieces, native_type, model.byte_fallback, model.precompiled_charsmap, model.add_dummy_prefix,
            model.remove_extra_whitespaces, model.escape_whitespaces, model.treat_whitespace_as_suffix,
        )

    @cached_property
    def _pieces(self) -> list[str]:
        """The text of each piece, made on first use (encoding never needs them)."""
        return self._table.texts if self._table is not None else [p.piece for p in self.model.pieces]

    def _text(self, i: int) -> str:
        """The text of piece i, without making the list of all of them."""
        if self._table is not None and "_pieces" not in self.__dict__:
            return self._table.text(i)
        return self._pieces[i]

    def _texts(self, ids: list[int]) -> list[str]:
        """_text of each of `ids`, in one call to the native table."""
        if self._table is not None and "_pieces" not in self.__dict__:
            return self._table.texts_at(ids)
        pieces = self._pieces
        return [pieces[i] for i in ids]

    @cached_property
    def _ids(self) -> dict[str, int]:
        """The first id of each text (a text can be a normal piece and a reserved one); made on
        first use, as loading a model only to encode never needs it."""
        texts = self._pieces
        return dict(zip(reversed(texts), range(len(texts) - 1, -1, -1)))

    def first_id(self, text: str) -> int | None:
        """token_to_id without the table (a scan of the texts in C): for a few lookups."""
        if self._table is not None and "_pieces" not in self.__dict__:
            return self._table.find(text)
        try:
            return self._pieces.index(text)
        except ValueError:
            return None

    def __getattr__(self, name):  # the model file's settings: tok.model.pieces, .byte_fallback, ...
        if name.startswith("_") or name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)

    # -- encoding ----------------------------------------------------------------------------------
    def normalize(self, text: str) -> str:
        try:
            return self._native.normalize(text)
        except UnicodeEncodeError:
            return self._native.normalize(replace_surrogates(text))

    def encode_text(self, text: str) -> list[int]:
        if self.algorithm in ("word", "char"):
            return self._encode_units(self.normalize(text))
        try:
            return self._native.encode(text)
        except UnicodeEncodeError:
            return self._native.encode(replace_surrogates(text))

    def encode_texts(self, texts: list[str], num_threads: int) -> list[list[int]]:
        if self.algorithm in ("word", "char"):
            return [self.encode_text(t) for t in texts]
        try:
            return self._native.encode_batch(texts, num_threads)
        except UnicodeEncodeError:
            return self._native.encode_batch([replace_surrogates(t) for t in texts], num_threads)

    def _encode_units(self, norm: str) -> list[int]:
        """WORD: pieces start at "▁" (or end there with treat_whitespace_as_suffix); CHAR: characters."""
        if self.algorithm == "char":
            units = list(norm)
        elif self.model.treat_whitespace_as_suffix:
            units = re.findall(f"[^{SPACE}]*{SPACE}|[^{SPACE}]+$", norm)
        else:
            units = re.findall(f"{SPACE}[^{SPACE}]*|[^{SPACE}]+", norm)
        ids: list[int] = []
        for u in units:
            i = self._ids.get(u)
            if i is not None and self._types[i] not in (CONTROL, UNKNOWN):
                ids.append(i)
            elif self.model.byte_fallback and self.byte_ids:
                ids += [self.byte_ids[b] for b in u.encode("utf-8")]
            elif ids and ids[-1] == self.unk_id:
                continue  # one <unk> per run of unknown pieces, as sentencepiece merges them
            else:
                ids.append(self.unk_id)
        return ids

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        out: list[int] = []
        for p in pieces:
            out += self.encode_text(p)
        return out

    # -- vocabulary --------------------------------------------------------------------------------
    @property
    def vocab(self) -> dict[str, int]:
        return dict(self._ids)

    @property
    def vocab_size(self) -> int:
        return len(self._types)

    def token_to_id(self, token: str) -> int | None:
        if "_ids" in self.__dict__ or self._scans >= 8:
            return self._ids.get(token)
        self._scans += 1  # the first few lookups (the Tokenizer's, at construction) scan instead
        return self.first_id(token)

    def id_to_token(self, i: int) -> str | None:
        return self._text(i) if isinstance(i, int) and 0 <= i < len(self._types) else None

    def tokens_of(self, ids) -> list[str]:
        out = []
        for i in ids:
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(self._pieces):
                raise UnknownTokenError(f"invalid token id {i!r} (not in the vocabulary)")
            out.append(self._pieces[i])
        return out

    def token_bytes(self, i: int) -> bytes | None:
        p = self.id_to_token(i)
        if p is None:
            return None
        if self._types[i] == BYTE and i in self.byte_ids.values():
            return bytes([int(p[3:5], 16)])
        return p.replace(SPACE, " ").encode("utf-8")

    @property
    def special_tokens(self) -> list[str]:
        return self._texts(self.control_ids())

    def control_ids(self) -> list[int]:
        return _indices(self._types, CONTROL)

    def control_tokens(self) -> dict[str, int]:
        """{text: id} of the control pieces (of two with one text, the later id)."""
        ids = self.control_ids()
        return dict(zip(self._texts(ids), ids))

    def piece_type(self, i: int) -> int:
        return self._types[i]

    def default_decoder(self):
        return SentencePieceDecoder(self.model, self)

    def to_dict(self) -> dict:
        """The model file's content in tokenforge's JSON (spm/files.py reads it back)."""
        import base64

        m = self.model
        return {
            "model": {mf.UNIGRAM: "unigram", mf.BPE: "sp_bpe", mf.WORD: "sp_word", mf.CHAR: "sp_char"}[m.model_type],
            "pieces": [[p.piece, p.score, p.type] for p in m.pieces],
            "byte_fallback": m.byte_fallback,
            "treat_whitespace_as_suffix": m.treat_whitespace_as_suffix,
            "unk_surface": m.unk_surface,
            "normalizer": {
                "name": m.normalizer_name,
                "precompiled_charsmap": base64.b64encode(m.precompiled_charsmap).decode("ascii") if m.precompiled_charsmap else None,
                "add_dummy_prefix": m.add_dummy_prefix,
                "remove_extra_whitespaces": m.remove_extra_whitespaces,
                "escape_whitespaces": m.escape_whitespaces,
            },
        }


class SentencePieceDecoder(Decoder):
    """sentencepiece's decoding of pieces (see the module docstring)."""

    kind = "SentencePiece"

    def __init__(self, model: ModelFile, stage: SentencePiece | None = None):
        self.model = model
        self._stage = stage

    @cached_property
    def _types(self) -> dict[str, int]:
        """The type of the first piece of each text, made on the first decoding."""
        stage = self._stage
        texts, _, types = (stage._pieces, None, stage._types) if stage is not None else mf.columns(self.model.pieces)
        return dict(zip(reversed(texts), reversed(types)))

    def decode_chain(self, tokens):
        # sentencepiece's Decode: a leading "▁" is consumed while nothing visible has been written
        # and (unless remove_extra_whitespaces, which consumes every leading one) no "▁" yet.
        m = self.model
        out: list[str] = []
        pending = bytearray()
        written = False  # any text so far
        bos_ws_seen = False
        consume = m.add_dummy_prefix or m.remove_extra_whitespaces

        def flush():
            nonlocal written
            if pending:
                out.append(pending.decode("utf-8", "replace"))
                pending.clear()
                written = True

        for piece in tokens:
            kind = self._types.get(piece)
            if kind == BYTE and _BYTE_PIECE.fullmatch(piece):
                pending.append(int(piece[3:5], 16))
                continue
            flush()
            is_bos_ws = not (bos_ws_seen or written)
            bos_ws_seen = False
            if kind == CONTROL:
                continue
            if kind == UNKNOWN:
                out.append(m.unk_surface)
                written = written or bool(m.unk_surface)
                continue
            if is_bos_ws and consume and piece.startswith(SPACE):
                piece = piece[1:]
                bos_ws_seen = not m.remove_extra_whitespaces
            piece = piece.replace(SPACE, " ")
            out.append(piece)
            written = written or bool(piece)
        flush()
        return ["".join(out)]

    def to_dict(self) -> dict:
        return {"type": self.kind}
