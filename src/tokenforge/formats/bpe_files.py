"""The two-file BPE formats: GPT-2's `encoder.json` + `vocab.bpe`, and Hugging Face's BPE model files
`vocab.json` + `merges.txt` (what `tokenizers.models.BPE.from_file` and the tutorials read).

Both are one format under two pairs of names: a JSON object token -> id, and a text file of merges,
`#version: 0.2` then one `left right` per line, in merge order. Tokens are written in GPT-2's
byte-to-character alphabet (b" the" is "Ġthe"). A vocabulary entry that is neither a byte nor the
result of a merge can never come out of BPE: it is a special token (GPT-2's `<|endoftext|>`).

Addressing the pair (one path names both files):
- `tok.save("dir", format="gpt2")` (a directory, or a path without a suffix) writes dir/encoder.json
  and dir/vocab.bpe;
  `format="vocab_merges"` writes dir/vocab.json and dir/merges.txt;
- `tok.save("x/gpt2-vocab.json", format=...)` writes it and its companion, named by replacing the
  ending: `encoder.json` <-> `vocab.bpe`, `vocab.json` <-> `merges.txt` (HF's `{prefix}-vocab.json`
  and `{prefix}-merges.txt` too);
- `tokenforge.load(either file)` finds the other by the same rule, or takes it as
  `merges_file=` / `vocab_file=`.

The files carry no split pattern: `pattern="gpt2"` unless given. Merges are applied as listed
(Hugging Face's and GPT-2's rule), without HF's `ignore_merges`, which these files cannot say.
Character-level files (with `</w>`, not byte-level) are read by char_bpe_files.py.
"""

from __future__ import annotations

from pathlib import Path

from .pair_files import FORMATS, check_pair, companion, paths, write_pair
from ..models.byte_bpe import absent_bytes_supported
from ._common import BYTE_TO_CHAR, CHAR_TO_BYTE, build, explicit_merges, fail, missing_bytes, parse_json, to_chars

def looks_like_vocab(obj) -> bool:
    return isinstance(obj, dict) and bool(obj) and all(isinstance(v, int) and not isinstance(v, bool) for v in obj.values())


def looks_like_merges(first_line: str) -> bool:
    return first_line.startswith("#version") or len(first_line.split(" ")) == 2


# --------------------------------------------------------------------------------------------------
# Reading


def load_from_vocab(path: Path, vocab: dict, **overrides):
    merges_path = _other(path, overrides.pop("merges_file", None), "merges_file")
    return _load(path, vocab, merges_path, _read(merges_path), overrides)


def load_from_merges(path: Path, data: bytes, **overrides):
    vocab_path = _other(path, overrides.pop("vocab_file", None), "vocab_file")
    vocab = parse_json(_read(vocab_path), vocab_path)
    if not looks_like_vocab(vocab):
        fail(vocab_path, None, "expected a JSON object mapping each token to its id")
    return _load(vocab_path, vocab, path, data, overrides)


def _other(path: Path, given, keyword: str) -> Path:
    if given is not None:
        return Path(given)
    other = companion(path)
    if other is None:
        fail(path, None, f"one half of a BPE vocabulary + merges pair, and its name does not say where the other "
                         f"half is (encoder.json/vocab.bpe, vocab.json/merges.txt): pass {keyword}=PATH")
    if not other.is_file():
        fail(path, None, f"one half of a BPE vocabulary + merges pair: {other} does not exist; pass {keyword}=PATH")
    return other


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        fail(path, None, f"cannot read: {e.strerror or e}")


