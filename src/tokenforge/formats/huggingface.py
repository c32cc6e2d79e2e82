"""Hugging Face `tokenizer.json` for byte-level BPE, both ways.

Reads the two shapes real byte-level files take:
- GPT-2 style: pre_tokenizer ByteLevel (its built-in GPT-2 regex), model BPE;
- Llama-3 style: pre_tokenizer Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)], model
  BPE with `ignore_merges`, added tokens, a NFC/NFD/NFKC/NFKD normalizer or none.

Every field is checked against what tokenforge reproduces exactly; anything else (another model,
normalizer, pre-tokenizer or decoder type, `dropout`, `continuing_subword_prefix`, `byte_fallback`,
`add_prefix_space`, `lstrip` on an added token, ...) is a ValueError naming its JSON path. Components
that only wrap the ids (`post_processor` adding <bos>, `truncation`, `padding`) or only affect
decoding (`decoder`) can be left out on request: `load(path, ignore={"post_processor"})`.

Not handled here: byte fallback. WordPiece, WordLevel, Unigram and BPE without ByteLevel (character-
level, `end_of_word_suffix`) are read and written by hf_families.py (formats/__init__.py dispatches).
Tokens are matched as HF does it, with one difference of policy, not of tokenizer: HF always turns
added tokens in the text into their ids, tokenforge only when allowed (`allowed_special="all"`).
"""

from __future__ import annotations

import json

import regex

from .. import _core, patterns, regex_budget
from ..models.byte_bpe import Merges
from ..outputs import write_atomic
from ..special import AddedToken
from ._common import (CHAR_TO_BYTE, added_token_id, build, check_every_byte, check_hf_envelope, explicit_merges, fail,
                      from_chars, hf_limits_json, ignored_parts, refuse, to_chars)

FORMAT = "huggingface"


_BPE_KEYS = {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
             "byte_fallback", "ignore_merges", "vocab", "merges"}

# Oniguruma (HF) reads `X{1,3}+` as a repeated interval, Python's `regex` and tiktoken as a
# possessive one, so cl100k's pattern is written for HF with an atomic group (same pieces).
CL100K_HF = patterns.CL100K.replace(r"\p{N}{1,3}+", r"(?>\p{N}{1,3})")
# The pre-2024 form of cl100k's pattern, used by Llama 3. It differs from today's at the end of the
# text ("a  \n  ": "  \n" + "  " instead of "  \n  "), so it runs through the engine's general
# matcher, not the cl100k scanner.
LLAMA3 = patterns.LLAMA3
_TOTAL = patterns.TOTAL
_FROM_HF = {CL100K_HF: patterns.CL100K}
_TO_HF = {v: k for k, v in _FROM_HF.items()}
_KNOWN_IN_BOTH = {patterns.GPT2_ORIGINAL, patterns.O200K, CL100K_HF, LLAMA3}
_POSSESSIVE_INTERVAL = regex.compile(r"(?<!\\)\{\d+(?:,\d*)?\}\+")


def _dialect_problem(r: str) -> str | None:
    """A construct that Oniguruma (tokenizers) and Python's `regex` (tokenforge) read differently.

    The named patterns are tested identical in both; in others, the syntax both share is taken to
    mean the same, except for these two differences, which are refused."""
    if r in _KNOWN_IN_BOTH:
        return None
    if _POSSESSIVE_INTERVAL.search(r):
        return "'{n,m}+' is possessive to Python's regex but a repetition to Oniguruma; use an atomic group (?>...)"
    in_class = escaped = False
    for i, c in enumerate(r):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif in_class:
            in_class = c != "]" or r[i - 1] == "[" or r[i - 2 : i] == "[^"
        elif c == "[":
            in_class = True
        elif c == "^" or (c == "$" and not r[:i].endswith(r"\s++")):
            return (f"{c!r} anchors at every line to Oniguruma but at the ends of the text to Python's regex "
                    "(use \\A or \\z)")
    return None


def isolated(pattern: str) -> str:
    """A pattern whose matches are `pattern`'s matches and the gaps between them: HF's `Isolated`."""
    return f"(?:{pattern})|(?s:(?!(?:{pattern})).)+"


