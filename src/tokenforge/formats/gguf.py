"""GGUF files (llama.cpp's model files, `*.gguf`): the tokenizer their metadata holds, read without
the tensors (a model file of many gigabytes is mapped, and only its header is read).

A GGUF file starts with b"GGUF", a version (2 or 3), the tensor count and the number of metadata
key-value pairs; each key is a string, each value typed (integers, floats, bools, strings, arrays
of them). The tokenizer is under `tokenizer.ggml.*`, as llama.cpp's converter writes it
(gguf-py/gguf/constants.py; llama.cpp's src/llama-vocab.cpp reads it):

| key | meaning |
|---|---|
| model | "gpt2": byte-level BPE with merges; "llama": sentencepiece BPE with scores; "t5": sentencepiece unigram; "bert": WordPiece; "rwkv": greedy longest match over bytes |
| pre | the byte-level pre-tokenizer by name ("llama-bpe", "qwen2", "gpt-2", ...): PRE_TOKENIZERS below |
| tokens, scores, token_type | the vocabulary in id order; types 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte |
| merges | "left right" strings in priority order (gpt2) |
| bos/eos/unknown/padding_token_id, add_bos_token, add_eos_token, add_space_prefix | the rest |

What a GGUF file means is what llama.cpp does with it, so this reader follows llama.cpp:
- gpt2: the pieces of `pre`'s regular expressions (each splits the pieces of the one before, as a
  Hugging Face Split with behavior Isolated), then byte-level BPE; `ignore_merges` (a piece that is
  a token is kept whole) for the pre-tokenizers llama.cpp sets it for. Control tokens are special
  tokens, user-defined ones added tokens: `encode` matches both in text, as a tokenizer.json with
  them does; `encode_ordinary` reads both as text.
- llama: sentencepiece BPE on the pieces and scores (identity normalization, a space prefix unless
  add_space_prefix says no, byte fallback when the byte pieces <0x00>..<0xFF> are there).
- bert: WordPiece; llama.cpp's converter wrote a word's first piece with a leading "\u2581" and the
  continuations bare, read back here as "word" and "##piece"; lowercased BERT pre-processing.
- rwkv: RWKV's "world" tokenizer (models/longest_match.py); the converter wrote each token's bytes
  as Python writes a bytes literal without its b'' ("\\xe4\\xb8", "\\n"), unescaped here as
  llama.cpp unescapes them. llama.cpp puts every token in its trie, the control token "<s>" (id 0)
  and the "[PAD...]" fillers too, so text holding "<s>" gives 0 there and here.
The beginning-of-text token is added by encode as llama.cpp adds it (add_bos_token, or its default
per model: encode(..., add_special_tokens=False) leaves it out).
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from .. import patterns
from ._common import fail

MAGIC = b"GGUF"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# GGUF value types -> struct format of one value (8: string, 9: array)
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
MAX_KEYS = 1 << 20
MAX_STRING = 1 << 26  # 64 MiB: a chat template is kilobytes, a token bytes

# llama.cpp's pre-tokenizers (src/llama-vocab.cpp, llm_tokenizer_bpe): name -> the regular
# expressions applied in turn. Where llama.cpp adapted a model's expression to its own regex engine
# (case-insensitive groups spelled out, lookaheads), the model's own expression from its
# tokenizer.json is used: tokenforge's split engine takes it as written.
_GPT2 = patterns.GPT2_ORIGINAL  # (llama.cpp's copy leaves out the final "|\s+": the same pieces for
#                                  a split that keeps the text between matches as pieces too)
_LLAMA3, _QWEN2, _TEKKEN, _GPT4O = patterns.LLAMA3, patterns.QWEN2, patterns.TEKKEN, patterns.O200K
# deepseek-llm's class of letters, in code points (llama.cpp's copy of it was NFC-normalized, which
# turned six of its range ends into other letters: U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A)
_DEEPSEEK_LETTERS = (
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
    "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
    "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
    "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-"
    "\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
    "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f"
    "\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
    "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17"
    "\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb"
    "\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+"
)
_CJK = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
_BLOOM = r" ?[^(\s|.,!?…。，、।۔،)]+"
PRE_TOKENIZERS: dict[str, tuple[str, ...]] = {
    "default": (r"[\p{P}\$\+<=>\^~\|]+", _GPT2, r"\p{N}+", "[0-9][0-9][0-9]"),
    "llama3": (_LLAMA3,), "llama-v3": (_LLAMA3,), "llama-bpe": (_LLAMA3,), "falcon3": (_LLAMA3,),
    "falcon-h1": (_LLAMA3,), "pixtral": (_LLAMA3,), "midm-2.0": (_LLAMA3,), "lfm2": (_LLAMA3,),
    "dbrx": (_LLAMA3,), "smaug-bpe": (_LLAMA3,), "glm4": (_LLAMA3,), "chatglm-bpe": (_LLAMA3,),
    "deepseek-llm": (
        "[\r\n]",
        _DEEPSEEK_LETTERS,
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
        "\\s+\\z",  # ("\\s+$" in the model's file: its pieces hold no line break here, so the same)
        _CJK,
        "\\p{N}+",
    ),
    "deepseek-v3": patterns.DEEPSEEK_V3,
    "deepseek-coder": ("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK, r"\p{N}"),
    "falcon": patterns.FALCON,
    "starcoder": (r"\p{N}", _GPT2), "refact": (r"\p{N}", _GPT2), "command-r": (r"\p{N}", _GPT2),
    "smollm": (r"\p{N}", _GPT2), "codeshell": (r"\p{N}", _GPT2), "exaone": (r"\p{N}", _GPT2),
    "minerva-7b": (r"\p{N}", _GPT2),
    "gpt-2": (_GPT2,), "phi-2": (_GPT2,), "jina-es": (_GPT2,), "jina-de": (_GPT2,), "gigachat": (_GPT2,),
    "jina-v2-es": (_GPT2,), "jina-v2-de": (_GPT2,), "a.x-4.0": (_GPT2,), "mellum": (_GPT2,),
    "jina-v1-en": (_GPT2,), "jina-v2-code": (_GPT2,), "roberta-bpe": (_GPT2,), "mpt": (_GPT2,), "olmo": (_GPT2,),
    "jais": (_GPT2,), "trillion": (_GPT2,), "exaone4": (_GPT2,),
    "qwen2": (_QWEN2,), "deepseek-r1-qwen": (_QWEN2,), "stablelm2": (_QWEN2,), "hunyuan": (_QWEN2,),
    "megrez": (_QWEN2,),
    "poro-chat": (_BLOOM,), "bloom": (_BLOOM,), "gpt3-finnish": (_BLOOM,), "viking": (_BLOOM, r"\p{N}"),
    "tekken": (_TEKKEN,),
    "gpt-4o": (_GPT4O,), "llama4": (_GPT4O,),
    "seed-coder": (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|"
                   r"\s*[\r\n]+|\s+(?!\S)|\s+",),
    "bailingmoe": (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|"
                   r"\s+(?!\S)|\s+",),
}
# llama.cpp keeps a piece that is a token whole (ignore_merges) and adds the beginning-of-text token
# by default for these.
_IGNORE_MERGES = {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                  "tekken"}
_ADD_BOS = _IGNORE_MERGES | {"chameleon"}


def looks_like(data: bytes) -> bool:
    return data[:4] == MAGIC


def load_file(path: Path, **overrides):
    """A GGUF file's tokenizer, its header read through a memory map (the tensors are not read)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            meta = read_metadata(mm, path)
    except OSError as e:
        fail(path, None, f"cannot read: {e.strerror or e}")
    return from_metadata(path, meta, overrides)


