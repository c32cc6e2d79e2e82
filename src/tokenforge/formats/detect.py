"""`tokenforge.load(path)`: what a file is, told by its content alone (never by its name), and the
module that reads it.

| content                                              | kind            | read by          |
| ---------------------------------------------------- | --------------- | ---------------- |
| a directory                                          | model folder    | model_folder     |
| b"GGUF" (llama.cpp's model files; the header only is read) | gguf      | gguf             |
| gzip magic (1f 8b)                                   | the unpacked content, detected again (CLIP's merges) | |
| JSON with "format": "tokenforge"                     | tokenforge      | tokenforge.io    |
| JSON with "config" {"pattern", ...} and a "vocab" list of {"rank", "token_bytes"} | tekken | tekken |
| JSON with "model" (and "version")                    | huggingface     | huggingface / hf_families |
| JSON object token -> int id                          | vocab           | bpe_files (needs its merges file) |
| protobuf whose first fields are ModelProto's (1 pieces ... 5 denormalizer spec), not UTF-8 text lines | sentencepiece | spm |
| lines "base64 rank" (an empty token "= rank" too)    | tiktoken        | tiktoken_bpe (+ rank_families for known files) |
| "# tokenforge vocabulary listing"                    | listing         | (not loadable) |
| lines "id 'token' length" (Python literals)          | rwkv            | rwkv |
| lines of tokens with [UNK]/[CLS]/... or ##pieces     | bert_vocab      | bert_vocab |
| a file name then "#version" on line 1 (CLIP's header), then "left right" lines | clip | clip |
| "#version" or "left right" lines                     | merges          | bpe_files (needs its vocab file) |

A file that fits none is a ValueError naming the file and the formats tried.
"""

from __future__ import annotations

import gc
import gzip
import io
import re
import sys
import zlib
from pathlib import Path

from . import bert_vocab, bpe_files, clip, gguf, listing, rwkv, sentencepiece_model, tekken, tiktoken_bpe
from ._common import fail, parse_json

_NOT_SPACE = re.compile(rb"[^ \t\n\r\x0b\x0c]")  # bytes.lstrip()'s whitespace
MAX_GUNZIPPED = 1 << 28  # 256 MiB: a .gz that unpacks past this is refused (a gzip bomb), the largest real tokenizer files are ~30 MB


def load(path, read_own=None, **overrides):
    """Loads a tokenizer from a file or a model folder, recognised by content. `read_own(obj, source=,
    **overrides)` reads tokenforge's own file (tokenforge.io passes it: formats never import io)."""
    # Python's cyclic garbage collector is paused while a tokenizer loads. Loading makes hundreds of
    # thousands of objects (the parsed JSON: Qwen3's 151k merges are lists; then the tables), which
    # set the collector off again and again, each time walking all of them: a tenth of loading
    # Qwen3's tokenizer.json (200.7 against 231.8 ms), 10 ms of Llama 3.2's. They hold no cycles;
    # other garbage waits until the load is done. If it was on, it is on again after, even on an
    # error. (A plain try/finally: a contextlib.contextmanager cost a small file's load 2-3 us.)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(Path(path), read_own, overrides)
    finally:
        if was_enabled:
            gc.enable()


def _load(path: Path, read_own, overrides: dict):
    try:
        # unbuffered: readall() sizes its result by the file's size and reads into it once (a
        # buffered read() of an 11 MB tokenizer.json grew and copied its result: 16-20 ms against 1)
        f = open(path, "rb", buffering=0)  # (a folder is told by the error: no stat of every file first)
    except OSError as e:
        f = None
        if not path.is_dir():
            _cannot_read(path, e)
    if f is None:
        from . import model_folder

        return model_folder.load(path, sniff=sniff, load_bytes=load_bytes, read_own=read_own, **overrides)
    try:
        with f:
            head = f.read(4)
            if head == gguf.MAGIC:  # a model file of gigabytes: only its header is read
                data = None
            elif f.seekable():
                f.seek(0)
                data = f.readall()
            else:  # (a pipe: /dev/stdin, a FIFO)
                data = head + f.readall()
        if data is None:
            return gguf.load_file(path, **overrides)
    except OSError as e:
        _cannot_read(path, e)
    return load_bytes(path, data, read_own=read_own, **overrides)


def _cannot_read(path, e: OSError):
    if isinstance(e, FileNotFoundError):
        raise ValueError(f"{path}: no such file") from None
    raise ValueError(f"{path}: cannot read: {e.strerror or e}") from None


def load_bytes(path: Path, data: bytes, read_own=None, **overrides):
    try:
        return _load_bytes(path, data, read_own, overrides)
    except RecursionError:  # JSON arrays in arrays, or stages in stages, thousands deep
        raise ValueError(f"{path}: nested too deeply to be a tokenizer file") from None