def _unisolated(pattern: str) -> str | None:
    n, rest = divmod(len(pattern) - len(isolated("")), 2)
    if n > 0 and not rest and pattern.startswith("(?:"):
        inner = pattern[3 : 3 + n]
        if isolated(inner) == pattern:
            return inner
    return None


# --------------------------------------------------------------------------------------------------
# Reading


def load(path, obj, **overrides):
    source = path
    ignore = ignored_parts(overrides)
    check_hf_envelope(source, obj, ignore)
    model = obj.get("model")
    if not isinstance(model, dict):
        fail(source, "model", "missing or not an object")
    _check_model(source, model)
    normalizer = _normalizer(source, obj.get("normalizer"), "normalizer")
    pattern = _pre_tokenizer(source, obj.get("pre_tokenizer"))
    if "post_processor" not in ignore:
        _check_post_processor(source, obj.get("post_processor"), "post_processor")
    if "decoder" not in ignore:
        _check_decoder(source, obj.get("decoder"), "decoder")
    special = _added_tokens(source, obj.get("added_tokens") or [], normalizer)

    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        fail(source, "model.vocab", "missing or not an object")
    special_ids = {i: s for s, i in special.items()}
    fast = _plain_vocab(vocab, special)
    ranks, token_bytes = (fast, None) if fast is not None else ({}, {})
    for s, i in vocab.items() if fast is None else ():
        where = f"model.vocab[{s!r}]"
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            fail(source, where, f"invalid id {i!r}")
        if i in special_ids:
            if special_ids[i] != s:
                fail(source, where, f"id {i} is the added token {special_ids[i]!r}")
            continue
        if s in special:
            fail(source, where, f"the added token {s!r} has id {special[s]} in added_tokens, {i} here")
        if any(c not in CHAR_TO_BYTE for c in s):  # decode-only (Command-R's emoji): hf_stages keeps them
            refuse(source, where, f"{s!r} is spelled outside GPT-2's alphabet (a decode-only token: not in the "
                                  "byte-level shorthand)")
        b = token_bytes[s] = from_chars(s, source, where)
        ranks[b] = i
    if len(set(ranks.values())) != len(ranks):
        seen: dict[int, str] = {}
        for s, i in vocab.items():
            if i in seen:
                fail(source, f"model.vocab[{s!r}]", f"duplicate id {i} (also {seen[i]!r})")
            seen[i] = s
    check_every_byte(ranks, source, "model.vocab")
    check_added_ids(source, obj.get("added_tokens") or [], vocab)
    if model.get("ignore_merges"):
        for s in special:
            if s in vocab and _piece_spelled(s, pattern) is not None:
                refuse(source, f"model.vocab[{s!r}]", f"with ignore_merges, tokenizers turns the piece "
                       f"{_piece_spelled(s, pattern)!r} into the added token {s!r}; tokenforge makes no special token from text")
    # the pairs carry their ids unless the caller replaces the ranks they were read against
    merges = _merges(source, model.get("merges"), token_bytes, ranks, with_ids="mergeable_ranks" not in overrides)
    # Added tokens that are not special (MPT's runs of spaces): matched in text as the special ones
    # are, but kept by decode, as tokenizers keeps them.
    kept = {t["content"] for t in obj.get("added_tokens") or [] if not t.get("special")}
    added = [AddedToken(s, i, special=False) for s, i in special.items() if s in kept]
    special = {s: i for s, i in special.items() if s not in kept}
    kwargs = dict(pattern=pattern, mergeable_ranks=ranks, special_tokens=special, merges=merges, added_tokens=added,
                  ignore_merges=bool(model.get("ignore_merges", False)), normalizer=normalizer,
                  name=(path.parent.name if path.stem == "tokenizer" else path.stem) or "tokenizer",
                  # tokenizers matches added tokens in the text and skips special ones when decoding
                  allowed_special="all", disallowed_special=(), skip_special_tokens=True)
    return build(source, kwargs, overrides)


