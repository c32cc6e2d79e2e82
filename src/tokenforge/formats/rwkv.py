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

_LINE = re.compile(r"""\d{1,10} (b?)(['"]).*\2 \d{1,10}\r?""")


def looks_like(first_line: str) -> bool:
    return _LINE.fullmatch(first_line) is not None


_ROW = re.compile(r"""^(\d{1,10}) ((b?)(['"]).*\4) (\d{1,10})\r?$""", re.MULTILINE)  # (ids and lengths < 10^10)


def parse(data: bytes, source) -> dict[bytes, int]:
    """{token bytes: id}; ValueError naming the line for anything else. Whole columns at a time
    (one regex pass over the text, then map and set), the line-by-line loop only to name a problem."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(source, None, f"not UTF-8 text (byte {e.start})")
    rows = _ROW.findall(text)
    lines = [line for line in text.split("\n") if line.strip("\r")]
    if len(rows) != len(lines):
        _name_bad_line(source, text)
    ids = list(map(int, [r[0] for r in rows]))
    literals = [r[1] for r in rows]
    # nearly every line: a str literal without an escape or its own quote inside, read by slicing
    tokens = [lit[1:-1].encode("utf-8") if lit[0] != "b" and "\\" not in lit and lit[0] not in lit[1:-1]
              else _evaluated(source, n, lit) for n, lit in enumerate(literals, 1)]
    if list(map(len, tokens)) != list(map(int, [r[4] for r in rows])) or b"" in tokens \
            or len(set(ids)) != len(ids) or len(set(tokens)) != len(tokens):
        _name_bad_token(source, ids, tokens, [int(r[4]) for r in rows])
    if not tokens:
        fail(source, None, "no tokens")
    return dict(zip(tokens, ids))


def _evaluated(source, n: int, literal: str) -> bytes:
    """A literal with escapes, by ast.literal_eval (literals only, never code)."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, (str, bytes)):
        fail(source, f"line {n}", f"{literal[:60]!r} is not a str or bytes literal")
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


def _name_bad_line(source, text: str):
    for n, line in enumerate(text.split("\n"), 1):
        if line.strip("\r") and not _ROW.fullmatch(line):
            fail(source, f"line {n}", f"expected '<id> <Python str or bytes literal> <length>', got {line[:80]!r}")
    fail(source, None, "lines that are not '<id> <literal> <length>'")  # (not reached)


def _name_bad_token(source, ids, tokens, lengths):
    """The first line (of the non-empty ones) whose token is wrong."""
    seen_ids: dict[int, int] = {}
    seen: dict[bytes, int] = {}
    for n, (i, token, length) in enumerate(zip(ids, tokens, lengths), 1):
        if len(token) != length:
            fail(source, f"line {n}", f"the token has {len(token)} bytes, the line says {length}")
        if not token:
            fail(source, f"line {n}", "an empty token")
        if i in seen_ids:
            fail(source, f"line {n}", f"id {i} again (line {seen_ids[i]})")
        if token in seen:
            fail(source, f"line {n}", f"the token {token!r} again (id {seen[token]})")
        seen_ids[i], seen[token] = n, i


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
