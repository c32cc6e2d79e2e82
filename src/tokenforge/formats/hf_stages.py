"""Hugging Face `tokenizer.json`, any combination of components, read into the one Tokenizer's stages.

Each component maps onto the tokenforge stage of the same name (normalizers/, pre_tokenizers/,
post_processors/, decoders/ read tokenizer.json's shapes themselves); the model onto models.ByteBPE
(byte-level BPE: native, fused with its split pattern where the pre-tokenizer allows), models.BPE
(any other BPE, every option), models.WordPiece, models.WordLevel, or models.SentencePiece (Unigram,
run by the native sentencepiece lattice over each piece). Added tokens keep all their flags and are
matched as tokenizers matches them (allowed_special="all", skip_special_tokens=True by default, as
tokenizers' encode and decode do).

huggingface.py and hf_families.py read the common shapes first (into the same Tokenizer, with
their stricter checks); this module reads what they refuse. Regexes are Oniguruma's in the file:
the constructs that Python's `regex` reads differently are translated or refused (huggingface.py,
_dialect_problem). Not handled: UnicodeScripts, a Unigram model without unk_id, a non-total regex
in a BPE merge... each a ValueError naming its JSON path.
"""

from __future__ import annotations

import copy
import itertools

from .. import _core, decoders, normalizers, post_processors, pre_tokenizers
from ..byte_alphabet import from_chars, missing_bytes
from ..models import BPE, ByteBPE, SentencePiece, WordLevel, WordPiece
from ..models.byte_bpe import Merges, absent_bytes_supported
from ..special import AddedToken
from ..spm import model_file as mf
from ..stage import StageError
from ..tokenizer import Tokenizer
from . import huggingface
from ._common import added_token_id, check_hf_envelope, fail, hf_limits_json, ignored_parts, malformed_is_value_error