def _list(source, node, where: str) -> list:
    if not isinstance(node, list):
        fail(source, where, f"expected a list, got {type(node).__name__}")
    return node


def _check_model(source, model: dict) -> None:
    if model.get("type", "BPE") != "BPE":
        refuse(source, "model.type", f"{model.get('type')!r} is not supported (tokenforge reads byte-level BPE)")
    for key in model:
        if key not in _BPE_KEYS:
            fail(source, f"model.{key}", "unknown field of a BPE model")
    if model.get("dropout") is not None:
        refuse(source, "model.dropout", f"BPE dropout ({model['dropout']}) samples different ids each time; not supported")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            refuse(source, f"model.{key}", f"{model[key]!r} is not supported in byte-level BPE")
    if model.get("byte_fallback"):
        refuse(source, "model.byte_fallback", "byte fallback (<0xNN> tokens) is not supported")
    if not isinstance(model.get("ignore_merges", False), bool):
        fail(source, "model.ignore_merges", "not a boolean")
    # unk_token and fuse_unk are never used: every byte has a token (checked after reading the vocab).


def _plain_vocab(vocab: dict, special: dict[str, int]):
    """The ranks of a vocabulary with nothing to report (int ids, every token spelled in GPT-2's
    alphabet, added tokens in it with their own id), read natively over the whole table; None
    otherwise, and the loop in `load` names the problem."""
    return _core.byte_level_vocab(vocab, special)


def _plain_merges(merges: list, ranks: dict[bytes, int]):
    """Merges written "left right" (or [left, right]) with known parts and no pair twice, read
    natively: their rules in ids (models.byte_bpe.Merges); None otherwise (the loop in `_merges`
    names the problem)."""
    rules = _core.byte_level_merges(merges, ranks)
    return None if rules is None else Merges(rules)


def _merges(source, merges, token_bytes: dict[str, bytes] | None, ranks: dict[bytes, int],
            with_ids: bool = True) -> list[tuple[bytes, bytes]]:
    """The merges as byte pairs; token_bytes maps each vocabulary spelling to its bytes (None: made
    from the ranks); with_ids: the pairs carry their ids in the ranks (byte_bpe.Merges)."""
    if not isinstance(merges, list):
        fail(source, "model.merges", "missing or not a list")
    fast = _plain_merges(merges, ranks) if merges and with_ids else None
    if fast is not None:
        return fast
    if token_bytes is None:  # the vocabulary was read natively: the spellings are the ranks' bytes
        token_bytes = {to_chars(b): b for b in ranks}
    out = []
    for n, m in enumerate(merges):
        if isinstance(m, str):
            parts = m.split(" ")
        elif isinstance(m, list) and all(isinstance(x, str) for x in m):
            parts = m
        else:
            parts = None
        if parts is None or len(parts) != 2 or not all(parts):
            fail(source, f"model.merges[{n}]", f"expected 'left right' or [left, right], got {m!r:.80}")
        a, b = parts
        for part in (a, b, a + b):
            if part not in token_bytes:
                fail(source, f"model.merges[{n}]", f"{part!r} is not in model.vocab")
        out.append((token_bytes[a], token_bytes[b]))
    if len(set(out)) != len(out):
        seen = set()
        for n, pair in enumerate(out):
            if pair in seen:
                fail(source, f"model.merges[{n}]", f"the merge {to_chars(pair[0])!r} + {to_chars(pair[1])!r} appears twice")
            seen.add(pair)
    return out


def _normalizer(source, node, where: str) -> str | None:
    """The Unicode normalization form of a normalizer (a Sequence of forms composes to one)."""
    if node is None:
        return None
    kind = node.get("type") if isinstance(node, dict) else None
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return kind
    if kind == "Sequence":
        forms = [_normalizer(source, n, f"{where}.normalizers[{i}]")
                 for i, n in enumerate(_list(source, node.get("normalizers") or [], f"{where}.normalizers"))]
        forms = [f for f in forms if f]
        if not forms:
            return None
        # NFKC(NFD(x)) == NFKC(x), NFD(NFKC(x)) == NFKD(x): compatibility if any step has it, then
        # composed or decomposed as the last step leaves it.
        return ("NFK" if any("K" in f for f in forms) else "NF") + forms[-1][-1]
    refuse(source, where, f"normalizer {kind!r} is not supported (tokenforge applies NFC, NFD, NFKC or NFKD)")