def load(path, data: bytes, **overrides):
    """As load_file, from the file's bytes."""
    return from_metadata(path, read_metadata(data, path), overrides)


class _Reader:
    """Little-endian values from a buffer, each read checked against its end."""

    def __init__(self, buf, source):
        self.buf, self.pos, self.source = buf, 0, source
        self.end = len(buf)

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > self.end:
            fail(self.source, f"byte {self.pos}", "the file ends inside its metadata (truncated?)")
        (value,) = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.take("Q")
        if n > MAX_STRING or self.pos + n > self.end:
            fail(self.source, f"byte {self.pos}", f"a string of {n} bytes does not fit in the file")
        raw = self.buf[self.pos : self.pos + n]
        self.pos += n
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            fail(self.source, f"byte {self.pos - n}", "a string that is not UTF-8")

    def strings(self, count: int) -> list[str]:
        from .. import _core

        fast = _core.gguf_strings(self.buf, self.pos, count)  # (None: the loop below names the problem)
        if fast is not None:
            out, self.pos = fast
            return out
        buf, pos, end = self.buf, self.pos, self.end
        out = []
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > end:
                fail(self.source, f"byte {pos}", "the file ends inside its metadata (truncated?)")
            (n,) = unpack(buf, pos)
            pos += 8
            if pos + n > end:
                fail(self.source, f"byte {pos}", f"a string of {n} bytes does not fit in the file")
            out.append(buf[pos : pos + n])
            pos += n
        self.pos = pos
        try:
            return [bytes(s).decode("utf-8") for s in out]
        except UnicodeDecodeError:
            fail(self.source, "tokenizer", "a token string that is not UTF-8")

    def array(self, keep: bool):
        kind, count = self.take("I"), self.take("Q")
        if kind == _STRING:
            if count > (self.end - self.pos) // 8:
                fail(self.source, f"byte {self.pos}", f"an array of {count} strings does not fit in the file")
            if keep:
                return self.strings(count)
            self.strings(count)  # (walked: strings have no fixed size)
            return None
        if kind in _SCALARS:
            fmt = _SCALARS[kind]
            size = struct.calcsize(fmt) * count
            if self.pos + size > self.end:
                fail(self.source, f"byte {self.pos}", f"an array of {count} values does not fit in the file")
            start, self.pos = self.pos, self.pos + size
            if not keep:
                return None
            return list(struct.unpack_from(f"<{count}{fmt}", self.buf, start))
        if kind == _ARRAY:  # arrays of arrays: walked, never kept (no tokenizer key holds one)
            for _ in range(count):
                self.array(False)
            return None
        fail(self.source, f"byte {self.pos}", f"unknown value type {kind} in an array")

    def value(self, keep: bool):
        kind = self.take("I")
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            return self.array(keep)
        fail(self.source, f"byte {self.pos}", f"unknown value type {kind}")


