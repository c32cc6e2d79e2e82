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
import stat
import tempfile
from pathlib import Path

from .byte_alphabet import BYTE_TO_CHAR, CHAR_TO_BYTE


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


def _umask() -> int:
    """The process umask, read without changing it where Linux tells it (/proc), else the classic
    set-and-restore (not thread-safe, hence only the fallback)."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode_for(path: Path) -> int:
    """The mode a new file at `path` gets: an existing file's mode is kept, a new one gets 0666 minus
    the umask (what `open(path, "w")` gives; `mkstemp` alone would give 0600)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _write_temporary(path: Path, data: bytes) -> str:
    """Writes data to a hidden temporary file beside path, flushed to disk, with the final mode."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), file_mode_for(path))
            os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_atomic(path: Path, data: bytes) -> None:
    """Writes data to path through a temporary file and a rename: never a half-written file."""
    write_atomic_group({Path(path): data})


def write_atomic_group(files: dict) -> None:
    """Writes several files that belong together (vocab.json + merges.txt): every file is complete
    and on disk before the first rename, so a full disk or an error leaves the old files untouched.
    The renames themselves are not one atomic step; readers of such pairs check that they belong
    together (formats/bpe_files.py puts the vocabulary's hash into the merges header)."""
    files = {Path(p): data for p, data in files.items()}
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
    temporaries: dict[Path, str] = {}
    try:
        for path, data in files.items():
            temporaries[path] = _write_temporary(path, data)
        for path, tmp in temporaries.items():
            os.replace(tmp, path)
    finally:
        for tmp in temporaries.values():
            if os.path.exists(tmp):
                _unlink_quietly(tmp)


def parse_tiktoken_bpe(contents: bytes, source: str = "<tiktoken file>") -> dict[bytes, int]:
    """Parses a .tiktoken file: one `base64(token) rank` per line."""
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