def _translate_regexes(source, node, where: str) -> None:
    """Oniguruma regexes of the file -> Python's `regex`, in place; refused where they differ."""
    from .huggingface import _FROM_HF, _dialect_problem

    if isinstance(node, dict):
        pat = node.get("pattern")
        if isinstance(pat, dict) and isinstance(pat.get("Regex"), str):
            problem = _dialect_problem(pat["Regex"])
            if problem:
                fail(source, f"{where}.pattern", problem)
            pat["Regex"] = _FROM_HF.get(pat["Regex"], pat["Regex"])
        for key, value in node.items():
            if key != "pattern" and isinstance(value, (dict, list)):
                _translate_regexes(source, value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _translate_regexes(source, value, f"{where}[{i}]")


def _has(node, kind: str) -> bool:
    if isinstance(node, dict):
        return node.get("type") == kind or any(_has(v, kind) for v in node.values() if isinstance(v, (dict, list)))
    if isinstance(node, list):
        return any(_has(v, kind) for v in node)
    return False


def _stage(source, fn, node, where):
    try:
        return fn(node, where)
    except StageError as e:
        fail(source, None, str(e))
    except (TypeError, ValueError, KeyError) as e:
        fail(source, where, str(e))


def _load(path, obj, **overrides):
    """The Tokenizer of any tokenizer.json whose components tokenforge has."""
    source = path
    ignore = ignored_parts(overrides)
    if overrides:
        raise ValueError(f"{source}: a tokenizer.json takes no overrides ({', '.join(overrides)}); only ignore=")
    check_hf_envelope(source, obj, ignore)
    # the stages' nodes are rewritten below: copy those, not the whole file (its vocabulary and
    # merges are most of it; copying them took longer than the rest of loading)
    obj = {k: copy.deepcopy(v) if k in ("normalizer", "pre_tokenizer", "decoder") else v for k, v in obj.items()}
    for key in ("normalizer", "pre_tokenizer", "decoder"):
        _translate_regexes(source, obj.get(key), key)
    model_node = obj.get("model")
    if not isinstance(model_node, dict):
        fail(source, "model", "missing or not an object")
    added = _added_tokens(source, obj.get("added_tokens") or [])
    byte_level = _has(obj.get("pre_tokenizer"), "ByteLevel") or _has(obj.get("normalizer"), "ByteLevel")
    model = _model(source, model_node, byte_level, {t.content for t in added})
    # tokenizers keeps the id of an added token that is in the model's vocabulary and numbers the
    # others itself, in file order; a file that says otherwise is refused (its ids would differ).
    huggingface.check_added_ids(source, obj.get("added_tokens") or [], _file_vocab(obj, model))
    normalizer = _stage(source, normalizers.from_dict, obj.get("normalizer"), "normalizer")
    pre = _stage(source, pre_tokenizers.from_dict, obj.get("pre_tokenizer"), "pre_tokenizer")
    post = None if "post_processor" in ignore else _stage(source, post_processors.from_dict, obj.get("post_processor"),
                                                          "post_processor")
    decoder = None if "decoder" in ignore else _stage(source, decoders.from_dict, obj.get("decoder"), "decoder")
    if "decoder" in ignore and isinstance(model, ByteBPE):
        decoder = decoders.ByteLevel()
    name = (path.parent.name if path.stem == "tokenizer" else path.stem) or "tokenizer"
    try:
        return Tokenizer(model, normalizer=normalizer, pre_tokenizer=pre, post_processor=post, decoder=decoder,
                         added_tokens=added, allowed_special="all", disallowed_special=(), skip_special_tokens=True,
                         name=name)
    except (TypeError, ValueError) as e:
        fail(source, None, str(e))


load = malformed_is_value_error(_load)  # the entry point: a wrong JSON type anywhere names the file


def _file_vocab(obj: dict, model) -> dict:
    """The vocabulary as tokenizers sees it: model.vocab's keys as written in the file (DeepSeek V3
    writes its special tokens there as plain text, not in the byte alphabet), else the model's."""
    vocab = obj.get("model", {}).get("vocab") if isinstance(obj.get("model"), dict) else None
    if isinstance(vocab, dict):
        return vocab
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        return {entry[0]: i for i, entry in enumerate(vocab) if isinstance(entry, list) and entry}
    return dict(model.get_vocab() if hasattr(model, "get_vocab") else model.vocab)


def _added_tokens(source, tokens) -> list[AddedToken]:
    if not isinstance(tokens, list):
        fail(source, "added_tokens", "not a list")
    out, seen = [], set()
    for n, t in enumerate(tokens):
        where = f"added_tokens[{n}]"
        i = added_token_id(source, where, t)
        flags = {}
        for flag, default in (("special", False), ("single_word", False), ("lstrip", False), ("rstrip", False),
                              ("normalized", True)):
            value = t.get(flag, default)
            if not isinstance(value, bool):
                fail(source, f"{where}.{flag}", f"expected true or false, got {value!r}")
            flags[flag] = value
        for key in t:
            if key not in ("id", "content", *flags):
                fail(source, f"{where}.{key}", "unknown field of an added token")
        if t["content"] in seen:
            fail(source, where, f"{t['content']!r} appears twice")
        seen.add(t["content"])
        out.append(AddedToken(t["content"], i, **flags))
    return out


def _vocab_dict(source, vocab) -> dict[str, int]:
    if not isinstance(vocab, dict):
        fail(source, "model.vocab", "missing or not an object")
    ids = vocab.values()
    if set(map(type, ids)) == {int} and min(ids) >= 0 and len(set(ids)) == len(ids):  # (the loop names a problem)
        return dict(vocab)
    seen: dict[int, str] = {}
    for s, i in vocab.items():
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            fail(source, f"model.vocab[{s!r}]", f"invalid id {i!r}")
        if i in seen:
            fail(source, f"model.vocab[{s!r}]", f"duplicate id {i} (also {seen[i]!r})")
        seen[i] = s
    return dict(vocab)


def _merges(source, merges) -> list[tuple[str, str]]:
    if not isinstance(merges, list):
        fail(source, "model.merges", "missing or not a list")
    # "left right" strings, or [left, right] lists, by whole columns; the loop names a bad one
    kinds = set(map(type, merges))
    parts = [m.split(" ") for m in merges] if kinds == {str} else merges if kinds == {list} else None
    if parts and set(map(len, parts)) == {2}:
        flat = set(itertools.chain.from_iterable(parts))
        if set(map(type, flat)) == {str} and "" not in flat:
            return list(map(tuple, parts))
    out = []
    for n, m in enumerate(merges):
        parts = m.split(" ") if isinstance(m, str) else m if isinstance(m, list) and all(isinstance(x, str) for x in m) else None
        if parts is None or len(parts) != 2 or not all(parts):
            fail(source, f"model.merges[{n}]", f"expected 'left right' or [left, right], got {m!r:.80}")
        out.append((parts[0], parts[1]))
    return out


_MODEL_KEYS = {
    "BPE": {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
            "byte_fallback", "ignore_merges", "vocab", "merges"},
    "WordPiece": {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"},
    "WordLevel": {"type", "vocab", "unk_token"},
    "Unigram": {"type", "unk_id", "vocab", "byte_fallback"},
}


def _model(source, node: dict, byte_level: bool, added: set):
    kind = node.get("type", "BPE" if "merges" in node else None)
    if not isinstance(kind, str) or kind not in _MODEL_KEYS:
        fail(source, "model.type", f"{kind!r} is not supported (tokenforge reads BPE, WordPiece, WordLevel, Unigram)")
    for key in node:
        if key not in _MODEL_KEYS[kind]:
            fail(source, f"model.{key}", f"unknown field of a {kind} model")
    try:
        if kind == "BPE":
            return _bpe(source, node, byte_level, added)
        if kind == "WordPiece":
            vocab = _vocab_dict(source, node.get("vocab"))
            return WordPiece(vocab, unk_token=node.get("unk_token", "[UNK]"),
                             continuing_subword_prefix=node.get("continuing_subword_prefix", "##"),
                             max_input_chars_per_word=node.get("max_input_chars_per_word", 100), special_tokens=())
        if kind == "WordLevel":
            vocab = _vocab_dict(source, node.get("vocab"))
            return WordLevel(vocab, unk_token=node.get("unk_token", "<unk>"), special_tokens=())
        return _unigram(source, node)
    except ValueError as e:
        if str(e).startswith(str(source)):
            raise
        fail(source, "model", str(e))


def _plain_byte_level(node, added: set):
    """The ByteBPE of a plain byte-level BPE node (int ids, once each; tokens outside GPT-2's
    alphabet are added tokens or decode-only (ByteBPE.decode_only); merges of tokens into tokens, no
    pair twice), read natively over whole tables; None for anything else, which the reading below
    handles (and names)."""
    vocab, merges = node.get("vocab"), node.get("merges", [])
    if not (isinstance(vocab, dict) and isinstance(merges, list) and merges) or node.get("continuing_subword_prefix") \
            or node.get("end_of_word_suffix") or node.get("byte_fallback") or node.get("dropout") not in (None, 0, 0.0):
        return None
    outside = {s: vocab[s] for s in added if s in vocab and from_chars(s) is None}
    decode_only: dict[int, str] = {}
    ranks = _core.byte_level_vocab(vocab, outside, decode_only)  # (None for an id listed twice, too)
    if ranks is None:
        return None
    if not absent_bytes_supported(missing_bytes(ranks), bool(node.get("ignore_merges"))):
        return None
    rules = _core.byte_level_merges(merges, ranks)
    return None if rules is None else ByteBPE(ranks, Merges(rules), bool(node.get("ignore_merges", False)), decode_only)


def _bpe(source, node, byte_level: bool, added: set):
    fast = _plain_byte_level(node, added) if byte_level else None
    if fast is not None:
        return fast
    vocab = _vocab_dict(source, node.get("vocab"))
    if not byte_level and not node.get("continuing_subword_prefix") and isinstance(node.get("merges"), list):
        # plain-text tokens (Llama-2-style files): the rules read natively, every merge's parts and
        # join looked up at once; anything unusual takes the reading below, which names it
        packed = _core.text_bpe_merges(node["merges"], vocab)
        if packed is not None:
            return _text_bpe(node, vocab, Merges(packed))
    merges = _merges(source, node.get("merges", []))
    if not vocab.keys() >= {part for pair in merges for part in pair}:
        for n, (a, b) in enumerate(merges):
            for part in (a, b):
                if part not in vocab:
                    fail(source, f"model.merges[{n}]", f"{part!r} is not in model.vocab")
    dropout = node.get("dropout")
    plain = not (node.get("continuing_subword_prefix") or node.get("end_of_word_suffix") or node.get("byte_fallback")
                 or dropout not in (None, 0, 0.0))
    if byte_level and plain:
        as_bytes = {s: from_chars(s) for s in vocab}
        # every vocabulary entry spelled in the byte alphabet is the model's (with ignore_merges a
        # piece can be an added token's entry, as in tokenizers); other spellings are added tokens
        # or decode-only (no merge makes them)
        model_tokens = {s: b for s, b in as_bytes.items() if b is not None}
        decode_only = {vocab[s]: s for s, b in as_bytes.items() if b is None and s not in added}
        if absent_bytes_supported(missing_bytes(set(model_tokens.values())), bool(node.get("ignore_merges"))):
            ranks = {b: vocab[s] for s, b in model_tokens.items()}
            if len(ranks) == len(model_tokens) and len(set(vocab.values())) == len(vocab):
                try:
                    pairs = [(as_bytes[a], as_bytes[b]) for a, b in merges]
                    if all(a is not None and b is not None and a + b in ranks for a, b in pairs):
                        return ByteBPE(ranks, pairs, bool(node.get("ignore_merges", False)), decode_only)
                except KeyError:
                    pass
    return _text_bpe(node, vocab, merges)


def _text_bpe(node, vocab, merges):
    return BPE(vocab, merges, unk_token=node.get("unk_token"), continuing_subword_prefix=node.get("continuing_subword_prefix"),
               end_of_word_suffix=node.get("end_of_word_suffix"), fuse_unk=bool(node.get("fuse_unk", False)),
               byte_fallback=bool(node.get("byte_fallback", False)), ignore_merges=bool(node.get("ignore_merges", False)),
               dropout=node.get("dropout"), special_tokens=())


def _unigram(source, node):
    vocab = node.get("vocab")
    if not isinstance(vocab, list) or not vocab:
        fail(source, "model.vocab", "missing or empty")
    unk_id = node.get("unk_id")
    if not (isinstance(unk_id, int) and not isinstance(unk_id, bool) and 0 <= unk_id < len(vocab)):
        fail(source, "model.unk_id", f"{unk_id!r} is not the id of a piece of model.vocab (a Unigram model without "
                                     "an unknown piece is not supported)")
    byte_fallback = bool(node.get("byte_fallback", False))
    pieces = []
    for n, entry in enumerate(vocab):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and entry[0]
                and isinstance(entry[1], (int, float)) and not isinstance(entry[1], bool)):
            fail(source, f"model.vocab[{n}]", f"expected [piece, score], got {entry!r:.80}")
        piece, score = entry
        if n == unk_id:
            kind = mf.UNKNOWN
        elif byte_fallback and len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            kind = mf.BYTE
        else:
            kind = mf.NORMAL
        pieces.append(mf.Piece(piece, float(score), kind))
    # The pieces the pre-tokenizer gives are segmented as they are: no normalization, no "▁" rules.
    return SentencePiece(mf.ModelFile(pieces=pieces, model_type=mf.UNIGRAM, byte_fallback=byte_fallback,
                                      add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False))


# --------------------------------------------------------------------------------------------------
# Writing: any Tokenizer whose stages are Hugging Face's components


def _check_json_stage(d, where: str) -> None:
    """Stages tokenforge has and tokenizers lacks are refused by name; regexes must read the same in
    Oniguruma."""
    from .huggingface import _TO_HF, _dialect_problem

    if isinstance(d, dict):
        kind = d.get("type")
        if kind in ("Regex", "None", "CollapseWhitespace", "Model", "SentencePiece"):
            raise ValueError(f"cannot write tokenizer.json: {where} is tokenforge's {kind!r}, which tokenizers does not have")
        if kind == "StripAccents" and d.get("decompose"):
            raise ValueError(f"cannot write tokenizer.json: {where}: StripAccents(decompose=True) (write NFD then StripAccents)")
        pat = d.get("pattern")
        if isinstance(pat, dict) and isinstance(pat.get("Regex"), str):
            pat["Regex"] = _TO_HF.get(pat["Regex"], pat["Regex"])
            problem = _dialect_problem(pat["Regex"])
            if problem:
                raise ValueError(f"cannot write tokenizer.json: {where}.pattern: {problem}")
        for key, value in d.items():
            if isinstance(value, (dict, list)):
                _check_json_stage(value, f"{where}.{key}")
    elif isinstance(d, list):
        for i, value in enumerate(d):
            _check_json_stage(value, f"{where}[{i}]")


def _model_json(model) -> dict:
    from ..byte_alphabet import to_chars

    if isinstance(model, ByteBPE):
        merges = model.merges_given
        if merges is None:
            from .huggingface import all_pair_merges

            try:
                merges = model.merges
            except ValueError:
                merges = all_pair_merges(model.ranks)
        return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": model.ignore_merges,
                "vocab": dict(sorted(model.vocab.items(), key=lambda kv: kv[1])),
                "merges": [[to_chars(a), to_chars(b)] for a, b in merges]}
    if isinstance(model, BPE):
        return {"type": "BPE", "dropout": model.dropout, "unk_token": model.unk_token,
                "continuing_subword_prefix": model.prefix, "end_of_word_suffix": model.suffix, "fuse_unk": model.fuse_unk,
                "byte_fallback": model.byte_fallback, "ignore_merges": model.ignore_merges,
                "vocab": dict(sorted(model.vocab.items(), key=lambda kv: kv[1])), "merges": [list(m) for m in model.merges]}
    if isinstance(model, WordPiece):
        return {"type": "WordPiece", "unk_token": model.unk_token, "continuing_subword_prefix": model.prefix,
                "max_input_chars_per_word": model.max_input_chars_per_word,
                "vocab": dict(sorted(model.vocab.items(), key=lambda kv: kv[1]))}
    if isinstance(model, WordLevel):
        return {"type": "WordLevel", "unk_token": model.unk_token, "vocab": dict(sorted(model.vocab.items(), key=lambda kv: kv[1]))}
    if isinstance(model, SentencePiece):
        m = model.model
        if m.model_type != mf.UNIGRAM or m.precompiled_charsmap or m.add_dummy_prefix or m.remove_extra_whitespaces \
                or m.escape_whitespaces:
            raise ValueError("cannot write tokenizer.json: a sentencepiece model with its own normalizer is written by "
                             "SentencePieceTokenizer's writer (hf_families.py)")
        return {"type": "Unigram", "unk_id": model.unk_id, "byte_fallback": m.byte_fallback,
                "vocab": [[p.piece, p.score] for p in m.pieces]}
    raise ValueError(f"cannot write tokenizer.json: tokenizers has no {getattr(model, 'kind', type(model).__name__)!r} model")


