"""Fuzz target: encode on arbitrary text, for every kind of small tokenizer and cl100k_base.

The input chooses a tokenizer, a special-token policy and a text (arbitrary code points, lone
surrogates included, or the input's bytes decoded with errors="surrogateescape"-free replacement).
Checked on every input: encode raises only the documented ValueError (a disallowed special token),
and then only if the text holds one; decode(encode_ordinary(text)) == text for surrogate-free text
without a normalizer; encode == encode_batch item == encode_to_numpy == encode_iterable over the
text in pieces; count_tokens == len(encode_ordinary).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:
    atheris = None

if atheris is not None and __name__ == "__main__":
    with atheris.instrument_imports(include=["tokenforge"]):
        import tokenforge  # noqa: F401
else:
    import tokenforge  # noqa: F401

import _common  # noqa: E402

POLICIES = [
    dict(),
    dict(allowed_special="all"),
    dict(disallowed_special=()),
    dict(allowed_special={"<|endoftext|>"}, disallowed_special=()),
    dict(allowed_special={"<|endoftext|>"}),
]


def tokenizers():
    toks = dict(_common.small_tokenizers())
    toks["cl100k"] = _common.cl100k()
    return list(toks.values())


_TOKS = None


class _Input:
    """A small FuzzedDataProvider that needs no atheris (so replays run anywhere)."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def rest(self) -> bytes:
        return self.data[self.pos:]


def text_of(raw: bytes, mode: int) -> str:
    if mode == 0:  # UTF-8, invalid bytes replaced
        return raw.decode("utf-8", "replace")
    if mode == 1:  # code points from 3 bytes each, surrogates included
        return "".join(chr(int.from_bytes(raw[i:i + 3], "little") % 0x110000) for i in range(0, len(raw) - 2, 3))
    if mode == 2:  # latin-1: every byte a character (NUL, controls)
        return raw.decode("latin-1")
    # tokens-like: the bytes choose among fragments of special tokens and tricky text
    frags = ["<|endoftext|>", "<|endoftext", "<|", "|>", "<|im_start|>", "<|fim_prefix|>", " ", "\n", "\r\n",
             "a", "A", "'s", "1", "é", "e\u0301", "\u0301", "中", "😀", "\ud800", "\x00", "\t", "  ", "/", "'"]
    return "".join(frags[b % len(frags)] for b in raw)


def TestOneInput(data: bytes) -> None:
    global _TOKS
    if _TOKS is None:
        _TOKS = tokenizers()
    inp = _Input(data)
    tok = _TOKS[inp.byte() % len(_TOKS)]
    policy = POLICIES[inp.byte() % len(POLICIES)]
    mode = inp.byte() % 4
    cut = inp.byte()
    text = text_of(inp.rest(), mode)
    check(tok, text, policy, cut)


def has_surrogates(text: str) -> bool:
    return any(0xD800 <= ord(c) < 0xE000 for c in text)


def check(tok, text: str, policy: dict, cut: int) -> None:
    ordinary = tok.encode_ordinary(text)
    assert tok.count_tokens(text) == len(ordinary)
    if not has_surrogates(text) and tok.normalizer is None and tok._native_pattern >= 0:
        if tok.decode_bytes(ordinary) != text.encode("utf-8"):
            raise AssertionError("decode(encode_ordinary(text)) != text")
    try:
        ids = tok.encode(text, **policy)
    except _common.ENCODE_ERRORS as e:
        if "disallowed special token" not in str(e):
            raise
        # it must be right: the text holds a special token that the policy disallows
        assert any(s in text or s in _replace(text) for s in tok.special_tokens), text
        return
    assert ids == tok.encode_batch([text, text[:cut]], num_threads=2, **policy)[0]
    assert tok.encode_to_numpy(text, **policy).tolist() == ids
    if not policy.get("allowed_special"):
        assert ids == ordinary
    step = cut % 7 + 1
    streamed = list(tok.encode_iterable([text[i:i + step] for i in range(0, len(text), step)], **policy))
    assert streamed == ids or tok._native_pattern < 0, "encode_iterable differs from encode"
    assert tok.decode(ids) == tok.decode_bytes(ids).decode("utf-8", "replace")


def _replace(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
