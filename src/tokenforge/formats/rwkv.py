"""RWKV's "world" vocabulary (`rwkv_vocab_v20230424.txt`, shipped in the `rwkv` package): one token
per line, `<id> <Python literal> <length in bytes>`, the literal a str ('the', "'s") or, for tokens
that are not UTF-8, bytes (b'\\xe4\\xb8'). The tokenizer is greedy longest match over bytes
(models/longest_match.py), with no normalizer, pre-tokenizer or special tokens: the rwkv package's
TRIE_TOKENIZER exactly. Ids start at 1 in the file; RWKV models use 0 as the end of a document,
which the file does not list (llama.cpp's converter makes it a control token "<s>"):
`load(path, special_tokens={"<s>": 0})` adds it.

Literals without a backslash are read by slicing (nearly every line); the others by
`ast.literal_eval`, which evaluates literals only (never code, unlike the rwkv package's `eval`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..outputs import write_atomic
from ._common import fail

_LINE = re.compile(r"""\d+ (b?)(['"]).*\2 \d+""")


def looks_like(first_line: str) -> bool:
    return _LINE.fullmatch(first_line) is not None


def parse(data: bytes, source) -> dict[bytes, int]:
    """{token bytes: id}; ValueError naming the line for anything else."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(source, None, f"not UTF-8 text (byte {e.start})")
    tokens: dict[bytes, int] = {}
    seen: dict[int, int] = {}
    for n, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line:
            continue
        first, last = line.find(" "), line.rfind(" ")
        literal = line[first + 1:last]
        if first < 0 or last <= first or not line[:first].isdigit() or not line[last + 1:].isdigit() \
                or not _LINE.fullmatch(line):
            fail(source, f"line {n}", f"expected '<id> <Python str or bytes literal> <length>', got {line[:80]!r}")
        if literal[0] != "b" and "\\" not in literal and literal[0] not in literal[1:-1]:  # nearly every line
            token = literal[1:-1].encode("utf-8")
        else:
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                value = None
            if not isinstance(value, (str, bytes)):
                fail(source, f"line {n}", f"{literal[:60]!r} is not a str or bytes literal")
            token = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
        i, length = int(line[:first]), int(line[last + 1:])
        if len(token) != length:
            fail(source, f"line {n}", f"the token has {len(token)} bytes, the line says {length}")
        if not token:
            fail(source, f"line {n}", "an empty token")
        if i in seen:
            fail(source, f"line {n}", f"id {i} again (line {seen[i]})")
        if token in tokens:
            fail(source, f"line {n}", f"the token {token!r} again (id {tokens[token]})")
        seen[i] = n
        tokens[token] = i
    if not tokens:
        fail(source, None, "no tokens")
    return tokens


def load(path: Path, data: bytes, **overrides):
    from ..models import LongestMatch
    from ..tokenizer import Tokenizer

    tokens = parse(data, path)
    try:
        model = LongestMatch(tokens)
        return Tokenizer(model, name=overrides.pop("name", None) or path.stem or "rwkv", **overrides)
    except (TypeError, ValueError) as e:
        fail(path, None, str(e))


def _literal(token: bytes) -> str:
    """How RWKV's file writes a token: a str literal when it is UTF-8, else a bytes literal."""
    try:
        return repr(token.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(token)


def save(tok, path) -> None:
    from ..models import LongestMatch
    from ..pre_tokenizers import NoPreTokenizer

    model = tok.model
    if not isinstance(model, LongestMatch):
        raise ValueError(f"rwkv: the format holds a greedy longest-match vocabulary, not a {type(model).__name__}")
    if tok.added_tokens or tok.normalizer is not None or tok.post_processor is not None or \
            not isinstance(tok.pre_tokenizer, NoPreTokenizer):
        raise ValueError("rwkv: the format holds the vocabulary only (no added tokens, normalizer, pre-tokenizer or "
                         "post-processor)")
    lines = [f"{i} {_literal(b)} {len(b)}\n" for b, i in sorted(model.tokens.items(), key=lambda kv: kv[1])]
    write_atomic(Path(path), "".join(lines).encode("utf-8"))
