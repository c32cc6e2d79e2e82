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

from ..stage import UnsupportedComponent
from .model_file import BPE, BYTE, CHAR, CONTROL, NORMAL, UNIGRAM, UNKNOWN, UNUSED, USER_DEFINED, WORD, ModelFile, Piece

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
_PREPEND = {"type": "Prepend", "prepend": "\u2581"}
_STRIP_ENDS = {"type": "Replace", "pattern": {"Regex": "\\A | \\z"}, "content": ""}


def _limits(tok) -> dict:
    truncation, padding = getattr(tok, "_truncation", None), getattr(tok, "_padding", None)
    return {"truncation": None if truncation is None else truncation.to_dict(),
            "padding": None if padding is None else padding.to_dict()}


def _added_tokens(tok, m) -> list[dict]:
    """The tokenizer's added tokens (control and unknown pieces: special) and the user-defined
    pieces (always one piece in sentencepiece: HF's non-special added tokens). sentencepiece finds
    user-defined pieces in the normalized text, where spaces are '▁': one holding a '▁' (Gemma's
    runs '▁▁' ... of up to 31) is matched there by tokenizers too only when normalized (the others
    are the same either way: the normalizer only turns spaces into '▁')."""
    added = {t.id: t.to_dict() for t in tok.added_tokens}
    for i, p in enumerate(m.pieces):
        if p.type == USER_DEFINED and i not in added:
            added[i] = {"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False,
                        "normalized": "\u2581" in p.piece, "special": False}
        elif p.type in (UNKNOWN, CONTROL) and i not in added:
            added[i] = {"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False,
                        "normalized": False, "special": True}
    return [added[i] for i in sorted(added)]


def bpe_merges(m) -> list[list[str]]:
    """Every merge sentencepiece's BPE can make, in the order it makes them: a normal piece of two
    or more characters made of two normal pieces, by the piece's score (highest first), then its id.

    sentencepiece merges the adjacent pair whose concatenation is the best-scoring piece (the
    leftmost of equals); Hugging Face's BPE merges the pair of lowest rank (the leftmost of one
    merge). Ranked by piece score, the two agree, except between two *different* pieces of one
    score: there sentencepiece takes the leftmost, HF the lower rank. to_hf refuses a model where
    such a tie can arise between pieces that could compete."""
    normal = {p.piece: i for i, p in enumerate(m.pieces) if p.type == NORMAL}
    merges = []
    for piece, i in normal.items():
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in normal and right in normal:
                merges.append((-m.pieces[i].score, i, left, right))
    merges.sort()
    return [[left, right] for _, _, left, right in merges]