def parse_merges(data: bytes, source) -> list[tuple[str, str]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(source, None, f"not UTF-8 text ({e})")
    merges = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if lineno == 1 and line.startswith("#version"):
            continue
        parts = line.split(" ")
        if len(parts) != 2 or not all(parts):
            fail(source, f"line {lineno}", f"expected 'left right', got {line[:80]!r}")
        merges.append((parts[0], parts[1]))
    return merges


def _load(vocab_path: Path, vocab: dict, merges_path: Path, merges_data: bytes, overrides: dict):
    check_pair(vocab, vocab_path, merges_data, merges_path)
    pairs = parse_merges(merges_data, merges_path)
    from . import char_bpe_files

    byte_level = all(BYTE_TO_CHAR[b] in vocab for b in range(256))
    if "end_of_word" in overrides or (not byte_level and char_bpe_files.marker_of(vocab)):
        return char_bpe_files.load(vocab_path, vocab, merges_path, pairs, lambda items: _numbered(items, merges_data), overrides)
    # An empty token (Whisper's multilingual vocab.json has "": 50256) can never come out of BPE;
    # it is left out, as tiktoken_bpe.py does with an empty rank.
    vocab = {s: i for s, i in vocab.items() if s}
    decodable = {s: i for s, i in vocab.items() if all(c in CHAR_TO_BYTE for c in s)}
    made = {a + b for a, b in pairs}
    special = {s: i for s, i in vocab.items() if s not in decodable or (len(s) > 1 and s not in made)}
    if "special_tokens" in overrides:
        special = dict(overrides["special_tokens"])
    ranks: dict[bytes, int] = {}
    owner: dict[int, str] = {}
    for s, i in vocab.items():
        where = f"[{s!r}]"
        if i < 0:
            fail(vocab_path, where, f"invalid id {i}")
        if i in owner:
            fail(vocab_path, where, f"duplicate id {i} (also {owner[i]!r})")
        owner[i] = s
        if s in special:
            continue
        if s not in decodable:
            bad = next(c for c in s if c not in CHAR_TO_BYTE)
            fail(vocab_path, where, f"{bad!r} (U+{ord(bad):04X}) is not one of GPT-2's 256 byte characters, and "
                                    "the token is not among special_tokens")
        ranks[bytes(CHAR_TO_BYTE[c] for c in s)] = i
    # A byte text can hold may lack a token, as in tokenizer.json files (Falcon's control bytes):
    # tokenizers drops such a character, and so does ByteBPE (its `droppable`); not a continuation
    # byte (0x80-0xBF: no character class says which characters hold one)
    missing = missing_bytes(ranks)
    if not absent_bytes_supported(missing, False):
        inner = next(b for b in missing if 0x80 <= b < 0xC0)
        fail(vocab_path, None, f"no token for {len(missing)} of the 256 bytes, among them 0x{inner:02X} (written "
                               f"{BYTE_TO_CHAR[inner]!r}), which text holds inside characters: not a byte-level BPE vocabulary")
    merges = []
    for lineno, (a, b) in _numbered(pairs, merges_data):
        for part in (a, b, a + b):
            if part not in decodable or part in special:
                fail(merges_path, f"line {lineno}", f"{part!r} is not a token of {vocab_path.name}")
        merges.append((bytes(CHAR_TO_BYTE[c] for c in a), bytes(CHAR_TO_BYTE[c] for c in b)))
    if len(set(merges)) != len(merges):
        seen = set()
        for lineno, m in _numbered(merges, merges_data):
            if m in seen:
                fail(merges_path, f"line {lineno}", f"the merge {to_chars(m[0])!r} + {to_chars(m[1])!r} appears twice")
            seen.add(m)
    name = vocab_path.name
    for a, _ in FORMATS.values():
        if name.endswith(a):
            name = name[: -len(a)].rstrip("-_.")
    kwargs = dict(pattern="gpt2", mergeable_ranks=ranks, special_tokens=special, merges=merges,
                  ignore_merges=False, name=name or vocab_path.parent.name or "tokenizer")
    return build(f"{vocab_path} + {merges_path.name}", kwargs, {k: v for k, v in overrides.items() if k != "special_tokens"})


def _numbered(items, merges_data: bytes):
    """Pairs each merge with its line number (1 more when the file starts with #version)."""
    first = 2 if merges_data.startswith(b"#version") else 1
    return zip(range(first, first + len(items)), items)


# --------------------------------------------------------------------------------------------------
# Writing


def save(tok, path, format: str) -> None:
    vocab_path, merges_path = paths(path, format)
    state = tok._state()
    merges, ignore_merges = explicit_merges(tok)
    if state["merges"] is not None and ignore_merges:
        raise ValueError(f"{format}: this tokenizer uses ignore_merges (a piece that is a token is kept whole), "
                         "which vocab + merges files cannot say; save it as 'huggingface' or 'tokenforge'")
    if state["normalizer"] is not None:
        raise ValueError(f"{format}: vocab + merges files cannot say that the text is normalized "
                         f"({state['normalizer']}); save it as 'huggingface' or 'tokenforge'")
    vocab = {to_chars(b): i for b, i in sorted(state["mergeable_ranks"].items(), key=lambda kv: kv[1])}
    for s, i in state["special_tokens"].items():
        if s in vocab:
            raise ValueError(f"{format}: the special token {s!r} is spelled like a byte-level token")
        vocab[s] = i
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))
    write_pair(vocab_path, vocab, merges_path, [f"{to_chars(a)} {to_chars(b)}" for a, b in merges])
