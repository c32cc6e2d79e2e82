"""Fuzz target: tokenforge.load on arbitrary bytes, written under the name of each format's file.

The first byte chooses the file kind (tokenforge JSON, tokenizer.json, .tiktoken, encoder.json +
vocab.bpe, vocab.json + merges.txt); for a pair, the rest is split in two at PAIR_SEPARATOR. A
.tiktoken file gets pattern= and special_tokens= from the input as well. load must either raise
ValueError or return a tokenizer that works: it encodes and decodes a text (round trip when the
pattern is a named one), and saving it in tokenforge's format and loading that gives the same
tokenizer.
"""

import atexit
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:  # replaying saved inputs needs no atheris
    atheris = None

if atheris is not None and __name__ == "__main__":
    with atheris.instrument_imports(include=["tokenforge"]):  # coverage of tokenforge's Python code
        import tokenforge
        import tokenforge.formats
else:
    import tokenforge

import _common  # noqa: E402

SAMPLE = "Hello world, don't 1234 — naïve 速い 😀 \n\n  x<|endoftext|>"
PATTERNS = ["gpt2", "cl100k", "o200k", r"\S+|\s+"]
_TMP = tempfile.mkdtemp(prefix="fuzz-load-")
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)  # no folder left in /tmp per run


# Values a structured mutation puts in place of a node of a JSON file: every JSON type, odd numbers.
VALUES = [None, True, 0, -1, 1.5, 2**31, 2**32 - 1, 2**32, 2**64, "", "x", "<|endoftext|>", "\\", "(", [], {},
          [1, 2], ["a", "b"], "a b", {"type": "Sequence"}, {"type": "ByteLevel"}, {"Regex": "("}, [[0, 1]], {"a": 1}]
_SEEDS = None


def mutate_json(data: bytes) -> bytes:
    """Structure-aware mode (first byte >= 0x80): the input's bytes pick a seed JSON file and a few
    nodes in it (walking down keys and list items) to replace, delete or duplicate. Byte-level
    mutations rarely keep JSON valid; this reaches the loaders' checks of types and shapes."""
    import copy
    import json

    global _SEEDS
    if _SEEDS is None:
        _SEEDS = [s for s in _common.seed_inputs() if s[0] in (0, 1, 3, 4)]
    seed = _SEEDS[data[1] % len(_SEEDS)] if len(data) > 1 else _SEEDS[0]
    first, _, second = seed[1:].partition(_common.PAIR_SEPARATOR)
    obj = json.loads(first)
    pos = 2
    while pos + 2 < len(data):
        depth, choice = data[pos] % 6, data[pos + 1]
        pos += 2
        parent, key = None, None
        node = obj
        for _ in range(depth):
            keys = list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []
            if not keys:
                break
            parent, key = node, keys[data[pos % len(data)] % len(keys)]
            pos += 1
            node = node[key]
        if parent is None:
            continue
        if choice < 200:
            parent[key] = copy.deepcopy(VALUES[choice % len(VALUES)])
        elif choice < 230 and isinstance(parent, dict):
            del parent[key]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(node))
    return bytes([seed[0]]) + json.dumps(obj).encode() + (_common.PAIR_SEPARATOR + second if second else b"")


def materialize(data: bytes) -> bytes:
    """The plain input (kind byte + file bytes) that `data` stands for: what tests/regressions keeps,
    so a saved crash does not depend on the seed files staying the same."""
    return mutate_json(data) if data and data[0] >= 0x80 else data


def TestOneInput(data: bytes) -> None:
    if not data:
        return
    data = materialize(data)
    kind = data[0] % len(_common.FILE_KINDS)
    body = data[1:]
    name, other = _common.FILE_KINDS[kind]
    folder = os.path.join(_TMP, "case")
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        os.unlink(os.path.join(folder, f))
    first, second = body, None
    if other is not None:
        first, _, second = body.partition(_common.PAIR_SEPARATOR)
        with open(os.path.join(folder, other), "wb") as f:
            f.write(second)
    path = os.path.join(folder, name)
    with open(path, "wb") as f:
        f.write(first)
    overrides = {}
    if name.endswith(".tiktoken"):
        overrides = {"pattern": PATTERNS[data[0] // 8 % len(PATTERNS)],
                     "special_tokens": {"<|endoftext|>": 1000 + data[0]} if data[0] & 1 else {}}
    try:
        tok = tokenforge.load(path, **overrides)
    except _common.LOAD_ERRORS:
        return
    check_tokenizer(tok)


def check_tokenizer(tok) -> None:
    try:
        ids = tok.encode(SAMPLE, allowed_special="all", disallowed_special=())
    except ValueError as e:
        # A model without an unknown token cannot encode a character outside its vocabulary; it
        # says so (Hugging Face would drop the character silently). Any other error is a finding.
        if "not in the vocabulary and the model has no unknown token" not in str(e):
            raise
        return
    text = tok.decode(ids)
    if tok._native_pattern >= 0 and tok.normalizer is None:
        if tok.decode_bytes(tok.encode_ordinary(SAMPLE)) != SAMPLE.encode():
            raise AssertionError("decode(encode_ordinary(text)) != text")
    assert isinstance(text, str)
    assert tok.encode_batch([SAMPLE, ""], allowed_special="all", disallowed_special=()) == [ids, []]
    # save / load identity in tokenforge's own format (which can express every tokenizer)
    out = os.path.join(_TMP, "again.json")
    tok.save(out)
    again = tokenforge.load(out)
    if tokenforge.io.to_dict(again) != tokenforge.io.to_dict(tok):
        raise AssertionError("tokenforge-format save/load changed the tokenizer")
    if again.encode(SAMPLE, allowed_special="all", disallowed_special=()) != ids:
        raise AssertionError("reloaded tokenizer encodes differently")


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