def _load_bytes(path: Path, data: bytes, read_own, overrides: dict):
    data = _gunzip(path, data)
    kind, obj = sniff(path, data)
    if kind == "tokenforge":
        if read_own is None:
            fail(path, None, "tokenforge's own file: load it with tokenforge.load")
        return read_own(obj, source=str(path), **overrides)
    if kind == "gguf":
        return gguf.load(path, data, **overrides)
    if kind == "tekken":
        return tekken.load(path, obj, **overrides)
    if kind == "huggingface":  # (formats/__init__ defines it and imports this module: read at call time)
        return sys.modules[__package__]._load_huggingface(path, obj, overrides)
    if kind == "sentencepiece":
        return sentencepiece_model.load(path, data, **overrides)
    if kind == "tiktoken":
        return tiktoken_bpe.load(path, data, **overrides)
    if kind == "rwkv":
        return rwkv.load(path, data, **overrides)
    if kind == "bert_vocab":
        return bert_vocab.load(path, data, **overrides)
    if kind == "clip":
        return clip.load(path, data, **overrides)
    if kind == "vocab":
        return bpe_files.load_from_vocab(path, obj, **overrides)
    if kind == "merges":
        return bpe_files.load_from_merges(path, data, **overrides)
    fail(path, None, "a .vocab listing is for people and cannot be loaded; load the file it was made from")


def _gunzip(path, data: bytes) -> bytes:
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_GUNZIPPED + 1)
    except (OSError, EOFError, zlib.error) as e:
        fail(path, None, f"gzip data that does not unpack: {e}")
    if len(out) > MAX_GUNZIPPED:
        fail(path, None, f"unpacks to more than {MAX_GUNZIPPED} bytes; not a tokenizer file")
    return out


KINDS = ("tokenforge", "huggingface", "gguf", "tekken", "sentencepiece", "tiktoken", "gpt2 / vocab_merges", "clip",
         "bert_vocab", "rwkv")


def sniff(path, data: bytes) -> tuple[str, object]:
    """(the kind of file, its parsed JSON or None), by content; ValueError if no format fits."""
    text = _NOT_SPACE.search(data)  # where the text starts (data.lstrip() copied a binary file that starts with \n)
    if text is None:
        fail(path, None, "the file is empty")
    start = text.start()
    if gguf.looks_like(data):
        return "gguf", None
    if data.startswith(b"[", start) and bert_vocab.looks_like(data):  # "[PAD]" on the first line is not JSON
        return "bert_vocab", None
    if data.startswith((b"{", b"["), start):
        obj = parse_json(data, path)
        return _sniff_json(path, obj), obj
    if sentencepiece_model.looks_like(data):
        return "sentencepiece", None
    end = data.find(b"\n", start)
    first = data[start : end if end >= 0 else len(data)].rstrip(b"\r")
    if first.startswith(listing.HEADER.encode()):
        return "listing", None
    if tiktoken_bpe.looks_like(first):
        return "tiktoken", None
    try:
        first_text = first.decode("utf-8")
    except UnicodeDecodeError:
        if data[0] in sentencepiece_model.MODEL_PROTO_STARTS:  # binary that starts like a ModelProto: its parser says what is wrong
            return "sentencepiece", None
        fail(path, None, f"not a tokenizer file in any known format ({', '.join(KINDS)}): not JSON, and not "
                         "UTF-8 text (nor a sentencepiece model)")
    if rwkv.looks_like(first_text):
        return "rwkv", None
    if bert_vocab.looks_like(data):
        return "bert_vocab", None
    if clip.looks_like(path, data):
        return "clip", None
    if bpe_files.looks_like_merges(first_text):
        return "merges", None
    fail(path, "line 1", f"not a tokenizer file in any known format ({', '.join(KINDS)}); "
                         f"it starts with {first_text[:60]!r}")


def _sniff_json(path, obj) -> str:
    if not isinstance(obj, dict):
        fail(path, None, f"a JSON {type(obj).__name__}, not a tokenizer (an object)")
    if obj.get("format") == "tokenforge":
        return "tokenforge"
    if tekken.looks_like(obj):
        return "tekken"
    if bpe_files.looks_like_vocab(obj):
        return "vocab"
    if isinstance(obj.get("format"), str):
        fail(path, "format", f"unknown format {obj['format']!r} (this tokenforge reads 'tokenforge')")
    if "model" in obj:
        return "huggingface"
    if any(k in obj for k in ("tokenizer_class", "added_tokens_decoder", "chat_template", "bos_token", "eos_token")):
        fail(path, None, "a transformers tokenizer_config.json / special_tokens_map.json, which only completes a "
                         "tokenizer: load the folder that holds it")
    fail(path, None, "a JSON object that is neither a tokenforge file, a Hugging Face tokenizer.json, nor a "
                     "vocabulary (token -> id), nor a tekken file")
