"""Hugging Face `tokenizer.json` for the families other than byte-level BPE, both ways.

| model in the file                         | tokenforge                                    |
| ----------------------------------------- | --------------------------------------------- |
| `WordPiece`                               | WordPieceTokenizer (models.WordPiece)         |
| `BPE` without a `ByteLevel` pre-tokenizer | CharBPETokenizer (models.CharBPE), markers attached as HF's `end_of_word_suffix` |
| `WordLevel`                               | WordTokenizer (models.WordLevel)              |
| `Unigram`                                 | spm.SentencePieceTokenizer (spm/files.py reads the model) |

Each component maps one-to-one onto a tokenforge stage:
- normalizer: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Replace (a `String` pattern),
  BertNormalizer, Sequence of these;
- pre_tokenizer: Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation (`Isolated`), null, a
  Sequence of one;
- post_processor: null, TemplateProcessing of special tokens around `$A`, BertProcessing: a
  post_processors.Template (the `pair` template is not used: tokenforge encodes single texts);
- decoder: the one that goes with the model (WordPiece, BPEDecoder, none for WordLevel), or left out
  with `ignore={"decoder"}`.
Anything else (a Regex `Replace`, `Split`, `Metaspace` on a non-Unigram model, `fuse_unk`, BPE
`dropout`, `continuing_subword_prefix` on BPE, an added token outside the model's vocabulary or with
lstrip/rstrip/single_word, ...) is a ValueError naming its JSON path.

One difference of policy, as for the pipeline everywhere: tokenizers turns an added token written in
the text ("[CLS]") into its id; tokenforge's pipeline encodes it as text. Files where the model
could see a special token as (part of) a piece other than through such text are refused.
Not handled: CharTokenizer (tokenizers has no character model), character BPE with a start marker or
separate markers, Unigram files other than spm/files.py's shape.
"""

from __future__ import annotations

import copy
import json

import regex

from .. import _core, decoders, pipeline
from .. import normalizers as N
from .. import pre_tokenizers as P
from ..post_processors import Template
from ..models import CharBPE, WordLevel, WordPiece
from ..outputs import write_atomic
from ._common import (UnsupportedComponent, check_hf_envelope, fail, hf_limits_json, ignored_parts,
                      malformed_is_value_error, refuse)