def _byte_level(source, node, where: str, *, use_regex: bool) -> None:
    if node.get("add_prefix_space"):
        refuse(source, f"{where}.add_prefix_space", "true is not supported (tokenforge adds no space before the text)")
    if node.get("use_regex", True) != use_regex:
        refuse(source, f"{where}.use_regex", f"must be {str(use_regex).lower()} here: "
               + ("ByteLevel after a Split must not split again" if not use_regex else "ByteLevel without a regex does not split the text"))


def _pre_tokenizer(source, node, where: str = "pre_tokenizer") -> str:
    """The split pattern that gives the pieces the pre-tokenizer gives."""
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "ByteLevel":
        _byte_level(source, node, where, use_regex=True)
        return patterns.GPT2_ORIGINAL  # the regex ByteLevel uses; the native GPT-2 scanner runs it
    if kind == "Sequence":
        steps = _list(source, node.get("pretokenizers") or [], f"{where}.pretokenizers")
        if len(steps) == 1:
            return _pre_tokenizer(source, steps[0], f"{where}.pretokenizers[0]")
        if len(steps) == 2 and isinstance(steps[0], dict) and steps[0].get("type") == "Split":
            last = f"{where}.pretokenizers[1]"
            if not (isinstance(steps[1], dict) and steps[1].get("type") == "ByteLevel"):
                refuse(source, last, "a Split must be followed by ByteLevel(use_regex=false)")
            _byte_level(source, steps[1], last, use_regex=False)
            return _split(source, steps[0], f"{where}.pretokenizers[0]")
        refuse(source, where, "tokenforge reads ByteLevel, or Sequence[Split, ByteLevel(use_regex=false)]")
    if node is None:
        refuse(source, where, "missing: without ByteLevel this is not a byte-level BPE tokenizer")
    refuse(source, where, f"pre-tokenizer {kind!r} is not supported (tokenforge reads ByteLevel, "
                          "or Sequence[Split, ByteLevel(use_regex=false)])")


def _split(source, node, where: str) -> str:
    pat = node.get("pattern")
    if isinstance(pat, dict) and isinstance(pat.get("Regex"), str):
        r = pat["Regex"]
    elif isinstance(pat, dict) and isinstance(pat.get("String"), str) and pat["String"]:
        r = regex.escape(pat["String"])
    else:
        fail(source, f"{where}.pattern", f"expected {{'Regex': ...}} or {{'String': ...}}, got {pat!r:.80}")
    problem = _dialect_problem(r)
    if problem:
        fail(source, f"{where}.pattern", problem)
    r = _FROM_HF.get(r, r)
    try:
        regex.compile(r)
    except regex.error as e:
        fail(source, f"{where}.pattern", f"the regex does not compile: {e}")
    behavior, invert = node.get("behavior"), node.get("invert", False)
    if behavior == "Isolated" and not invert:
        return r if r in _TOTAL or _unisolated(r) else isolated(r)
    if behavior == "Removed" and invert:  # keeps the matches only: tokenforge's (tiktoken's) rule
        return r
    refuse(source, where, f"Split with behavior {behavior!r} and invert={invert} is not supported "
                          "(tokenforge reads Isolated, or Removed with invert)")


