"""Saving and loading tokenizers: tokenforge's own self-describing file, and the dispatch to the
exchange formats (tokenforge.formats).

tokenforge's file is JSON (a person can read it; loading never executes anything):

    {"format": "tokenforge", "version": 1, "model": "byte_bpe", "name": ..., "normalizer": null | "NFKC" | ...,
     "pattern": ...,
     "special_tokens": {"<|endoftext|>": 256, ...},
     "vocab": [[id, base64 bytes], ...], "merges": [[left id, right id], ...] | null,
     "ignore_merges": bool}

"merges": null means tiktoken's rule (ids are ranks, see cpp/bpe.h). "normalizer" may be absent (null).
The exchange formats are described in docs/format.md.

The other models ("model": "wordpiece" | "char_bpe" | "word" | "char" | "longest_match", see tokenforge.pipeline, and
"unigram" | "sp_bpe", see tokenforge.spm) use the same envelope; docs/design.md describes them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from .outputs import write_atomic

FORMAT_NAME = "tokenforge"
FORMAT_VERSION = 1
# Models of tokenforge.pipeline, stored in the same envelope with "normalizer", "pre_tokenizer",
# "post_processor" and the model's own fields (docs/design.md, "Other tokenizer families").
OTHER_MODELS = ("wordpiece", "char_bpe", "word", "char", "longest_match")


def save(tok, path, *, format: str = FORMAT_NAME) -> None:
    if format != FORMAT_NAME:
        return tok.save(path, format=format)
    write_atomic(Path(path), json.dumps(to_dict(tok), ensure_ascii=False, indent=1).encode("utf-8"))


def to_dict(tok) -> dict:
    """tokenforge's file for any Tokenizer (see the module docstring); truncation and padding,
    when set, as tokenizer.json writes them."""
    d = _to_dict(tok)
    for key in ("truncation", "padding"):
        value = getattr(tok, "_" + key, None)
        if value is not None:
            d[key] = value.to_dict()
    return d


def _to_dict(tok) -> dict:
    from .models import ByteBPE
    from .spm.tokenizer import SentencePieceTokenizer
    from .tokenizer import Tokenizer

    if not isinstance(tok, Tokenizer):
        raise TypeError(f"cannot save a {type(tok).__name__}")
    envelope = {"format": FORMAT_NAME, "version": FORMAT_VERSION}
    if isinstance(tok, SentencePieceTokenizer):  # "model": "unigram" / "sp_bpe" / ... (spm/files.py)
        from .models.sentencepiece import SentencePieceDecoder
        from .spm import files

        d = files.to_dict(tok, envelope)
        if not isinstance(tok.decoder, SentencePieceDecoder):  # a tokenizer.json's own decoder (Metaspace)
            d["decoder"] = None if tok.decoder is None else tok.decoder.to_dict()
        return d
    if isinstance(tok.model, ByteBPE):
        try:
            state = tok._state()
        except ValueError:
            state = None
        if state is not None:  # the byte-level shorthand: pattern, ranks, merges, special tokens
            ranks = state["mergeable_ranks"]
            merges = state["merges"]
            return {
                **envelope,
                "model": "byte_bpe",
                "name": state["name"],
                "normalizer": state["normalizer"],
                "pattern": state["pattern"],
                "special_tokens": state["special_tokens"],
                "ignore_merges": state["ignore_merges"],
                "vocab": [[i, base64.b64encode(b).decode("ascii")] for b, i in sorted(ranks.items(), key=lambda kv: kv[1])],
                "merges": None if merges is None else [[ranks[a], ranks[b]] for a, b in merges],
                **_policy(tok),
            }
    body = tok.model.to_dict()
    if "model" in body:  # the sentencepiece model stage: its own kind and normalizer, renamed
        body["sp_model"] = body.pop("model")
        body["sp_normalizer"] = body.pop("normalizer")
    return {**envelope, "model": tok.model.kind, "name": tok.name, **_stages(tok), **body}


def _policy(tok) -> dict:
    """The special-token conventions, where they differ from tiktoken's (the default)."""
    d = {}
    if tok._default_allowed != frozenset():
        d["allowed_special"] = "all" if tok._default_allowed == "all" else sorted(tok._default_allowed)
    if tok._default_disallowed != "all":
        d["disallowed_special"] = sorted(tok._default_disallowed)
    if tok.skip_special_tokens:
        d["skip_special_tokens"] = True
    return d


