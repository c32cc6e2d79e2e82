"""Reading vocabulary files: fetch once, verify by sha256, cache atomically, work offline.

Look-up order for a file named by its URL:
1. tokenforge's cache: $TOKENFORGE_CACHE_DIR, else $XDG_CACHE_HOME/tokenforge (~/.cache/tokenforge);
2. tiktoken's cache ($TIKTOKEN_CACHE_DIR, $DATA_GYM_CACHE_DIR, or its default temp folder), where a
   file is named by the sha1 hex digest of its URL, so people who use tiktoken work offline at once;
3. the network (unless $TOKENFORGE_OFFLINE is set), then written into tokenforge's cache with an
   atomic rename.
Every candidate is checked against the expected sha256; a mismatch is ignored, never used.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .byte_alphabet import BYTE_TO_CHAR, CHAR_TO_BYTE
from .outputs import write_atomic


class VocabularyNotFound(OSError):
    """A vocabulary file is neither cached nor downloadable."""


def cache_key(url: str) -> str:
    return hashlib.sha1(url.encode()).hexdigest()


def tokenforge_cache_dir() -> Path:
    if os.environ.get("TOKENFORGE_CACHE_DIR"):
        return Path(os.environ["TOKENFORGE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokenforge"


def _tiktoken_cache_dirs() -> list[Path]:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(var):
            return [Path(os.environ[var])]
    return [Path(tempfile.gettempdir()) / "data-gym-cache"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_file_cached(url: str, expected_sha256: str) -> bytes:
    """The bytes of a vocabulary file, from a cache or the network, verified by sha256."""
    key = cache_key(url)
    own = tokenforge_cache_dir() / key
    for candidate in [own] + [d / key for d in _tiktoken_cache_dirs()]:
        try:
            data = candidate.read_bytes()
        except OSError:
            continue
        if _sha256(data) == expected_sha256:
            return data
    if os.environ.get("TOKENFORGE_OFFLINE"):
        raise _not_found(url, expected_sha256, own, "TOKENFORGE_OFFLINE is set")
    try:
        import urllib.request

        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except Exception as e:  # no network, DNS failure, HTTP error...
        raise _not_found(url, expected_sha256, own, f"download failed: {e}") from None
    if _sha256(data) != expected_sha256:
        raise VocabularyNotFound(f"{url} downloaded with sha256 {_sha256(data)}, expected {expected_sha256}")
    try:
        write_atomic(own, data)
    except OSError:
        pass  # a read-only cache still lets this process work
    return data


def _not_found(url: str, sha256: str, where: Path, why: str) -> VocabularyNotFound:
    return VocabularyNotFound(
        f"cannot get the vocabulary file {url} ({why}).\n"
        f"Place that file at {where} (sha256 {sha256}),\n"
        f"or in a tiktoken cache folder named by TIKTOKEN_CACHE_DIR under the name {cache_key(url)}."
    )


def parse_tiktoken_bpe(contents: bytes, source: str = "<tiktoken file>") -> dict[bytes, int]:
    """Parses a .tiktoken file: one `base64(token) rank` per line."""
    from . import _core

    fast = _core.parse_tiktoken(bytes(contents))  # None unless well formed: the loop then reads the file
    if fast is not None:
        return fast
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(contents.splitlines(), 1):
        if not line:
            continue
        try:
            token, rank = line.split()
            b = base64.b64decode(token, validate=True)
            r = int(rank)
        except Exception:
            raise ValueError(f"{source}, line {lineno}: expected 'base64-token rank', got {line[:80]!r}") from None
        if b in ranks:
            raise ValueError(f"{source}, line {lineno}: token {b!r} appears twice")
        ranks[b] = r
    return ranks


def dump_tiktoken_bpe(ranks: dict[bytes, int]) -> bytes:
    return b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))


def data_gym_to_ranks(vocab_bpe: str, encoder_json: dict, source: str = "vocab.bpe") -> dict[bytes, int]:
    """Ranks from GPT-2's vocab.bpe (merges) and encoder.json (ids), checking that they agree."""
    byte_decoder = dict(CHAR_TO_BYTE)

    def decode(s: str, where: str) -> bytes:
        try:
            return bytes(byte_decoder[c] for c in s)
        except KeyError as e:
            raise ValueError(f"{where}: {e.args[0]!r} is not a GPT-2 byte character") from None

    # The 256 byte tokens come first in the order of their printable characters, then the merges.
    byte_order = sorted(range(256), key=lambda b: ord(BYTE_TO_CHAR[b]))
    ranks = {bytes([b]): i for i, b in enumerate(byte_order)}
    lines = vocab_bpe.split("\n")
    for lineno, line in enumerate(lines, 1):
        if not line or line.startswith("#version"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{source}, line {lineno}: expected two tokens, got {line[:80]!r}")
        ranks[decode(parts[0], f"{source}, line {lineno}") + decode(parts[1], f"{source}, line {lineno}")] = len(ranks)
    loaded = {decode(k, "encoder.json"): v for k, v in encoder_json.items()}
    loaded.pop(b"<|endoftext|>", None)
    loaded.pop(b"<|startoftext|>", None)
    if loaded != ranks:
        raise ValueError("encoder.json and vocab.bpe disagree: the ids are not the merge order")
    return ranks


def load_tiktoken_bpe(url: str, expected_sha256: str) -> dict[bytes, int]:
    return parse_tiktoken_bpe(read_file_cached(url, expected_sha256), source=url)


def load_data_gym(vocab_bpe_url: str, encoder_json_url: str, vocab_bpe_sha256: str, encoder_json_sha256: str) -> dict[bytes, int]:
    vocab_bpe = read_file_cached(vocab_bpe_url, vocab_bpe_sha256).decode("utf-8")
    encoder_json = json.loads(read_file_cached(encoder_json_url, encoder_json_sha256))
    return data_gym_to_ranks(vocab_bpe, encoder_json, source=vocab_bpe_url)