def read_metadata(buf, source) -> dict:
    """The keys under "tokenizer." and "general." of a GGUF header (other values are walked over)."""
    if buf[:4] != MAGIC:
        fail(source, None, "not a GGUF file (it does not start with b'GGUF')")
    if len(buf) < 24:
        fail(source, None, f"the file ends inside its {len(buf)}-byte header (truncated?)")
    r = _Reader(buf, source)
    r.pos = 4
    version = r.take("I")
    if version in (1, 0x01000000, 0x02000000, 0x03000000):
        fail(source, None, f"GGUF version {version:#x}: only little-endian versions 2 and 3 are read "
                           "(version 1 is from before August 2023; convert the model again)")
    if version not in (2, 3):
        fail(source, None, f"GGUF version {version}: this tokenforge reads versions 2 and 3")
    r.take("Q")  # the tensor count
    keys = r.take("Q")
    if keys > MAX_KEYS:
        fail(source, None, f"{keys} metadata keys: not a GGUF file this reader can trust")
    meta = {}
    for _ in range(keys):
        key = r.string()
        keep = key.startswith(("tokenizer.", "general."))
        value = r.value(keep)
        if keep:
            meta[key] = value
    return meta


def _get(meta: dict, source, key: str, kind, default=None):
    value = meta.get("tokenizer.ggml." + key, default)
    if value is not None and not isinstance(value, kind):
        fail(source, f"tokenizer.ggml.{key}", f"expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def _vocabulary(source, meta: dict):
    """(model, tokens, token types) of the metadata, checked."""
    model = _get(meta, source, "model", str)
    if model is None:
        fail(source, None, "a GGUF file without a tokenizer (no tokenizer.ggml.model key)")
    tokens = _get(meta, source, "tokens", list)
    if not tokens:
        fail(source, "tokenizer.ggml.tokens", "missing or empty")
    types = _get(meta, source, "token_type", list) or [NORMAL] * len(tokens)
    if len(types) != len(tokens):
        fail(source, "tokenizer.ggml.token_type", f"{len(types)} types for {len(tokens)} tokens")
    if model not in ("gpt2", "llama", "bert", "t5", "rwkv"):
        fail(source, "tokenizer.ggml.model", f"{model!r}: this tokenforge reads GGUF tokenizers of the models "
                                             "'gpt2' (byte-level BPE), 'llama' (sentencepiece BPE), 't5' "
                                             "(sentencepiece unigram), 'bert' (WordPiece) and 'rwkv' (greedy "
                                             "longest match)")
    return model, tokens, types


def to_hf_json(source, meta: dict) -> dict:
    """The tokenizer.json a byte-level ("gpt2") or WordPiece ("bert") GGUF tokenizer stands for (the
    tests give it to Hugging Face's tokenizers too)."""
    model, tokens, types = _vocabulary(source, meta)
    if model in ("llama", "t5", "rwkv"):
        fail(source, "tokenizer.ggml.model", f"a {model!r} model has no tokenizer.json form here")
    return (_byte_level if model == "gpt2" else _wordpiece)(source, meta, tokens, types)


def from_metadata(source, meta: dict, overrides: dict):
    from . import _load_huggingface

    model, tokens, types = _vocabulary(source, meta)
    if model in ("llama", "t5"):
        tok = _sentencepiece(source, meta, tokens, types, overrides, unigram=model == "t5")
    elif model == "rwkv":
        tok = _rwkv(source, tokens, overrides)
    else:
        tok = _load_huggingface(source, to_hf_json(source, meta), dict(overrides))
    name = meta.get("general.name")
    if isinstance(name, str) and name and not overrides.get("name"):
        tok.name = name
    return tok


def _special_id(meta, source, key: str, count: int):
    i = _get(meta, source, key, int)
    return i if i is not None and 0 <= i < count else None


def _bos_eos(meta, source, count: int, add_bos_default: bool, add_eos_default: bool = False):
    """[(bos, eos)] ids to add around a text, as llama.cpp adds them: None where not added."""
    bos = _special_id(meta, source, "bos_token_id", count)
    eos = _special_id(meta, source, "eos_token_id", count)
    add_bos = _get(meta, source, "add_bos_token", bool, add_bos_default)
    add_eos = _get(meta, source, "add_eos_token", bool, add_eos_default)
    return (bos if add_bos else None), (eos if add_eos else None)


def _template(tokens, bos, eos):
    """A TemplateProcessing post-processor adding bos / eos (None when neither is added)."""
    if bos is None and eos is None:
        return None
    single = ([{"SpecialToken": {"id": tokens[bos], "type_id": 0}}] if bos is not None else []) + \
             [{"Sequence": {"id": "A", "type_id": 0}}] + \
             ([{"SpecialToken": {"id": tokens[eos], "type_id": 0}}] if eos is not None else [])
    pair = single + [s if "SpecialToken" in s else {"Sequence": {"id": "B", "type_id": 1}} for s in single]
    specials = {tokens[i]: {"id": tokens[i], "ids": [i], "tokens": [tokens[i]]} for i in (bos, eos) if i is not None}
    return {"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": specials}


def _first_ids(tokens: list[str]) -> dict[str, int]:
    """token -> id, the first id of a token listed twice (inserted last, it wins)."""
    return dict(zip(reversed(tokens), range(len(tokens) - 1, -1, -1)))


def _added(tokens, types):
    """Hugging Face added_tokens: control tokens special, user-defined ones not (matched in text always)."""
    out = []
    for i, (t, k) in enumerate(zip(tokens, types)):
        if k == CONTROL or k == USER_DEFINED:
            out.append({"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                        "normalized": False, "special": k == CONTROL})
    return out


def _byte_level(source, meta, tokens, types) -> dict:
    pre = _get(meta, source, "pre", str, "default") or "default"
    if pre not in PRE_TOKENIZERS:
        fail(source, "tokenizer.ggml.pre", f"{pre!r}: a pre-tokenizer this tokenforge does not know "
                                           f"(known: {', '.join(sorted(PRE_TOKENIZERS))})")
    merges = _get(meta, source, "merges", list) or []
    vocab = _first_ids(tokens)
    bos, eos = _bos_eos(meta, source, len(tokens), pre in _ADD_BOS)
    splits = [{"type": "Split", "pattern": {"Regex": r}, "behavior": "Isolated", "invert": False}
              for r in PRE_TOKENIZERS[pre]]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": _added(tokens, types),
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": splits + [
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": _template(tokens, bos, eos),
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": pre in _IGNORE_MERGES, "vocab": vocab, "merges": merges},
    }


def _sentencepiece(source, meta, tokens, types, overrides, unigram: bool = False):
    """A sentencepiece model: BPE ("llama"), or unigram ("t5", with the file's precompiled
    normalization map) as llama.cpp's UGM tokenizer reads it."""
    from ..spm import model_file as mf
    from ..spm.tokenizer import SentencePieceTokenizer

    if overrides:
        fail(source, None, f"a GGUF file says everything itself; it takes no keywords ({', '.join(overrides)})")
    scores = _get(meta, source, "scores", list) or [0.0] * len(tokens)
    if len(scores) != len(tokens):
        fail(source, "tokenizer.ggml.scores", f"{len(scores)} scores for {len(tokens)} tokens")
    kinds = bytes(k if 1 <= k <= 6 else NORMAL for k in types)
    unk = _special_id(meta, source, "unknown_token_id", len(tokens))
    if UNKNOWN not in kinds and unk is not None:
        # Gemma 3's files type their "<unk>" as a control token; llama.cpp takes the unknown piece
        # from unknown_token_id whatever its type, sentencepiece needs one of type unknown (neither
        # matches the piece's text in ordinary text, so it is the same token either way).
        kinds = kinds[:unk] + bytes([UNKNOWN]) + kinds[unk + 1:]
    if USER_DEFINED in kinds and not unigram:
        # llama.cpp's converter writes a user-defined piece's '▁' as a space (Gemma's runs of spaces
        # '▁▁' ... become '  ' ...) and llama.cpp finds such tokens in the text before a space becomes
        # '▁'; sentencepiece finds them after: the same places, spelled '▁'.
        tokens = [t.replace(" ", "\u2581") if k == USER_DEFINED else t for t, k in zip(tokens, kinds)]
    pieces = mf.PieceColumns(tokens, scores, kinds)
    has_bytes = kinds.count(BYTE) == 256
    charsmap = bytes(_get(meta, source, "precompiled_charsmap", list) or []) if unigram else b""
    model = mf.ModelFile(pieces, model_type=mf.UNIGRAM if unigram else mf.BPE, byte_fallback=has_bytes,
                         add_dummy_prefix=_get(meta, source, "add_space_prefix", bool, True),
                         remove_extra_whitespaces=unigram and _get(meta, source, "remove_extra_whitespaces", bool, False),
                         escape_whitespaces=_get(meta, source, "escape_whitespaces", bool, True),
                         treat_whitespace_as_suffix=_get(meta, source, "treat_whitespace_as_suffix", bool, False),
                         precompiled_charsmap=charsmap, normalizer_name="precompiled" if charsmap else "identity")
    # (llama.cpp's defaults: <s> before a sentencepiece BPE text, </s> after a unigram one)
    bos, eos = _bos_eos(meta, source, len(tokens), not unigram, unigram)
    post = None
    if bos is not None or eos is not None:
        from ..post_processors.template import Template

        post = Template(prefix=[tokens[bos]] if bos is not None else [], suffix=[tokens[eos]] if eos is not None else [])
    try:
        tok = SentencePieceTokenizer(model, post_processor=post)
    except ValueError as e:
        fail(source, None, str(e))
    return tok


def unescape_rwkv(token: str) -> bytes:
    """A token as llama.cpp's RWKV converter wrote it (repr(bytes)[2:-1]) -> its bytes, as
    llama.cpp's llama_unescape_rwkv_token reads it: \\t \\n \\r \\xNN, any other escaped
    character as itself."""
    if "\\" not in token:
        return token.encode("utf-8")
    out = bytearray()
    chars = iter(token.encode("utf-8"))
    for c in chars:
        if c != 0x5C:  # backslash
            out.append(c)
            continue
        e = next(chars, None)
        if e is None:
            break
        if e == ord("x"):
            digits = [next(chars, None), next(chars, None)]
            if None in digits:
                break
            # (llama.cpp: c >= 'a' ? c - 'a' + 10 : c - '0', two digits)
            value = 0
            for d in digits:
                value = (value << 4) + (d - 0x61 + 10 if d >= 0x61 else d - 0x30)
            out.append(value & 0xFF)
        else:
            out.append({ord("t"): 9, ord("n"): 10, ord("r"): 13}.get(e, e))
    return bytes(out)


def _rwkv(source, tokens, overrides):
    from ..models import LongestMatch
    from ..tokenizer import Tokenizer

    vocab: dict[bytes, int] = {}
    for i, t in enumerate(tokens):
        b = unescape_rwkv(t)
        if not b:
            fail(source, f"tokenizer.ggml.tokens[{i}]", "an empty token")
        if b in vocab:
            fail(source, f"tokenizer.ggml.tokens[{i}]", f"the token {b!r} again (id {vocab[b]})")
        vocab[b] = i
    try:
        return Tokenizer(LongestMatch(vocab), **{"name": "rwkv", **overrides})
    except (TypeError, ValueError) as e:
        fail(source, None, str(e))


def _wordpiece(source, meta, tokens, types) -> dict:
    vocab: dict[str, int] = {}
    for i, (t, k) in enumerate(zip(tokens, types)):
        if k == NORMAL and t.startswith("\u2581"):  # (llama.cpp's converter: a word's first piece)
            t = t[1:]
        elif k == NORMAL and not (t.startswith("[") and t.endswith("]")):
            t = "##" + t
        vocab.setdefault(t, i)
    unk = _special_id(meta, source, "unknown_token_id", len(tokens))
    cls = _special_id(meta, source, "cls_token_id", len(tokens))
    sep = _special_id(meta, source, "seperator_token_id", len(tokens))
    if sep is None:
        sep = _special_id(meta, source, "sep_token_id", len(tokens))
    post = None
    if cls is not None and sep is not None:
        post = {"type": "BertProcessing", "sep": [tokens[sep], sep], "cls": [tokens[cls], cls]}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": _added(tokens, types),
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": post,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": tokens[unk] if unk is not None else "[UNK]",
                  "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
    }