def _stages(tok) -> dict:
    from .decoders.base import ModelDecoder

    d = {
        "normalizer": None if tok.normalizer is None else tok.normalizer.to_dict(),
        "pre_tokenizer": tok.pre_tokenizer.to_dict(),
        "post_processor": None if tok.post_processor is None else tok.post_processor.to_dict(),
        "pad_token": tok.pad_token,
    }
    if not (isinstance(tok.decoder, ModelDecoder) and tok.decoder.model is tok.model):
        d["decoder"] = None if tok.decoder is None else tok.decoder.to_dict()
    # the conventions and every added token, whatever the family
    d["added_tokens"] = [t.to_dict() for t in tok.added_tokens]
    d["allowed_special"] = "all" if tok._default_allowed == "all" else sorted(tok._default_allowed)
    d["disallowed_special"] = "all" if tok._default_disallowed == "all" else sorted(tok._default_disallowed)
    d["skip_special_tokens"] = tok.skip_special_tokens
    return d


# The family class each model kind of the pipeline families is rebuilt as.
_FAMILY_NAMES = {"wordpiece": "WordPieceTokenizer", "char_bpe": "CharBPETokenizer", "word": "WordTokenizer",
                 "char": "CharTokenizer"}


def load(path, **overrides):
    """Loads a tokenizer from any supported file or model folder, recognised by its content
    (tokenforge.formats.detect)."""
    from .formats import detect

    return detect.load(path, read_own=from_dict, **overrides)


def convert(in_path, out_path, to_format: str, **overrides):
    """Reads any supported file and writes it in `to_format`; returns the tokenizer.

    What `tokenforge convert IN OUT --to FORMAT` runs. `overrides` go to tokenforge.load (e.g. the
    pattern and special tokens a .tiktoken file lacks).
    """
    tok = load(in_path, **overrides)
    tok.save(out_path, format=to_format)
    return tok


def from_dict(obj: dict, *, source: str = "<dict>", **overrides):
    """A Tokenizer from tokenforge's file (see to_dict)."""
    limits = {key: obj[key] for key in ("truncation", "padding") if key in obj}
    tok = _from_dict({k: v for k, v in obj.items() if k not in limits}, source=source, **overrides)
    if limits:
        from .post_processors import Padding, Truncation

        try:
            truncation, padding = Truncation.from_dict(limits.get("truncation")), Padding.from_dict(limits.get("padding"))
            if truncation is not None:
                tok.enable_truncation(**truncation.to_python())
            if padding is not None:
                tok.enable_padding(**padding.to_python())
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None
    return tok


