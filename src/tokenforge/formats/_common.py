"""What the format modules share: errors that name the file and the place, strict JSON, GPT-2's
byte-to-character alphabet, and building the Tokenizer with keyword overrides."""

from __future__ import annotations

import json
from typing import NoReturn

try:
    import orjson as _orjson
except ImportError:  # optional: json.loads reads the same
    _orjson = None

from .. import _core
from ..byte_alphabet import BYTE_TO_CHAR, CHAR_TO_BYTE, NOT_IN_UTF8, missing_bytes, to_chars  # noqa: F401 (for the format modules)
from ..byte_alphabet import from_chars as _from_chars
from ..outputs import write_atomic  # noqa: F401 (for the format modules)
from ..stage import UnsupportedComponent  # noqa: F401 (for the format modules)


def fail(source, where: str | None, what: str) -> NoReturn:
    """Raises ValueError("FILE: WHERE: WHAT"); WHERE is a JSON path or "line N"."""
    raise ValueError(f"{source}: {where}: {what}" if where else f"{source}: {what}")


def refuse(source, where: str | None, what: str) -> NoReturn:
    """As fail, for a component or option this reader does not take: UnsupportedComponent (another
    reader may take the file)."""
    raise UnsupportedComponent(f"{source}: {where}: {what}" if where else f"{source}: {what}")


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs):
    obj = dict(pairs)
    if len(obj) != len(pairs):  # rare: find the key (the loop per key was a third of parsing)
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return obj


def _fast_json(data: bytes):
    """The JSON value by orjson (3x Python's json on a 5 MB tokenizer.json) when it is installed and
    reads exactly what json.loads reads, else None. It refuses what json alone accepts (NaN, a BOM,
    lone surrogates, UTF-16), keeps the last of two equal keys, reads an integer past 64 bits as a
    float, and crashes on deep nesting (where json raises RecursionError): counts read from the
    text (cpp: bindings/byte_level_files.cpp) keep deep text from it and catch the other two, and
    json.loads then reads the file (and names the duplicate key)."""
    if _orjson is None or not isinstance(data, bytes):
        return None
    members, floats, depth = _core.json_text_shape(data)
    if members < 0 or depth > _FAST_JSON_DEPTH:
        return None
    try:
        value = _orjson.loads(data)
    except Exception:  # orjson.JSONDecodeError: json.loads says what is wrong
        return None
    return value if _core.json_value_shape(value) == (members, floats) else None


_FAST_JSON_DEPTH = 100  # tokenizer.json files nest about 6 deep