_MODEL_KEYS = {
    "WordPiece": {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"},
    "BPE": {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
            "byte_fallback", "ignore_merges", "vocab", "merges"},
    "WordLevel": {"type", "vocab", "unk_token"},
    "Unigram": {"type", "unk_id", "vocab", "byte_fallback"},
}


def _has_byte_level(node) -> bool:
    if isinstance(node, dict):
        if node.get("type") == "ByteLevel":
            return True
        return any(_has_byte_level(v) for v in node.values() if isinstance(v, (dict, list)))
    if isinstance(node, list):
        return any(_has_byte_level(v) for v in node)
    return False


def handles(obj: dict) -> bool:
    """True for a tokenizer.json this module reads (huggingface.py keeps byte-level BPE)."""
    model = obj.get("model")
    kind = model.get("type", "BPE") if isinstance(model, dict) else None
    if not isinstance(kind, str) or kind not in _MODEL_KEYS:
        return False
    return not (_has_byte_level(obj.get("pre_tokenizer")) or _has_byte_level(obj.get("decoder")))


# --------------------------------------------------------------------------------------------------
# Reading


def _load(path, obj, **overrides):
    """The tokenizer of a tokenizer.json that handles(obj) accepted."""
    source = path
    ignore = ignored_parts(overrides)
    model = obj["model"]
    kind = model.get("type", "BPE")
    if overrides:
        raise UnsupportedComponent(f"{source}: a {kind} tokenizer.json takes no overrides ({', '.join(overrides)}); "
                                   "only ignore= (the file says everything else)")
    check_hf_envelope(source, obj, ignore)
    for key in model:
        if key not in _MODEL_KEYS[kind]:
            fail(source, f"model.{key}", f"unknown field of a {kind} model")
    if kind == "Unigram":
        return _load_unigram(source, obj, ignore)

    vocab = _vocab(source, model.get("vocab"))
    added = _added_tokens(source, obj.get("added_tokens") or [], vocab)
    normalizer = _normalizer(source, obj.get("normalizer"), "normalizer")
    pre = _pre_tokenizer(source, obj.get("pre_tokenizer"), "pre_tokenizer")
    specials = list(added)
    name = (path.parent.name if path.stem == "tokenizer" else path.stem) or "tokenizer"
    try:
        if kind == "WordPiece":
            unk = _unk(source, model, vocab)
            prefix = model.get("continuing_subword_prefix", "##")
            if not isinstance(prefix, str) or not prefix:
                refuse(source, "model.continuing_subword_prefix", f"{prefix!r} is not supported (a non-empty str)")
            m = WordPiece(vocab, unk_token=unk, continuing_subword_prefix=prefix,
                          max_input_chars_per_word=model.get("max_input_chars_per_word", 100), special_tokens=specials)
            cls, decoder = pipeline.WordPieceTokenizer, {"type": "WordPiece", "prefix": prefix, "cleanup": True}
        elif kind == "WordLevel":
            m = WordLevel(vocab, unk_token=_unk(source, model, vocab), special_tokens=specials)
            cls, decoder = pipeline.WordTokenizer, None
        else:
            m, decoder = _char_bpe(source, model, vocab, specials), None
            cls = pipeline.CharBPETokenizer
            decoder = {"type": "BPEDecoder", "suffix": m.end_of_word} if m.end_of_word else None
    except (ValueError, TypeError) as e:
        if str(e).startswith(str(source)):
            raise
        _check_vocab(source, vocab)  # (names a wrong entry of the vocabulary, if that was it)
        fail(source, "model", str(e))
    if kind in ("WordPiece", "WordLevel"):
        _check_reachable_specials(source, m, pre, kind)
    post = None if "post_processor" in ignore else _post_processor(source, obj.get("post_processor"), vocab)
    if "decoder" not in ignore:
        _check_decoder(source, obj.get("decoder"), decoder, kind)
    tok = pipeline.PipelineTokenizer.__new__(cls)
    try:
        # tokenizers matches every added token in the text and skips the special ones when decoding
        pipeline.PipelineTokenizer.__init__(tok, m, normalizer=normalizer, pre_tokenizer=pre, post_processor=post,
                                            name=name, special_tokens={t: vocab[t] for t in specials},
                                            allowed_special="all", skip_special_tokens=True)
    except ValueError as e:
        fail(source, None, str(e))
    return tok


load = malformed_is_value_error(_load)  # the entry point: a wrong JSON type anywhere names the file


def _vocab(source, vocab) -> dict[str, int]:
    """The vocabulary object, which the model checks (natively, in one pass) when it is made; if it
    refuses it, _check_vocab names what is wrong."""
    if not isinstance(vocab, dict):
        fail(source, "model.vocab", "missing or not an object")
    return vocab


def _check_vocab(source, vocab) -> None:
    if _core.vocab_by_id(vocab) is not None:
        return
    seen: dict[int, str] = {}
    for s, i in vocab.items():
        where = f"model.vocab[{s!r}]"
        if not s:
            fail(source, where, "empty token")
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            fail(source, where, f"invalid id {i!r}")
        if i in seen:
            fail(source, where, f"duplicate id {i} (also {seen[i]!r})")
        seen[i] = s


def _unk(source, model, vocab) -> str:
    unk = model.get("unk_token")
    if not isinstance(unk, str) or unk not in vocab:
        fail(source, "model.unk_token", f"{unk!r} is not a token of model.vocab (tokenforge needs an unknown token here)")
    return unk


def _added_tokens(source, tokens, vocab) -> list[str]:
    if not isinstance(tokens, list):
        fail(source, "added_tokens", "not a list")
    out = []
    for n, t in enumerate(tokens):
        where = f"added_tokens[{n}]"
        if not isinstance(t, dict) or not isinstance(t.get("content"), str) or not t["content"]:
            fail(source, where, "expected an object with a non-empty 'content'")
        for flag in ("single_word", "lstrip", "rstrip"):
            if t.get(flag):
                refuse(source, f"{where}.{flag}", f"true is not supported (tokenforge matches {t['content']!r} exactly)")
        if t["content"] not in vocab:
            refuse(source, where, f"{t['content']!r} is not in model.vocab (tokenforge's pipeline adds no tokens outside the model)")
        if vocab[t["content"]] != t.get("id"):
            fail(source, f"{where}.id", f"{t.get('id')!r}, but model.vocab gives {t['content']!r} the id {vocab[t['content']]}")
        if t["content"] in out:
            fail(source, where, f"{t['content']!r} appears twice")
        out.append(t["content"])
    return out


def _char_bpe(source, model, vocab, specials):
    if model.get("dropout") is not None:
        refuse(source, "model.dropout", f"BPE dropout ({model['dropout']}) samples different ids each time; not supported")
    if model.get("continuing_subword_prefix"):
        refuse(source, "model.continuing_subword_prefix", f"{model['continuing_subword_prefix']!r} is not supported "
                       "(tokenforge's character BPE marks the end of a word, or its start, not continuations)")
    for key, what in (("fuse_unk", "fusing unknown characters into one token"), ("byte_fallback", "byte fallback (<0xNN> tokens)"),
                      ("ignore_merges", "ignore_merges (whole words looked up first)")):
        if model.get(key):
            refuse(source, f"model.{key}", f"{what} is not supported in character-level BPE")
    eow = model.get("end_of_word_suffix")
    if eow is not None and (not isinstance(eow, str) or not eow):
        eow = None
    unk = model.get("unk_token")
    if unk is not None and unk not in vocab:
        fail(source, "model.unk_token", f"{unk!r} is not a token of model.vocab")
    merges = model.get("merges")
    if not isinstance(merges, list):
        fail(source, "model.merges", "missing or not a list")
    # The rules read natively (every part and join looked up at once) when nothing is wrong and no
    # pair is listed twice; else the reading below names the problem.
    model = CharBPE.from_text_merges(vocab, merges, end_of_word=eow, unk_token=unk, special_tokens=specials,
                                     drop_unknown=True)
    if model is not None:
        return model
    pairs, seen = [], set()
    for n, m in enumerate(merges):
        parts = m.split(" ") if isinstance(m, str) else m if isinstance(m, list) and all(isinstance(x, str) for x in m) else None
        if parts is None or len(parts) != 2 or not all(parts):
            fail(source, f"model.merges[{n}]", f"expected 'left right' or [left, right], got {m!r:.80}")
        for part in (parts[0], parts[1], parts[0] + parts[1]):
            if part not in vocab:
                fail(source, f"model.merges[{n}]", f"{part!r} is not in model.vocab")
        if tuple(parts) in seen:
            fail(source, f"model.merges[{n}]", f"the merge {parts[0]!r} + {parts[1]!r} appears twice")
        seen.add(tuple(parts))
        pairs.append((parts[0], parts[1]))
    return CharBPE(vocab, pairs, end_of_word=eow, start_of_word=None, attach_markers=True, unk_token=unk,
                   special_tokens=specials, drop_unknown=True)  # (tokenizers skips an unknown character)


def _check_reachable_specials(source, m, pre, kind) -> None:
    """tokenforge's WordPiece and WordLevel never match a special token inside a piece; tokenizers'
    models do. That differs only if a piece can hold a special token, which the pre-tokenizer rules
    out when it splits the token itself into several pieces (each stage splits at class changes)."""

    for s in m.special_tokens:
        if kind == "WordLevel" and s == m.unk_token:
            continue  # a piece equal to it gets the unknown id either way
        if not isinstance(pre, (P.Whitespace, P.BertPreTokenizer, P.Punctuation)) or pre.split_reference(s) == [s]:
            refuse(source, "pre_tokenizer", f"{pre.kind} can make a piece containing the special token {s!r}, which "
                                            "tokenizers' model would match and tokenforge's does not")


# -- stages -----------------------------------------------------------------------------------------


# The fields of each stage tokenforge reads: name -> allowed values (a field not listed is an error).
_BOOL, _OPT_BOOL = (True, False), (True, False, None)
_FIELDS = {
    "BertNormalizer": {"clean_text": _BOOL, "handle_chinese_chars": _BOOL, "strip_accents": _OPT_BOOL, "lowercase": _BOOL},
    "Strip": {"strip_left": _BOOL, "strip_right": _BOOL},
    "Replace": {"pattern": None, "content": None},
    "Sequence": {"normalizers": None, "pretokenizers": None},
    "Punctuation": {"behavior": None},
}


_KNOWN = {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Strip", "Replace", "BertNormalizer", "Sequence",
          "Whitespace", "WhitespaceSplit", "BertPreTokenizer", "Punctuation"}


def _check_fields(source, node: dict, where: str) -> None:
    if node.get("type") not in _KNOWN:
        return  # refused by type, with its name, by the caller
    allowed = _FIELDS.get(node.get("type"), {})
    for key, value in node.items():
        if key == "type":
            continue
        if key not in allowed:
            fail(source, f"{where}.{key}", f"unknown field of {node.get('type')!r} (tokenforge cannot tell whether it changes the ids)")
        if allowed[key] is not None and not any(value is v for v in allowed[key]):
            fail(source, f"{where}.{key}", f"{value!r} is not one of {list(allowed[key])}")


def _normalizer(source, node, where):
    if node is None:
        return None
    kind = node.get("type") if isinstance(node, dict) else None
    if kind is not None:
        _check_fields(source, node, where)
    if kind in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase"):
        return getattr(N, kind)()
    if kind == "StripAccents":
        return N.StripAccents()
    if kind == "Strip":
        return N.Strip(left=bool(node.get("strip_left", True)), right=bool(node.get("strip_right", True)))
    if kind == "Replace":
        pat = node.get("pattern")
        if not (isinstance(pat, dict) and isinstance(pat.get("String"), str) and pat["String"]):
            refuse(source, f"{where}.pattern", f"{pat!r:.80} is not supported (a {{'String': ...}} pattern; "
                                                "a Regex is read by Oniguruma in tokenizers, differently from Python)")
        if not isinstance(node.get("content"), str):
            fail(source, f"{where}.content", "not a str")
        return N.Replace(regex.escape(pat["String"]), node["content"])
    if kind == "BertNormalizer":
        return N.BertNormalizer(clean_text=node.get("clean_text", True), handle_chinese_chars=node.get("handle_chinese_chars", True),
                                strip_accents=node.get("strip_accents"), lowercase=node.get("lowercase", True))
    if kind == "Sequence":
        steps = node.get("normalizers")
        if not isinstance(steps, list):
            fail(source, f"{where}.normalizers", "missing or not a list")
        return N.Sequence([_normalizer(source, n, f"{where}.normalizers[{i}]") for i, n in enumerate(steps)])
    refuse(source, where, f"normalizer {kind!r} is not supported (tokenforge has NFC, NFD, NFKC, NFKD, Lowercase, "
                          "StripAccents, Strip, Replace, BertNormalizer, Sequence)")


def _pre_tokenizer(source, node, where):
    if node is None:
        return P.NoPreTokenizer()
    kind = node.get("type") if isinstance(node, dict) else None
    if kind is not None:
        _check_fields(source, node, where)
    simple = {"Whitespace": P.Whitespace, "WhitespaceSplit": P.WhitespaceSplit, "BertPreTokenizer": P.BertPreTokenizer}
    if kind in simple:
        return simple[kind]()
    if kind == "Punctuation":
        if node.get("behavior", "Isolated") != "Isolated":
            refuse(source, f"{where}.behavior", f"{node.get('behavior')!r} is not supported (tokenforge's Punctuation isolates)")
        return P.Punctuation()
    if kind == "Sequence":
        steps = node.get("pretokenizers") or []
        if len(steps) == 1:
            return _pre_tokenizer(source, steps[0], f"{where}.pretokenizers[0]")
        refuse(source, where, "a Sequence of several pre-tokenizers is not supported")
    refuse(source, where, f"pre-tokenizer {kind!r} is not supported here (tokenforge has Whitespace, WhitespaceSplit, "
                          "BertPreTokenizer, Punctuation, or none)")


def _post_processor(source, node, vocab):
    if node is None:
        return None
    kind = node.get("type") if isinstance(node, dict) else None

    def token(where, t, i):
        if vocab.get(t) != i:
            fail(source, where, f"the token {t!r} has id {i!r} here but {vocab.get(t)!r} in model.vocab")
        return t

    if kind == "BertProcessing":
        (c, ci), (s, si) = node.get("cls") or [None, None], node.get("sep") or [None, None]
        return Template([token("post_processor.cls", c, ci)], [token("post_processor.sep", s, si)])
    if kind == "TemplateProcessing":
        specials = node.get("special_tokens") or {}
        for name, spec in specials.items():
            where = f"post_processor.special_tokens[{name!r}]"
            if not isinstance(spec, dict) or len(spec.get("ids") or []) != 1 or spec.get("tokens") != [name]:
                refuse(source, where, "a special token of several ids is not supported")
            token(where, name, spec["ids"][0])
        prefix, suffix, seen_a = [], [], False
        for n, part in enumerate(node.get("single") or []):
            where = f"post_processor.single[{n}]"
            if isinstance(part, dict) and "Sequence" in part:
                if part["Sequence"].get("id") != "A" or seen_a:
                    fail(source, where, "expected the text ($A) once")
                seen_a = True
            elif isinstance(part, dict) and "SpecialToken" in part:
                t = part["SpecialToken"].get("id")
                if t not in specials:
                    fail(source, where, f"{t!r} is not in post_processor.special_tokens")
                (suffix if seen_a else prefix).append(t)
            else:
                fail(source, where, f"expected SpecialToken or Sequence, got {part!r:.80}")
        if not seen_a:
            fail(source, "post_processor.single", "no $A")
        return Template(prefix, suffix) if prefix or suffix else None
    refuse(source, "post_processor", f"post-processor {kind!r} is not supported; load with ignore={{'post_processor'}} to leave it out")


def _check_decoder(source, node, expected, kind) -> None:
    if node == expected or (isinstance(node, dict) and isinstance(expected, dict) and node.get("type") == expected.get("type")
                            and all(node.get(k, v) == v for k, v in expected.items())):
        return
    refuse(source, "decoder", f"{node!r:.80} is not the decoder of tokenforge's {kind} model ({expected!r}); "
                              "load with ignore={'decoder'} to accept tokenforge's decoding")


# sentencepiece's remove_extra_whitespaces strips one space at each end of the text (after collapsing
# runs): in Oniguruma `\A | \z`; `^ | $` would strip at every line (Oniguruma's ^ and $ are line anchors).
_STRIP_ENDS = {"type": "Replace", "pattern": {"Regex": "\\A | \\z"}, "content": ""}
# The native sentencepiece model's refusal of byte_fallback without all 256 <0xNN> pieces (cpp/unigram.cc):
# a plain ValueError from the native side, another reader's to try.
_NO_BYTE_PIECES = "byte fallback without a piece for every byte"


def _load_unigram(source, obj, ignore):
    """Unigram: spm/files.py reads the model and the normalizer; the parts around it are checked here."""
    from ..spm import files

    obj = {**obj, "normalizer": copy.deepcopy(obj.get("normalizer"))}  # rewritten below; the rest is only read
    norm = obj.get("normalizer")
    steps = norm.get("normalizers", []) if isinstance(norm, dict) and norm.get("type") == "Sequence" else [norm] if norm else []
    strips = False
    for n, step in enumerate(steps):
        where = f"normalizer.normalizers[{n}]" if norm.get("type") == "Sequence" else "normalizer"
        if step == files._STRIP:
            fail(source, where, "Replace('^ | $') strips spaces at every line in tokenizers (Oniguruma's ^ and $ are "
                                "line anchors) but sentencepiece strips the ends of the text only (written '\\A | \\z')")
        if step == _STRIP_ENDS:
            strips = True
            if norm.get("type") == "Sequence":
                steps[n] = files._STRIP
            else:
                obj["normalizer"] = files._STRIP
    pre = obj.get("pre_tokenizer")
    if isinstance(pre, dict) and pre.get("type") == "Metaspace" and not strips and \
            pre.get("prepend_scheme", "always" if pre.get("add_prefix_space", True) else "never") == "always":
        refuse(source, "pre_tokenizer.prepend_scheme", "'always' without the normalizer stripping the text's ends: "
               "tokenizers adds '▁' only to a text that does not start with a space, sentencepiece to every text")
    if isinstance(pre, dict) and pre.get("type") == "Metaspace" and pre.get("split", True):
        for n, entry in enumerate(obj["model"].get("vocab") or []):
            if isinstance(entry, list) and entry and isinstance(entry[0], str) and "\u2581" in entry[0][1:]:
                refuse(source, f"model.vocab[{n}]", f"{entry[0]!r} has '\u2581' inside, which Metaspace(split=true) never "
                                                    "lets a piece hold; sentencepiece (and tokenforge) would use it")
    vocab = obj["model"].get("vocab") or []
    ids = {e[0]: i for i, e in enumerate(vocab) if isinstance(e, list) and e}
    for n, t in enumerate(obj.get("added_tokens") or []):
        where = f"added_tokens[{n}]"
        for flag in ("single_word", "lstrip", "rstrip"):
            if t.get(flag):
                refuse(source, f"{where}.{flag}", "true is not supported")
        if ids.get(t.get("content")) != t.get("id"):
            fail(source, where, f"{t.get('content')!r} is not the piece of id {t.get('id')!r} in model.vocab")
        if not t.get("special"):
            refuse(source, f"{where}.special", "false is not supported (tokenizers would find it in the text)")
    post = obj.get("post_processor")
    if post is not None and "post_processor" not in ignore:
        refuse(source, "post_processor", f"{post.get('type')!r} is not supported for Unigram; load with ignore={{'post_processor'}}")
    dec = obj.get("decoder")
    if "decoder" not in ignore and not (isinstance(dec, dict) and dec.get("type") == "Metaspace"):
        refuse(source, "decoder", f"{dec!r:.60} is not Metaspace; load with ignore={{'decoder'}}")
    unk_id = obj["model"].get("unk_id")
    if not (isinstance(unk_id, int) and not isinstance(unk_id, bool) and 0 <= unk_id < len(vocab)):
        fail(source, "model.unk_id", f"{unk_id!r} is not the id of a piece of model.vocab")
    for n, entry in enumerate(vocab):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and entry[0]
                and isinstance(entry[1], (int, float)) and not isinstance(entry[1], bool)):
            fail(source, f"model.vocab[{n}]", f"expected [piece, score], got {entry!r:.80}")
    try:
        tok = files.from_hf(obj, source=str(source))
    except (TypeError, KeyError, IndexError, AttributeError) as e:
        fail(source, "model", f"not a Unigram model spm can read ({e})")
    except ValueError as e:
        if str(e).startswith(str(source)):
            raise
        if str(e) == _NO_BYTE_PIECES:
            refuse(source, "model", str(e))
        fail(source, "model", str(e))
    tok.name = (source.parent.name if source.stem == "tokenizer" else source.stem) or "tokenizer"
    if "decoder" not in ignore:  # decode as tokenizers does (the file's Metaspace), not as sentencepiece
        try:
            tok.decoder = decoders.from_dict(obj.get("decoder"))
        except ValueError as e:
            fail(source, None, str(e))
    return tok


