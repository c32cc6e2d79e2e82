"""SentencePieceTokenizer: a unigram or BPE model over `▁`-escaped text, as the `sentencepiece`
package runs it (same normalization, same ids), with the work in the native core.

    >>> tok = SentencePieceTokenizer.from_file("m.model")        # a sentencepiece .model file
    >>> tok.encode("Hello world")                                 # == sentencepiece's ids
    >>> tok.encode("Hello world", sample=True, alpha=0.1)         # subword regularization
    >>> tok.decode(tok.encode("Hello world"))
    'Hello world'

Pipeline: normalize (precompiled charsmap of the model, then the whitespace rules: see
normalizer.py) -> model (unigram Viterbi, or sentencepiece's BPE) -> unknown characters become
`<0xNN>` byte pieces (byte fallback) or one `<unk>` per run. User-defined pieces are copied
unnormalized and always chosen, as sentencepiece does. Not handled: user-defined pieces
in n-best and BPE-dropout (ValueError), the WORD and CHAR model types, denormalization rules.
"""

from __future__ import annotations

import math
import random
import re
from typing import Iterable, Sequence

from .. import _core
from . import model_file as mf
from . import reference
from .model_file import BYTE, CONTROL, NORMAL, UNKNOWN, ModelFile, Piece
from .normalizer import SPACE

ALGORITHMS = {mf.UNIGRAM: "unigram", mf.BPE: "bpe"}
_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