def _from_dict(obj: dict, *, source: str = "<dict>", **overrides):
    from .tokenizer import Tokenizer

    def fail(where: str, what: str):
        raise ValueError(f"{source}: {where}: {what}")

    version = obj.get("version")
    if version != FORMAT_VERSION:
        fail("version", f"unsupported format version {version!r} (this tokenforge reads {FORMAT_VERSION})")
    if obj.get("model") in ("unigram", "sp_bpe", "sp_word", "sp_char"):  # SentencePiece-style models (spm/files.py)
        from . import decoders
        from .spm import files

        tok = files.from_dict(obj, source=source)
        if "decoder" in obj:
            try:
                tok.decoder = decoders.from_dict(obj["decoder"])
            except ValueError as e:
                raise ValueError(f"{source}: {e}") from None
        return tok
    if obj.get("model") in (*OTHER_MODELS, "bpe", "sentencepiece") or (obj.get("model") == "byte_bpe" and "pattern" not in obj):
        if overrides:
            raise TypeError(f"{source}: a {obj['model']} tokenizer takes no overrides ({', '.join(overrides)})")
        try:
            return _from_stages(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"{source}: invalid {obj.get('model')} tokenizer: {e}") from None
    if obj.get("model") != "byte_bpe":
        fail("model", f"unknown model {obj.get('model')!r}")
    vocab = obj.get("vocab")
    if not isinstance(vocab, list):
        fail("vocab", "missing or not a list")
    ranks: dict[bytes, int] = {}
    by_id: dict[int, bytes] = {}
    for n, entry in enumerate(vocab):
        try:
            i, b64 = entry
            b = base64.b64decode(b64, validate=True)
        except Exception:
            fail(f"vocab[{n}]", f"expected [id, base64 bytes], got {entry!r:.80}")
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            fail(f"vocab[{n}]", f"invalid id {i!r}")
        if i in by_id:
            fail(f"vocab[{n}]", f"duplicate id {i}")
        if b in ranks:
            fail(f"vocab[{n}]", f"duplicate token {b!r}")
        ranks[b] = i
        by_id[i] = b
    merges = obj.get("merges")
    if merges is not None:
        if not isinstance(merges, list):
            fail("merges", "not a list (or null)")
        pairs = []
        for n, m in enumerate(merges):
            if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in m)):
                fail(f"merges[{n}]", f"expected [left id, right id], got {m!r:.80}")
            if m[0] not in by_id or m[1] not in by_id:
                fail(f"merges[{n}]", f"id {m[0] if m[0] not in by_id else m[1]} is not in the vocabulary")
            pairs.append((by_id[m[0]], by_id[m[1]]))
        merges = pairs
    special = obj.get("special_tokens") or {}
    if not isinstance(special, dict):
        fail("special_tokens", "not an object")
    kwargs = dict(
        pattern=obj.get("pattern"),
        mergeable_ranks=ranks,
        special_tokens=special,
        merges=merges,
        ignore_merges=obj.get("ignore_merges"),
        name=obj.get("name") or "tokenizer",
        normalizer=obj.get("normalizer"),
    )
    allowed = obj.get("allowed_special", [])
    disallowed = obj.get("disallowed_special", "all")
    kwargs.update(allowed_special=allowed if allowed == "all" else frozenset(allowed),
                  disallowed_special=disallowed if disallowed == "all" else frozenset(disallowed),
                  skip_special_tokens=bool(obj.get("skip_special_tokens", False)))
    kwargs.update(overrides)
    try:
        return Tokenizer(**kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{source}: {e}") from None


_STAGE_KEYS = {"format", "version", "model", "name", "normalizer", "pre_tokenizer", "post_processor", "decoder",
               "pad_token", "added_tokens", "allowed_special", "disallowed_special", "skip_special_tokens"}


def _from_stages(obj: dict):
    """A Tokenizer from tokenforge's file of any model kind other than the byte-level shorthand."""
    from . import decoders, normalizers, pipeline, post_processors, pre_tokenizers
    from .models import BPE, KINDS, ByteBPE
    from .special import AddedToken
    from .tokenizer import Tokenizer

    kind = obj["model"]
    fields = {k: v for k, v in obj.items() if k not in _STAGE_KEYS}
    if kind == "byte_bpe":
        by_id = {i: base64.b64decode(b) for i, b in fields["vocab"]}
        merges = None if fields.get("merges") is None else [(by_id[a], by_id[b]) for a, b in fields["merges"]]
        decode_only = {int(i): s for i, s in fields.get("decode_only") or []}
        model = ByteBPE({b: i for i, b in by_id.items()}, merges, fields.get("ignore_merges"), decode_only)
    elif kind == "bpe":
        model = BPE.from_dict(fields)
    elif kind == "sentencepiece":
        from .models import SentencePiece
        from .spm import files

        model = SentencePiece(files.model_file_from_dict({**fields, "model": fields["sp_model"],
                                                          "normalizer": fields["sp_normalizer"]}))
    else:
        model = KINDS[kind].from_dict(fields)
    stages = dict(normalizer=normalizers.from_dict(obj.get("normalizer")),
                  pre_tokenizer=pre_tokenizers.from_dict(obj.get("pre_tokenizer")),
                  post_processor=post_processors.from_dict(obj.get("post_processor")),
                  pad_token=obj.get("pad_token"), name=obj.get("name") or "tokenizer")
    if "decoder" in obj:
        stages["decoder"] = decoders.from_dict(obj["decoder"])
    policy = {}
    if "added_tokens" in obj:
        allowed = obj.get("allowed_special", [])
        disallowed = obj.get("disallowed_special", "all")
        policy = dict(added_tokens=[AddedToken(**t) for t in obj["added_tokens"]], special_tokens=None,
                      allowed_special=allowed if allowed == "all" else frozenset(allowed),
                      disallowed_special=disallowed if disallowed == "all" else frozenset(disallowed),
                      skip_special_tokens=bool(obj.get("skip_special_tokens", False)))
    if kind in _FAMILY_NAMES:  # a pipeline family: its class and defaults, unless the file says otherwise
        cls = getattr(pipeline, _FAMILY_NAMES[kind])
        tok = pipeline.PipelineTokenizer.__new__(cls)
        pipeline.PipelineTokenizer.__init__(tok, model, **stages, **policy)
        return tok
    if not policy:
        policy = dict(special_tokens=None)
    policy.pop("special_tokens", None)
    return Tokenizer(model, **policy, **stages)


def _register() -> None:
    from . import tokenizer

    tokenizer.WRITERS["tokenforge"] = lambda tok, path: save(tok, path)
    tokenizer.OWN_FORMAT["to_dict"] = to_dict
    tokenizer.OWN_FORMAT["from_dict"] = from_dict


_register()
