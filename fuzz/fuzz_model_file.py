"""Fuzz target: sentencepiece `.model` files (protobuf), read without sentencepiece.

The input is the file. Seeds are small unigram and BPE models (with and without byte fallback,
user-defined and control pieces) that tokenforge trains and writes; libFuzzer's mutations change
wire types, lengths, varints, piece types and scores. `tokenforge.load` must raise ValueError or
return a tokenizer that encodes, decodes and samples; memory must stay bounded (-rss_limit_mb).
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
    with atheris.instrument_imports(include=["tokenforge"]):
        import tokenforge
else:
    import tokenforge

import _common  # noqa: E402

SAMPLE = "Hello world, don't 1234 — naïve 速い 😀 \n\n  x"
_PATH = os.path.join(tempfile.mkdtemp(prefix="fuzz-model-"), "m.model")
atexit.register(shutil.rmtree, os.path.dirname(_PATH), ignore_errors=True)  # no folder left in /tmp per run


def seed_models() -> list[bytes]:
    """Small real .model files: unigram with and without byte fallback, and a BPE model."""
    lines = _common.TRAIN_TEXT.splitlines()
    models = [
        tokenforge.train_unigram(lines, vocab_size=300),
        tokenforge.train_unigram(lines, vocab_size=400, byte_fallback=True),
    ]
    return [m.to_model_bytes() for m in models]


def TestOneInput(data: bytes) -> None:
    with open(_PATH, "wb") as f:
        f.write(data)
    try:
        tok = tokenforge.load(_PATH)
    except _common.LOAD_ERRORS:
        return
    ids = tok.encode(SAMPLE)
    assert isinstance(tok.decode(ids), str)
    assert tok.encode_batch([SAMPLE, ""]) == [ids, []]


if __name__ == "__main__":
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()