def _clean(text: str) -> str:
    """Lone surrogates -> U+FFFD, surrogate pairs -> their code point (as tokenforge.Tokenizer)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _call(fn, text):
    """fn(text), retried on the cleaned text if it is not valid UTF-8 (the core reads a str's
    cached UTF-8 and raises UnicodeEncodeError for lone surrogates)."""
    try:
        return fn(text)
    except UnicodeEncodeError:
        return fn(_clean(text))
    except TypeError:
        _clean(text)  # raises the TypeError with a clear message
        raise


class SentencePieceTokenizer:
    """A SentencePiece-style tokenizer (unigram or BPE model type)."""

    name = "sentencepiece"

    def __init__(self, model: ModelFile):
        if model.model_type not in ALGORITHMS:
            name = mf.MODEL_TYPE_NAMES.get(model.model_type, str(model.model_type))
            raise ValueError(f"SentencePiece model type {name!r} is not supported (only unigram and bpe)")
        self.model = model
        self.model_type = ALGORITHMS[model.model_type]
        self._pieces = [p.piece for p in model.pieces]
        self._ids = {}
        for i, p in enumerate(model.pieces):
            self._ids.setdefault(p.piece, i)
        unk = [i for i, p in enumerate(model.pieces) if p.type == UNKNOWN]
        if not unk:
            raise ValueError("the model has no unknown piece (<unk>)")
        self.unk_id = unk[0]
        self.bos_id = self._ids.get("<s>", -1) if self._type_of("<s>") == CONTROL else -1
        self.eos_id = self._ids.get("</s>", -1) if self._type_of("</s>") == CONTROL else -1
        self._byte_ids = {}
        for i, p in enumerate(model.pieces):
            m = _BYTE_PIECE.fullmatch(p.piece)
            if p.type == BYTE and m:
                self._byte_ids[int(m.group(1), 16)] = i
        self._native = _core.SentencePieceModel(
            [(p.piece.encode("utf-8"), p.score, p.type) for p in model.pieces],
            model.model_type,
            model.byte_fallback,
            model.precompiled_charsmap,
            model.add_dummy_prefix,
            model.remove_extra_whitespaces,
            model.escape_whitespaces,
            model.treat_whitespace_as_suffix,
        )

    def _type_of(self, piece: str) -> int:
        i = self._ids.get(piece)
        return -1 if i is None else self.model.pieces[i].type

    # ---- construction ----------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path) -> "SentencePieceTokenizer":
        """Loads a sentencepiece `.model` file."""
        return cls(mf.read(path))

    @classmethod
    def from_bytes(cls, data: bytes) -> "SentencePieceTokenizer":
        return cls(mf.parse(data))

    @classmethod
    def from_pieces(
        cls,
        pieces: Sequence[tuple[str, float]],
        *,
        model_type: str = "unigram",
        byte_fallback: bool = False,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        unk_piece: str = "<unk>",
        control_pieces: Sequence[str] = ("<s>", "</s>"),
        precompiled_charsmap: bytes = b"",
        normalizer_name: str | None = None,
    ) -> "SentencePieceTokenizer":
        """A model from (piece, score) pairs. `<unk>` and the control pieces come first (ids 0, 1,
        2...), then the 256 byte pieces if byte_fallback, then yours. Normalization is identity,
        or a precompiled charsmap taken from another model (`tok.model.precompiled_charsmap`)."""
        types = {"unigram": mf.UNIGRAM, "bpe": mf.BPE}
        if model_type not in types:
            raise ValueError(f"model_type must be 'unigram' or 'bpe', got {model_type!r}")
        ps = [Piece(unk_piece, 0.0, UNKNOWN)] + [Piece(c, 0.0, CONTROL) for c in control_pieces]
        if byte_fallback:
            ps += [Piece(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
        ps += [Piece(p, float(s), NORMAL) for p, s in pieces]
        return cls(
            ModelFile(
                pieces=ps,
                model_type=types[model_type],
                byte_fallback=byte_fallback,
                normalizer_name=normalizer_name or ("precompiled" if precompiled_charsmap else "identity"),
                precompiled_charsmap=bytes(precompiled_charsmap),
                add_dummy_prefix=add_dummy_prefix,
                remove_extra_whitespaces=remove_extra_whitespaces,
                escape_whitespaces=escape_whitespaces,
            )
        )

    def to_model_bytes(self) -> bytes:
        """The model as a sentencepiece `.model` file (loadable by the sentencepiece package)."""
        return mf.to_bytes(self.model)

    def save_model(self, path) -> None:
        """Writes a sentencepiece `.model` file (through a temporary file: a full disk leaves the old
        file as it was)."""
        from ..load import write_atomic

        write_atomic(path, self.to_model_bytes())

    def save(self, path, *, format: str = "tokenforge") -> None:
        """tokenforge's own JSON file (`tokenforge.load` reads it), or format="huggingface" for a
        tokenizer.json (unigram models), or format="sentencepiece" for a `.model` file."""
        if format in ("huggingface", "hf", "tokenizer.json"):  # the strip written for Oniguruma (formats/hf_families.py)
            from ..formats import hf_families

            return hf_families.save(self, path)
        if format == "sentencepiece":
            return self.save_model(path)
        from .. import io

        io.save(self, path, format=format)

    @classmethod
    def from_huggingface(cls, path) -> "SentencePieceTokenizer":
        """Loads a Hugging Face tokenizer.json with a Unigram model (checked by formats/hf_families.py)."""
        from pathlib import Path

        from ..formats import _common, hf_families

        path = Path(path)
        obj = _common.parse_json(path.read_bytes(), path)
        if not (isinstance(obj, dict) and isinstance(obj.get("model"), dict) and obj["model"].get("type") == "Unigram"):
            raise ValueError(f"{path}: model: not a Unigram model")
        return hf_families.load(path, obj)

    # ---- vocabulary ------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._pieces)

    n_vocab = vocab_size

    def piece_to_id(self, piece: str) -> int:
        return self._ids.get(piece, self.unk_id)

    def id_to_piece(self, i: int) -> str:
        if not 0 <= i < len(self._pieces):
            raise ValueError(f"invalid token id {i} (vocabulary size {len(self._pieces)})")
        return self._pieces[i]

    def get_score(self, i: int) -> float:
        return self.model.pieces[i].score

    # ---- encoding --------------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The normalized text the model segments (spaces as `▁`, with the dummy prefix)."""
        return _call(self._native.normalize, text)

    def encode(
        self,
        text: str,
        *,
        sample: bool = False,
        alpha: float = 0.1,
        nbest_size: int = -1,
        add_bos: bool = False,
        add_eos: bool = False,
        seed: int | None = None,
    ) -> list[int]:
        """The ids of text; sentencepiece's `encode`, id for id.

        With sample=True (subword regularization, sentencepiece's `enable_sampling`): for unigram,
        nbest_size < 0 draws from all segmentations with probability proportional to
        P(x)^alpha, nbest_size > 1 from the nbest_size best; for BPE, alpha is the BPE-dropout
        probability of each merge. `seed` makes the draw repeatable.
        """
        if not (sample or add_bos or add_eos):  # the common case, kept short
            try:
                return self._native.encode(text)
            except (UnicodeEncodeError, TypeError):
                return self._native.encode(_clean(text))
        if not sample:
            ids = _call(self._native.encode, text)
        elif self.model_type == "unigram":
            text = _clean(text)
            if nbest_size in (0, 1):
                ids = self._native.encode(text)
            elif nbest_size < 0:
                ids = self._native.sample(text, float(alpha), seed)
            else:
                rng = random.Random(seed)
                cands = self.nbest(text, nbest_size, _scores=True)
                weights = [math.exp(alpha * (s - cands[0][0])) for s, _ in cands]  # as sentencepiece
                ids = rng.choices([c for _, c in cands], weights)[0]
        else:
            ids = self._bpe_dropout(text, float(alpha), random.Random(seed))
        if add_bos and self.bos_id >= 0:
            ids.insert(0, self.bos_id)
        if add_eos and self.eos_id >= 0:
            ids.append(self.eos_id)
        return ids

    __call__ = encode

    def encode_batch(self, texts: Iterable[str], *, num_threads: int = 8) -> list[list[int]]:
        """Many texts on native threads (GIL released)."""
        texts = texts if isinstance(texts, list) else list(texts)
        try:
            return self._native.encode_batch(texts, num_threads)
        except (UnicodeEncodeError, TypeError):
            return self._native.encode_batch([_clean(t) for t in texts], num_threads)

    def encode_as_pieces(self, text: str, **kwargs) -> list[str]:
        return [self._pieces[i] for i in self.encode(text, **kwargs)]

    def nbest(self, text: str, n: int, *, _scores: bool = False):
        """The n most probable segmentations (unigram; pure Python, for short texts)."""
        if self.model_type != "unigram":
            raise ValueError("nbest needs a unigram model")
        if n < 1:
            raise ValueError("n must be at least 1")
        self._require_no_user_defined("nbest")
        norm = self.normalize(text)
        results = reference.nbest(norm, self._vocab(), self.unk_id, n)
        out = [(s, reference.postprocess(p, self.unk_id, self._fallback())) for s, p in results]
        return out if _scores else [ids for _, ids in out]

    def _require_no_user_defined(self, what: str) -> None:
        if any(p.type == mf.USER_DEFINED for p in self.model.pieces):
            raise ValueError(f"{what} is not supported for models with user-defined pieces")

    def _vocab(self) -> dict:
        if not hasattr(self, "_ref_vocab"):
            self._ref_vocab = {p.piece: (i, p.score, p.type) for i, p in reversed(list(enumerate(self.model.pieces)))}
        return self._ref_vocab

    def _fallback(self):
        return self._byte_ids if self.model.byte_fallback else None

    def _bpe_dropout(self, text: str, p: float, rng: random.Random) -> list[int]:
        self._require_no_user_defined("BPE-dropout")
        pieces = reference.bpe_dropout(self.normalize(text), self._vocab(), self.unk_id, p, rng)
        return reference.postprocess(pieces, self.unk_id, self._fallback())

    # ---- decoding --------------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ids, as sentencepiece decodes: `▁` -> space, the dummy prefix removed, byte
        pieces joined as UTF-8, control pieces dropped, `<unk>` as the model's unk surface."""
        out: list[str] = []
        pending = bytearray()
        first = True

        def flush():
            nonlocal first
            if pending:
                out.append(pending.decode("utf-8", "replace"))
                pending.clear()
                first = False

        for i in ids:
            if not isinstance(i, int) or not 0 <= i < len(self._pieces):
                raise ValueError(f"invalid token id {i!r}")
            p = self.model.pieces[i]
            if p.type == BYTE and i in self._byte_ids.values():
                pending.append(int(p.piece[3:5], 16))
                continue
            flush()
            if p.type == CONTROL:
                continue
            if p.type == UNKNOWN:
                out.append(self.model.unk_surface)
                first = False
                continue
            piece = p.piece
            if first and piece.startswith(SPACE) and self.model.add_dummy_prefix:
                piece = piece[1:]
            if piece:
                first = False
            out.append(piece.replace(SPACE, " "))
        flush()
        return "".join(out)

    def __repr__(self) -> str:
        return (
            f"<SentencePieceTokenizer {self.model_type} vocab={self.vocab_size} "
            f"normalizer={self.model.normalizer_name!r} byte_fallback={self.model.byte_fallback}>"
        )