def parse_json(data: bytes, source):
    """JSON with duplicate keys rejected (json.loads would keep the last one silently)."""
    value = _fast_json(data)
    if value is not None:
        return value
    try:
        return json.loads(data, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as e:
        fail(source, None, f"the key {e.args[0]!r} appears twice in one JSON object")
    except ValueError as e:  # not JSON, not UTF-8, or an integer of more than 4300 digits
        fail(source, None, f"not valid JSON ({e})")
    except RecursionError:
        fail(source, None, "not a tokenizer file: JSON nested too deeply")


def from_chars(s: str, source, where: str) -> bytes:
    """byte_alphabet.from_chars; a character outside the 256 of the alphabet is an error."""
    b = _from_chars(s)
    if b is None:
        c = next(c for c in s if c not in CHAR_TO_BYTE)
        fail(source, where, f"{c!r} (U+{ord(c):04X}) is not one of GPT-2's 256 byte characters: "
                            "not a byte-level BPE vocabulary")
    return b


def check_every_byte(ranks: dict[bytes, int], source, where: str) -> None:
    """Byte-level BPE needs a token for every byte text can hold (the native core's precondition).
    The 13 bytes no UTF-8 text holds may lack one (MPT's, Falcon's, StarCoder's vocabularies, which
    tokenizers reads): ByteBPE gives them ids of its own that nothing decodes."""
    missing = missing_bytes(ranks)
    needed = [b for b in missing if b not in NOT_IN_UTF8]
    if needed:
        fail(source, where, f"no token for {len(missing)} of the 256 bytes (first: 0x{needed[0]:02X}, "
                            f"written {BYTE_TO_CHAR[needed[0]]!r}): not a byte-level BPE vocabulary")


def build(source, kwargs: dict, overrides: dict):
    """Tokenizer(**kwargs) with the caller's keyword overrides applied; errors name the file."""
    from ..tokenizer import Tokenizer

    kwargs = {**kwargs, **overrides}
    try:
        return Tokenizer(**kwargs)
    except (TypeError, ValueError) as e:  # as tokenforge.io does for its own files
        fail(source, None, str(e))


def explicit_merges(tok) -> tuple[list[tuple[bytes, bytes]], bool]:
    """(merges, ignore_merges) to write in a merges-list format. A tokenizer on tiktoken's rule
    (ranks, no merges) gets the merges its ranks imply; it keeps a piece that is a token whole."""
    state = tok._state()
    return (tok.merges if state["merges"] is None else state["merges"]), state["ignore_merges"]


# Parts of a tokenizer.json that tokenforge may leave out when asked (they never change how text
# maps to tokens).
IGNORABLE = ("post_processor", "truncation", "padding", "decoder")


def ignored_parts(overrides: dict) -> set[str]:
    """The parts named by `ignore=` (taken out of overrides), checked against IGNORABLE."""
    ignore = overrides.pop("ignore", ())
    ignore = {ignore} if isinstance(ignore, str) else set(ignore)
    if not ignore <= set(IGNORABLE):
        raise UnsupportedComponent(f"ignore= may name {', '.join(IGNORABLE)}; not {sorted(ignore - set(IGNORABLE))}")
    return ignore


def malformed_is_value_error(load):
    """load(path, obj, **overrides) of a tokenizer.json reader, with a TypeError, AttributeError,
    KeyError or IndexError (a value of the wrong JSON type somewhere the checks do not name: still
    the file's fault) turned into a ValueError naming the file."""
    def checked(path, obj, **overrides):
        try:
            return load(path, obj, **overrides)
        except (TypeError, AttributeError, KeyError, IndexError) as e:
            fail(path, None, f"malformed tokenizer.json ({type(e).__name__}: {e})")
    checked.__doc__ = load.__doc__
    return checked


def added_token_id(source, where: str, t) -> int:
    """The id of added_tokens entry `t` (at `where`): an object with a non-empty 'content' and an
    int id in [0, 2**32 - 1) (the native core's ids), else a ValueError naming the file and the entry."""
    if not isinstance(t, dict) or not isinstance(t.get("content"), str) or not t["content"]:
        fail(source, where, "expected an object with a non-empty 'content'")
    i = t.get("id")
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < 2**32 - 1:
        fail(source, f"{where}.id", f"invalid id {i!r} (ids are in [0, 2**32 - 1))")
    return i


# The top-level fields of a Hugging Face tokenizer.json.
HF_TOP_KEYS = {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "post_processor",
               "decoder", "model"}


def check_hf_envelope(source, obj: dict, ignore) -> None:
    """The checks every tokenizer.json import makes first: version, unknown top-level fields, and
    that truncation/padding are readable (unless the caller chose to ignore them)."""
    if obj.get("version") != "1.0":
        refuse(source, "version", f"unsupported tokenizer.json version {obj.get('version')!r} (tokenforge reads '1.0')")
    for key in obj:
        if key not in HF_TOP_KEYS:
            fail(source, key, "unknown field (tokenforge cannot tell whether it changes the ids)")
    hf_limits(source, obj, ignore)


def hf_limits(source, obj: dict, ignore=()):
    """(Truncation or None, Padding or None) of a tokenizer.json, unless named in `ignore`."""
    if obj.get("truncation") is None and obj.get("padding") is None:
        return None, None  # (most files)
    from ..post_processors import Padding, Truncation
    from ..stage import StageError

    try:
        truncation = None if "truncation" in ignore else Truncation.from_dict(obj.get("truncation"))
        padding = None if "padding" in ignore else Padding.from_dict(obj.get("padding"))
    except StageError as e:
        where, _, what = str(e).partition(": ")
        fail(source, where, what)
    return truncation, padding


def apply_hf_limits(tok, source, obj: dict, ignore=()):
    """Sets a loaded tokenizer's truncation and padding as its tokenizer.json says."""
    truncation, padding = hf_limits(source, obj, ignore)
    try:
        if truncation is not None:
            tok.enable_truncation(**truncation.to_python())
        if padding is not None:
            tok.enable_padding(**padding.to_python())
    except ValueError as e:
        fail(source, "truncation", str(e))
    return tok


def hf_limits_json(tok) -> dict:
    """tokenizer.json's "truncation" and "padding" of a tokenizer."""
    truncation, padding = getattr(tok, "_truncation", None), getattr(tok, "_padding", None)
    return {"truncation": None if truncation is None else truncation.to_dict(),
            "padding": None if padding is None else padding.to_dict()}
