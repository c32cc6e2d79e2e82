"""SentencePieceTokenizer: the one Tokenizer with a sentencepiece model (models.SentencePiece), and
sentencepiece's own methods kept for compatibility (sampling, n-best, piece <-> id, .model files).

    >>> tok = SentencePieceTokenizer.from_file("m.model")        # a sentencepiece .model file
    >>> tok.encode("Hello world")                                 # == sentencepiece's ids
    >>> tok.encode("Hello world", sample=True, alpha=0.1)         # subword regularization
    >>> tok.decode(tok.encode("Hello world"))
    'Hello world'

Pipeline: the model stage normalizes (precompiled charsmap of the model, then the whitespace rules:
see normalizer.py) and segments (unigram Viterbi, sentencepiece's BPE, word or char); unknown
characters become `<0xNN>` byte pieces (byte fallback) or one `<unk>` per run; the decoder is
sentencepiece's. Control pieces (<s>, </s>) are special tokens, written in the text they stay text.
Not handled: user-defined pieces in n-best and BPE-dropout (ValueError), denormalization rules.
"""

from __future__ import annotations

import math
import random
from typing import Sequence

from ..models.sentencepiece import SentencePiece
from ..stage import check_text, replace_surrogates
from ..tokenizer import Tokenizer
from . import model_file as mf
from . import reference
from .model_file import BYTE, CONTROL, NORMAL, UNKNOWN, ModelFile, Piece


def _clean(text: str) -> str:
    check_text(text)
    return replace_surrogates(text)


class SentencePieceTokenizer(Tokenizer):
    """A Tokenizer whose model is a sentencepiece model (unigram, BPE, word or char)."""

    def __init__(self, model: ModelFile, *, name: str = "sentencepiece", **options):
        stage = model if isinstance(model, SentencePiece) else SentencePiece(model)
        controls = stage.control_tokens()
        options.setdefault("special_tokens", {t: i for t, i in controls.items() if t})
        options.setdefault("allowed_special", frozenset())
        options.setdefault("disallowed_special", ())
        options.setdefault("skip_special_tokens", True)
        super().__init__(stage, name=name, **options)
        self.model_type = stage.algorithm
        self.unk_id = stage.unk_id
        self.bos_id = self._control_id("<s>")
        self.eos_id = self._control_id("</s>")

    def _control_id(self, piece: str) -> int:
        i = self.model.first_id(piece)
        return i if i is not None and self.model.piece_type(i) == CONTROL else -1

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
        return mf.to_bytes(self.model.model)

    def save_model(self, path) -> None:
        """Writes a sentencepiece `.model` file (through a temporary file: a full disk leaves the old
        file as it was)."""
        from ..outputs import write_atomic

        write_atomic(path, self.to_model_bytes())

    # ---- sentencepiece's vocabulary methods -----------------------------------------------------------

    def piece_to_id(self, piece: str) -> int:
        i = self.model.token_to_id(piece)
        return self.unk_id if i is None else i

    def id_to_piece(self, i: int) -> str:
        p = self.model.id_to_token(i)
        if p is None:
            raise ValueError(f"invalid token id {i} (vocabulary size {self.model.vocab_size})")
        return p

    def get_score(self, i: int) -> float:
        pieces = self.model.model.pieces
        return pieces.scores[i] if isinstance(pieces, mf.PieceColumns) else pieces[i].score

    # ---- encoding with sentencepiece's options ------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The normalized text the model segments (spaces as `▁`, with the dummy prefix): the
        model file's normalizer, which runs inside the model stage."""
        return self.model.normalize(_clean(text))

    def encode(self, text: str, *, sample: bool = False, alpha: float = 0.1, nbest_size: int = -1, add_bos: bool = False,
               add_eos: bool = False, seed: int | None = None, **kwargs) -> list[int]:
        """The ids of text; sentencepiece's `encode`, id for id.

        With sample=True (subword regularization, sentencepiece's `enable_sampling`): for unigram,
        nbest_size < 0 draws from all segmentations with probability proportional to
        P(x)^alpha, nbest_size > 1 from the nbest_size best; for BPE, alpha is the BPE-dropout
        probability of each merge. `seed` makes the draw repeatable. Other keywords are the
        Tokenizer's (allowed_special, add_special_tokens, ...).
        """
        if not sample:
            ids = super().encode(text, **kwargs)
        else:
            text = _clean(text)
            native = self.model._native
            if self.model_type == "unigram":
                if nbest_size in (0, 1):
                    ids = self.model.encode_text(text)
                elif nbest_size < 0:
                    ids = native.sample(text, float(alpha), seed)
                else:
                    rng = random.Random(seed)
                    cands = self.nbest(text, nbest_size, _scores=True)
                    weights = [math.exp(alpha * (s - cands[0][0])) for s, _ in cands]  # as sentencepiece
                    ids = rng.choices([c for _, c in cands], weights)[0]
            elif self.model_type == "bpe":
                ids = self._bpe_dropout(text, float(alpha), random.Random(seed))
            else:
                raise ValueError(f"sampling needs a unigram or bpe model, not {self.model_type}")
        if add_bos and self.bos_id >= 0:
            ids.insert(0, self.bos_id)
        if add_eos and self.eos_id >= 0:
            ids.append(self.eos_id)
        return ids

    def encode_as_pieces(self, text: str, **kwargs) -> list[str]:
        return [self.model.id_to_token(i) for i in self.encode(text, **kwargs)]

    def nbest(self, text: str, n: int, *, _scores: bool = False):
        """The n most probable segmentations (unigram; pure Python, for short texts)."""
        if self.model_type != "unigram":
            raise ValueError("nbest needs a unigram model")
        if n < 1:
            raise ValueError("n must be at least 1")
        self._require_no_user_defined("nbest")
        norm = self.model.normalize(text)
        results = reference.nbest(norm, self._vocab(), self.unk_id, n)
        out = [(s, reference.postprocess(p, self.unk_id, self._fallback())) for s, p in results]
        return out if _scores else [ids for _, ids in out]

    def _require_no_user_defined(self, what: str) -> None:
        if any(p.type == mf.USER_DEFINED for p in self.model.model.pieces):
            raise ValueError(f"{what} is not supported for models with user-defined pieces")

    def _vocab(self) -> dict:
        if not hasattr(self, "_ref_vocab"):
            self._ref_vocab = {p.piece: (i, p.score, p.type) for i, p in reversed(list(enumerate(self.model.model.pieces)))}
        return self._ref_vocab

    def _fallback(self):
        return self.model.byte_ids if self.model.model.byte_fallback else None

    def _bpe_dropout(self, text: str, p: float, rng: random.Random) -> list[int]:
        self._require_no_user_defined("BPE-dropout")
        pieces = reference.bpe_dropout(self.model.normalize(text), self._vocab(), self.unk_id, p, rng)
        return reference.postprocess(pieces, self.unk_id, self._fallback())

    def __repr__(self) -> str:
        m = self.model.model
        return (f"<SentencePieceTokenizer {self.model_type} vocab={self.model.vocab_size} "
                f"normalizer={m.normalizer_name!r} byte_fallback={m.byte_fallback}>")