def _regex_as_split(d):
    """tokenforge's Regex stage (a byte-level file read with its pattern: GGUF files, tokenizer.json
    files with added tokens that are not special) as the tokenizers Split that has its pieces."""
    from ..patterns import resolve
    from .huggingface import split_json

    if isinstance(d, dict) and d.get("type") == "Regex":
        return split_json(resolve(d["pattern"]))
    if isinstance(d, dict) and d.get("type") == "Sequence":
        return {**d, "pretokenizers": [_regex_as_split(x) for x in d.get("pretokenizers", [])]}
    return d


def to_json(tok) -> dict:
    """The tokenizer.json object of a Tokenizer made of tokenizers' components."""
    if tok._default_allowed != "all":
        # tokenizers always matches added tokens in the text: a file cannot say "leave them as text"
        if any(t.special for t in tok.added_tokens) and tok._default_disallowed != "all":
            raise ValueError("cannot write tokenizer.json: tokenizers would match this tokenizer's special tokens in the "
                             "text, which it leaves as text")
    obj = {
        "version": "1.0", **hf_limits_json(tok),
        "added_tokens": [t.to_dict() for t in sorted(tok.added_tokens, key=lambda t: t.id)],
        "normalizer": None if tok.normalizer is None else tok.normalizer.to_dict(),
        "pre_tokenizer": None if isinstance(tok.pre_tokenizer, pre_tokenizers.NoPreTokenizer) else tok.pre_tokenizer.to_dict(),
        "post_processor": None if tok.post_processor is None else tok.post_processor.to_dict(),
        "decoder": None if tok.decoder is None else tok.decoder.to_dict(),
        "model": _model_json(tok.model),
    }
    obj["pre_tokenizer"] = _regex_as_split(obj["pre_tokenizer"])
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        _check_json_stage(obj[key], key)
    # tokenizers keeps an added token's id only if the token is in model.vocab: put them there
    vocab = obj["model"]["vocab"]
    if isinstance(vocab, dict):
        for t in tok.added_tokens:
            if vocab.get(t.content, t.id) != t.id:
                raise ValueError(f"cannot write tokenizer.json: the added token {t.content!r} ({t.id}) is spelled like "
                                 f"the model's token {vocab[t.content]}")
            vocab.setdefault(t.content, t.id)
    return obj


def save(tok, path) -> None:
    import json

    from ..outputs import write_atomic

    write_atomic(path, json.dumps(to_json(tok), ensure_ascii=False, indent=2).encode("utf-8"))