def _bpe_to_hf(tok, m) -> dict:
    """A sentencepiece BPE model as transformers' LlamaConverter writes it: the BPE model on the
    whole text (no pre-tokenizer), byte fallback, spaces as '▁' with the dummy prefix in the
    normalizer, the decoder undoing both."""
    if m.precompiled_charsmap or m.normalizer_name not in ("identity", ""):
        # (HF's Precompiled would be its place, but it normalizes whole graphemes where sentencepiece
        # reads the map character by character: "a\u0308\u0301" loses its U+0301 in tokenizers.)
        raise ValueError(f"cannot write tokenizer.json: the sentencepiece BPE model's normalizer {m.normalizer_name!r} "
                         "(only identity is written for BPE: tokenizers' Precompiled normalizes some combining "
                         "sequences otherwise than sentencepiece)")
    if m.remove_extra_whitespaces:
        raise ValueError("cannot write tokenizer.json: a sentencepiece BPE model that removes extra whitespace "
                         "(only remove_extra_whitespaces=false is written for BPE)")
    if not m.byte_fallback:
        raise ValueError("cannot write tokenizer.json: a sentencepiece BPE model without byte fallback (HF's BPE "
                         "marks unknown characters differently)")
    if any(p.type == UNUSED for p in m.pieces):
        raise ValueError("cannot write tokenizer.json: sentencepiece re-segments unused pieces, which HF's BPE cannot")
    _check_user_defined(m)
    merges = bpe_merges(m)
    _check_bpe_ties(m, merges)
    normalizer = [{"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]
    decoder = [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
               {"type": "Fuse"}]
    if m.add_dummy_prefix:
        normalizer.insert(0, {"type": "Prepend", "prepend": "\u2581"})
        decoder.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    unk = next((p.piece for p in m.pieces if p.type == UNKNOWN), None)
    return {
        "version": "1.0",
        **_limits(tok),
        "added_tokens": _added_tokens(tok, m),
        "normalizer": {"type": "Sequence", "normalizers": normalizer},
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": decoder},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
            "vocab": {p.piece: i for i, p in enumerate(m.pieces)},
            "merges": merges,
        },
    }


def _check_user_defined(m) -> None:
    """sentencepiece finds user-defined pieces inside the text after its dummy prefix ("[REF] b" is
    ▁ [REF] ▁b); tokenizers' added tokens split the text first and each part gets its own prefix
    ([REF] ▁b), and a normalized added token is matched with the prefix on it. No tokenizer.json
    gives sentencepiece's ids on a text holding one."""
    user = [p.piece for p in m.pieces if p.type == USER_DEFINED]
    if user and m.add_dummy_prefix:
        raise ValueError(f"cannot write tokenizer.json: the user-defined pieces ({', '.join(map(repr, user[:3]))}, ...) "
                         "get no dummy prefix after them in sentencepiece, and one in tokenizers (an added token splits "
                         "the text before the prefix is added)")


def _check_bpe_ties(m, merges: list[list[str]]) -> None:
    """Refuses a model where two different pieces of one score could compete for overlapping
    pairs (sentencepiece takes the leftmost, HF the lower rank). Runs of one character (Mistral's
    '▁▁', '▁▁▁▁', ... all share a score) can only compete with each other: for them the two rules
    are run side by side on every run length that matters, and must agree."""
    by_score: dict[float, list[str]] = {}
    for p in m.pieces:
        if p.type == NORMAL and len(p.piece) > 1:
            by_score.setdefault(p.score, []).append(p.piece)
    rank = {(a, b): r for r, (a, b) in enumerate(merges)}
    for score, pieces in by_score.items():
        if len(pieces) < 2:
            continue
        runs: dict[str, set[int]] = {}
        for piece in pieces:
            if len(set(piece)) != 1:
                raise ValueError(f"cannot write tokenizer.json: the pieces {pieces[:3]} share the score {score}; "
                                 "sentencepiece breaks such ties by position, HF's BPE by rank")
            runs.setdefault(piece[0], set()).add(len(piece))
        for c, lengths in runs.items():
            for n in range(2, 2 * max(lengths) + 2):
                if _merge_run(n, lambda a, b: 0 if a + b in lengths else None) != \
                        _merge_run(n, lambda a, b: rank.get((c * a, c * b)) if a + b in lengths else None):
                    raise ValueError(f"cannot write tokenizer.json: a run of {n} {c!r} is merged differently by "
                                     "sentencepiece (leftmost of equal scores) and HF's BPE (lowest rank)")


def _merge_run(n: int, priority) -> list[int]:
    """The pieces (as lengths) a run of n equal characters ends as, merging the adjacent pair of
    lowest priority(a, b) (None: no merge), the leftmost of equals."""
    run = [1] * n
    while True:
        best = min(((priority(a, b), i) for i, (a, b) in enumerate(zip(run, run[1:])) if priority(a, b) is not None),
                   default=None)
        if best is None:
            return run
        i = best[1]
        run[i:i + 2] = [run[i] + run[i + 1]]


def _primitive_root(s: str) -> str:
    k = (s + s).find(s, 1)
    return s[:k]


def unigram_tie(m) -> tuple[str, list[str]] | None:
    """A text on which the unigram model's best segmentation is one of several of equal score,
    found among runs of a repeated string r (r^i and r^j both pieces, i != j): the best pieces of
    r^(i+j) are [r^i, r^j], and [r^j, r^i] scores the same. None if there is no such run.

    sentencepiece sums scores in float32 and HF's Unigram in float64, so which of two equal
    segmentations wins depends on rounding and on the text before it: such a model cannot be
    written as a tokenizer.json that gives sentencepiece's ids (21 dashes in sentencepiece's own
    test model: [--]*10 + [-] against [-] + [--]*10)."""
    scores = {p.piece: p.score for p in m.pieces if p.type in (NORMAL, USER_DEFINED)}
    if not scores:
        return None
    unk_score = min(scores.values()) - 10.0
    powers: dict[str, set[int]] = {}
    for piece in scores:
        root = _primitive_root(piece)
        if root != piece:  # a power r^k, k >= 2; r itself counts if it is a piece
            powers.setdefault(root, {1} if root in scores else set()).add(len(piece) // len(root))
    for root, ks in powers.items():
        if len(ks) < 2:
            continue
        ks = sorted(ks)[:12]
        for a in ks:
            for b in ks:
                if a < b:
                    text = root * (a + b)
                    best = _best_segmentation(text, scores, unk_score)
                    if len(best) == 2 and len(best[0]) != len(best[1]):
                        return text, best
    return None


def _best_segmentation(text: str, scores: dict, unk_score: float) -> list[str]:
    best: list = [(0.0, 0)] + [None] * len(text)  # (score, start) of the best path ending at each position
    for start in range(len(text)):
        if best[start] is None:
            continue
        for end in range(start + 1, len(text) + 1):
            s = scores.get(text[start:end])
            if s is None and end == start + 1:
                s = unk_score
            if s is not None:
                cand = best[start][0] + s
                if best[end] is None or cand > best[end][0]:
                    best[end] = (cand, start)
    out, end = [], len(text)
    while end > 0:
        start = best[end][1]
        out.append(text[start:end])
        end = start
    return out[::-1]


def to_hf(tok, *, allow_ties: bool = False) -> dict:
    """A Hugging Face tokenizer.json (as a dict) for a unigram or BPE model; ValueError for a model
    tokenizers cannot reproduce. allow_ties=True writes a unigram model with equal-score
    segmentations anyway (what transformers' converters write: the ids differ on some texts)."""
    m = tok.model
    if m.model_type == BPE:
        return _bpe_to_hf(tok, m.model if hasattr(m, "model") and isinstance(m.model, ModelFile) else m)
    if m.model_type != UNIGRAM:
        raise ValueError("only unigram and BPE sentencepiece models can be written as Hugging Face tokenizer.json")
    _check_user_defined(m.model if hasattr(m, "model") and isinstance(m.model, ModelFile) else m)
    tie = unigram_tie(m.model if hasattr(m, "model") and isinstance(m.model, ModelFile) else m)
    if tie is not None and not allow_ties:
        text, pieces = tie
        raise ValueError(f"cannot write tokenizer.json: {text!r} has segmentations of equal score ({pieces} and "
                         f"{pieces[::-1]}); sentencepiece chooses between them by float32 rounding, HF's Unigram by "
                         "float64, so the ids would differ on some texts (tokenforge.spm.files.save_hf(tok, path, "
                         "allow_ties=True) writes it anyway)")
    if not m.escape_whitespaces or m.treat_whitespace_as_suffix:
        raise ValueError("Hugging Face's Metaspace needs escape_whitespaces and no whitespace suffix")
    steps = []
    if m.precompiled_charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(m.precompiled_charsmap).decode("ascii")})
    if m.remove_extra_whitespaces:
        steps += [_COLLAPSE, _STRIP]
    # Metaspace's "always" adds '▁' only to a text that does not start with one (a space), and
    # sentencepiece to every text: a text that may start with a space gets it from Prepend.
    prepend = m.add_dummy_prefix and not m.remove_extra_whitespaces
    if prepend:
        steps.append(_PREPEND)
    normalizer = None if not steps else steps[0] if len(steps) == 1 else {"type": "Sequence", "normalizers": steps}
    # split=false: sentencepiece segments the whole text, and pieces may hold '▁' inside ("▁in▁the")
    scheme = "always" if m.add_dummy_prefix and not prepend else "never"
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": False}
    special = [
        {"id": i, "content": p.piece, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
        for i, p in enumerate(m.pieces) if p.type in (UNKNOWN, CONTROL)
    ]
    return {
        "version": "1.0",
        **_limits(tok),
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
    prepend = bool(rest) and rest[-1] == _PREPEND
    if prepend:
        rest = rest[:-1]
    if rest[:2] == [_COLLAPSE, _STRIP]:
        remove_ws, rest = True, rest[2:]
    if rest:
        fail("normalizer", f"unsupported step {rest[0].get('type')!r} (supported: Precompiled, then the whitespace Replace steps)")
    pre = obj.get("pre_tokenizer") or {}
    if pre.get("type") != "Metaspace" or pre.get("replacement", "\u2581") != "\u2581":
        fail("pre_tokenizer", f"expected Metaspace with '\u2581', got {pre.get('type')!r}")
    scheme = pre.get("prepend_scheme", "always" if pre.get("add_prefix_space", True) else "never")
    if prepend and scheme != "never":
        fail("pre_tokenizer", f"prepend_scheme {scheme!r} after a Prepend('\u2581') normalizer adds a second '\u2581'")
    if scheme not in ("always", "never"):  # another reader may take it (formats/hf_stages.py does)
        raise UnsupportedComponent(f"{source}: pre_tokenizer: prepend_scheme {scheme!r} is not supported")
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
            add_dummy_prefix=scheme == "always" or prepend,
            remove_extra_whitespaces=remove_ws,
        )
    )


def save_hf(tok, path, *, allow_ties: bool = False) -> None:
    """Writes tok as tokenizer.json (see to_hf)."""
    from ..outputs import write_atomic

    obj = to_hf(tok, allow_ties=allow_ties)
    for n, step in enumerate(obj["normalizer"].get("normalizers", []) if obj.get("normalizer") else []):
        if step == _STRIP:  # Oniguruma's ^ and $ are line anchors: strip the text's ends only
            obj["normalizer"]["normalizers"][n] = _STRIP_ENDS
    if obj.get("normalizer") == _STRIP:
        obj["normalizer"] = _STRIP_ENDS
    write_atomic(path, json.dumps(obj, ensure_ascii=False, indent=1).encode("utf-8"))


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