def _check_post_processor(source, node, where: str) -> None:
    kind = node.get("type") if isinstance(node, dict) else None
    if node is None or kind == "ByteLevel":  # ByteLevel only adjusts offsets
        return
    if kind == "Sequence":
        for i, n in enumerate(_list(source, node.get("processors") or [], f"{where}.processors")):
            _check_post_processor(source, n, f"{where}.processors[{i}]")
        return
    if kind == "TemplateProcessing":
        single = _list(source, node.get("single") or [], f"{where}.single")
        added = []
        for i, piece in enumerate(single):
            if not (isinstance(piece, dict) and len(piece) == 1 and isinstance(next(iter(piece.values())), dict)):
                fail(source, f"{where}.single[{i}]", f"expected {{'Sequence' or 'SpecialToken': {{...}}}}, got {piece!r:.80}")
            if "SpecialToken" in piece:
                added.append(piece["SpecialToken"].get("id"))
        if not added:
            return  # a template that adds nothing to a single text
        refuse(source, where, f"TemplateProcessing adds {added} around every text, which tokenforge does not do; "
                              "load with ignore={'post_processor'} to leave it out (the ids are then those of "
                              "tokenizers' encode(text, add_special_tokens=False))")
    refuse(source, where, f"post-processor {kind!r} is not supported; load with ignore={{'post_processor'}} to leave it out")


def _check_decoder(source, node, where: str) -> None:
    kind = node.get("type") if isinstance(node, dict) else None
    if kind == "ByteLevel":
        return
    if kind == "Sequence" and node.get("decoders"):
        for i, n in enumerate(_list(source, node["decoders"], f"{where}.decoders")):
            _check_decoder(source, n, f"{where}.decoders[{i}]")
        return
    refuse(source, where, f"decoder {kind!r} is not supported: tokenforge decodes byte-level tokens to their bytes, "
                          "as the ByteLevel decoder does; load with ignore={'decoder'} to accept that")


def _added_tokens(source, tokens, normalizer) -> dict[str, int]:
    if not isinstance(tokens, list):
        fail(source, "added_tokens", "not a list")
    special: dict[str, int] = {}
    ids_seen: set[int] = set()
    kinds: dict[str, bool] = {}
    for n, t in enumerate(tokens):
        where = f"added_tokens[{n}]"
        i = added_token_id(source, where, t)
        for flag in ("single_word", "lstrip", "rstrip"):
            if t.get(flag):
                refuse(source, f"{where}.{flag}", f"true is not supported (tokenforge matches {t['content']!r} exactly)")
        if t.get("normalized") and normalizer is not None:
            refuse(source, f"{where}.normalized", f"true with a normalizer: HF matches {t['content']!r} in the "
                                                  "normalized text, tokenforge in the text as given")
        if t["content"] in special:
            fail(source, where, f"{t['content']!r} appears twice")
        if i in ids_seen:
            fail(source, f"{where}.id", f"duplicate id {i}")
        ids_seen.add(i)
        special[t["content"]] = i
        kinds[t["content"]] = bool(t.get("normalized"))
    # HF finds the tokens that are not `normalized` first, then the others in what is left; one
    # pass finds the same tokens unless a token of one kind overlaps a token of the other.
    plain = [s for s, k in kinds.items() if not k]
    for s in (s for s, k in kinds.items() if k):
        for p in plain:
            if _overlap(s, p):
                refuse(source, "added_tokens", f"{s!r} (normalized) overlaps {p!r} (not normalized); not supported")
    return special


def check_added_ids(source, tokens, vocab: dict) -> None:
    """tokenizers keeps the id of an added token only if the token is in model.vocab; it numbers
    the others itself, in file order, from len(model.vocab) (or one past the largest so far)."""
    top = -1  # the largest id assigned so far
    for n, t in enumerate(tokens):
        if t["content"] in vocab:
            top = max(top, vocab[t["content"]])
            continue
        hf_id = top + 1 if top >= len(vocab) else len(vocab)
        if t["id"] != hf_id:
            fail(source, f"added_tokens[{n}].id", f"{t['id']}, but tokenizers numbers {t['content']!r} {hf_id} "
                                                  "(a token not in model.vocab gets the next free number)")
        top = max(top, hf_id)


def _piece_spelled(s: str, pattern: str) -> str | None:
    """The text of a piece of `pattern` whose byte-level spelling is s, if there can be one (the
    file's own pattern on the file's own tokens: in bounded time, both may be hostile)."""
    try:
        text = bytes(CHAR_TO_BYTE[c] for c in s).decode("utf-8")
    except (KeyError, UnicodeDecodeError):
        return None
    return text if regex_budget.fullmatch(regex.compile(f"(?:{pattern})"), text) else None