# --------------------------------------------------------------------------------------------------
# Writing


def _normalizer_json(n):
    if n is None:
        return None
    if type(n) in (N.NFC, N.NFD, N.NFKC, N.NFKD, N.Lowercase):
        return {"type": n.kind}
    if isinstance(n, N.StripAccents):
        return {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]} if n.decompose else {"type": "StripAccents"}
    if isinstance(n, N.Strip):
        return {"type": "Strip", "strip_left": n.left, "strip_right": n.right}
    if isinstance(n, N.Replace):
        literal = _unescape(n.pattern)
        if literal is None:
            raise ValueError(f"cannot write tokenizer.json: Replace({n.pattern!r}) is a regex; only literal patterns are "
                             "written (tokenizers reads regexes with Oniguruma, which differs from Python's re)")
        return {"type": "Replace", "pattern": {"String": literal}, "content": n.content}
    if isinstance(n, N.BertNormalizer):
        return n.to_dict()
    if isinstance(n, N.Sequence):
        return {"type": "Sequence", "normalizers": [_normalizer_json(x) for x in n.normalizers]}
    raise ValueError(f"cannot write tokenizer.json: tokenizers has no normalizer {n.kind!r}")


def _unescape(pattern: str) -> str | None:
    """The literal string a `re` pattern matches, if it is one (plain text or re.escape of one)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern) and not pattern[i + 1].isalnum():
            out.append(pattern[i + 1])
            i += 2
        elif c in ".^$*+?{}[]|()\\":
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _pre_json(p):
    if isinstance(p, P.NoPreTokenizer):
        return None
    if isinstance(p, P.Punctuation):
        return {"type": "Punctuation", "behavior": "Isolated"}
    if isinstance(p, (P.Whitespace, P.WhitespaceSplit, P.BertPreTokenizer)):
        return {"type": p.kind}
    raise ValueError(f"cannot write tokenizer.json: the pre-tokenizer {p!r} (tokenizers' Split keeps the text "
                     "between matches, tokenforge's Regex drops it)")


def to_json(tok) -> dict:
    m = tok.model
    if isinstance(m, WordPiece):
        model = {"type": "WordPiece", "unk_token": m.unk_token, "continuing_subword_prefix": m.prefix,
                 "max_input_chars_per_word": m.max_input_chars_per_word}
        decoder = {"type": "WordPiece", "prefix": m.prefix, "cleanup": True}
    elif isinstance(m, CharBPE):
        if m.start_of_word or not m.attach_markers:
            raise ValueError("cannot write tokenizer.json: tokenizers' BPE has only an attached end-of-word suffix "
                             "(not a start-of-word marker or separate markers)")
        model = {"type": "BPE", "dropout": None, "unk_token": m.unk_token, "continuing_subword_prefix": None,
                 "end_of_word_suffix": m.end_of_word, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False}
        decoder = {"type": "BPEDecoder", "suffix": m.end_of_word} if m.end_of_word else None
    elif isinstance(m, WordLevel):
        model = {"type": "WordLevel", "unk_token": m.unk_token}
        decoder = None
    else:
        raise ValueError(f"cannot write tokenizer.json: tokenizers has no {m.kind!r} model")
    model["vocab"] = dict(sorted(m.vocab.items(), key=lambda kv: kv[1]))
    if isinstance(m, CharBPE):
        model["merges"] = [f"{a} {b}" if " " not in a + b else [a, b] for a, b in m.merges]
    pre = _pre_json(tok.pre_tokenizer)
    if isinstance(m, (WordPiece, WordLevel)):
        for s in m.special_tokens:
            if (s != getattr(m, "unk_token", None) or isinstance(m, WordPiece)) and not (
                    isinstance(tok.pre_tokenizer, (P.Whitespace, P.BertPreTokenizer, P.Punctuation))
                    and tok.pre_tokenizer.split_reference(s) != [s]):
                raise ValueError(f"cannot write tokenizer.json: with {tok.pre_tokenizer.kind}, tokenizers' model would "
                                 f"match the special token {s!r} inside a piece, tokenforge's does not")
    added = [{"id": m.vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s in sorted(m.special_tokens, key=m.vocab.get)]
    post = None
    if tok.post_processor is not None and not isinstance(tok.post_processor, Template):
        post = tok.post_processor.to_dict()  # BertProcessing, TemplateProcessing, ... as they are
    elif tok.post_processor is not None and tok.post_processor.num_added_tokens:
        t = tok.post_processor

        def part(x, type_id):
            return {"SpecialToken": {"id": x, "type_id": type_id}}

        post = {
            "type": "TemplateProcessing",
            "single": [part(x, 0) for x in t.prefix] + [{"Sequence": {"id": "A", "type_id": 0}}] + [part(x, 0) for x in t.suffix],
            "pair": [part(x, 0) for x in t.prefix] + [{"Sequence": {"id": "A", "type_id": 0}}] + [part(x, 0) for x in t.suffix]
                    + [{"Sequence": {"id": "B", "type_id": 1}}] + [part(x, 1) for x in t.suffix],
            "special_tokens": {x: {"id": x, "ids": [m.vocab[x]], "tokens": [x]} for x in dict.fromkeys(t.prefix + t.suffix)},
        }
    return {"version": "1.0", **hf_limits_json(tok), "added_tokens": added,
            "normalizer": _normalizer_json(tok.normalizer), "pre_tokenizer": pre, "post_processor": post,
            "decoder": decoder, "model": model}


def save(tok, path) -> None:
    from ..spm.tokenizer import SentencePieceTokenizer

    if isinstance(tok, SentencePieceTokenizer):
        from ..spm import files

        obj = files.to_hf(tok)
        norm = obj.get("normalizer")
        if norm == files._STRIP:
            obj["normalizer"] = _STRIP_ENDS
        elif norm and norm.get("type") == "Sequence":
            norm["normalizers"] = [_STRIP_ENDS if n == files._STRIP else n for n in norm["normalizers"]]
    else:
        obj = to_json(tok)
    write_atomic(path, json.dumps(obj, ensure_ascii=False, indent=2).encode("utf-8"))