def _overlap(a: str, b: str) -> bool:
    return a in b or b in a or any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


# --------------------------------------------------------------------------------------------------
# Writing


def to_json(tok) -> dict:
    """The tokenizer.json object for a tokenforge tokenizer (loadable by `tokenizers`)."""
    from .. import decoders

    if tok.post_processor is not None or not isinstance(tok.decoder, decoders.ByteLevel):
        raise ValueError("the byte-level shorthand has no post-processor and the ByteLevel decoder (hf_stages writes the rest)")
    state = tok._state()
    ranks = state["mergeable_ranks"]
    try:
        merges, ignore_merges = explicit_merges(tok)
    except ValueError:  # tiktoken ranks with tokens that no merge of lower-ranked ones makes (Llama 3)
        merges, ignore_merges = all_pair_merges(ranks), True
    pattern = state["pattern"]
    vocab = {to_chars(b): i for b, i in ranks.items()}
    # Special tokens go in model.vocab too: tokenizers keeps an added token's id only if it is there.
    for s, i in state["special_tokens"].items():
        if s in vocab:
            raise ValueError(f"cannot write tokenizer.json: the special token {s!r} is spelled like a byte-level token")
        if ignore_merges and _piece_spelled(s, pattern) is not None:
            raise ValueError(f"cannot write tokenizer.json: with ignore_merges, tokenizers would turn the piece "
                             f"{_piece_spelled(s, pattern)!r} into the special token {s!r}")
        vocab[s] = i
    if pattern in (patterns.GPT2, patterns.GPT2_ORIGINAL):
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    else:
        pre = {"type": "Sequence", "pretokenizers": [
            split_json(pattern),
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ]}
    return {
        "version": "1.0",
        **hf_limits_json(tok),
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
            for s, i in sorted(state["special_tokens"].items(), key=lambda kv: kv[1])
        ],
        "normalizer": None if state["normalizer"] is None else {"type": state["normalizer"]},
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": dict(sorted(vocab.items(), key=lambda kv: kv[1])),
            # "left right" strings (every tokenizers version reads them; byte characters hold no space)
            "merges": [f"{to_chars(a)} {to_chars(b)}" for a, b in merges],
        },
    }


def all_pair_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """tiktoken's rule as a merge list: every pair of tokens whose concatenation is a token, ranked
    by that token's rank. Hugging Face's BPE then merges, at each step, the pair whose concatenation
    has the lowest rank, which is tiktoken's step; with ignore_merges a piece that is a token stays
    whole, as tiktoken keeps it. (Only adjacent equal concatenations from different splits, as
    "ab"+"a" next to "a"+"ba", could order differently.)"""
    merges = []
    for token, _ in sorted(ranks.items(), key=lambda kv: kv[1]):
        for k in range(1, len(token)):
            a, b = token[:k], token[k:]
            if a in ranks and b in ranks:
                merges.append((a, b))
    return merges


def split_json(pattern: str) -> dict:
    """The tokenizers Split whose pieces are a split pattern's matches (tokenforge's rule, tiktoken's)."""
    inner = _unisolated(pattern)
    if inner is not None or pattern in _TOTAL:
        return {"type": "Split", "pattern": {"Regex": _to_hf(inner or pattern)}, "behavior": "Isolated", "invert": False}
    # only the matches are pieces, as tiktoken does
    return {"type": "Split", "pattern": {"Regex": _to_hf(pattern)}, "behavior": "Removed", "invert": True}


def _to_hf(pattern: str) -> str:
    pattern = _TO_HF.get(pattern, pattern)
    problem = _dialect_problem(pattern)
    if problem:
        raise ValueError(f"cannot write the split pattern {pattern!r} for tokenizers: {problem}")
    return pattern


def save(tok, path) -> None:
    write_atomic(path, json.dumps(to_json(tok), ensure_ascii=False, indent=2).encode("utf-8"))
