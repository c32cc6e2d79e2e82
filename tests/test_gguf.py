"""GGUF files (llama.cpp's models): the tokenizer in their metadata, through `tokenforge.load(path)`.

- llama.cpp's own tokenizer tests: its vocabulary-only GGUF files of twelve model families, each
  with texts (`.inp`, edge cases of spaces, newlines, digits, scripts and emoji) and the ids the
  model's Hugging Face tokenizer gives them (`.out`), shipped in llama-cpp-python's sdist and
  fetched by tools/fetch_real_tokenizers.py ("not downloaded" skips).
- The same vocabulary in two formats gives the same ids on real multilingual text: Llama 3's GGUF
  (Hugging Face merges) against Meta's tiktoken-format `tokenizer.model`, GPT-2's GGUF against
  tiktoken's gpt2.
- The reader against llama.cpp's own Python package (gguf-py): files written by its GGUFWriter,
  every value type, read back the same.
- Hostile files: every truncation of a header, counts past the end, bad magic or versions, a
  string that is not UTF-8: a ValueError naming the file, never a crash or a hang; a file of
  "tensors" after the header is not read.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

import tokenforge
from conftest import SHARED
from tokenforge.formats import gguf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from fetch_real_tokenizers import cache_dir  # noqa: E402

FOLDER = cache_dir() / "llama-cpp-python"
TESTED = ["bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "llama-bpe", "llama-spm",
          "mpt", "phi-3", "qwen2", "refact", "starcoder"]


def _file(name: str) -> Path:
    path = FOLDER / f"ggml-vocab-{name}.gguf"
    if not path.is_file():
        pytest.skip(f"not downloaded: {path} (run tools/fetch_real_tokenizers.py)")
    return path


def _llama_cpp_cases(path: Path) -> list[tuple[str, list[int]]]:
    """llama.cpp's tests/test-tokenizer-0: texts separated by a marker line, ids one line each."""
    texts = path.with_name(path.name + ".inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    ids = path.with_name(path.name + ".out").read_text(encoding="utf-8").split("\n")
    assert len(ids) >= len(texts)
    return [(t, [int(x) for x in line.split()]) for t, line in zip(texts, ids)]


@pytest.mark.parametrize("name", TESTED)
def test_llama_cpp_tokenizer_tests(name):
    path = _file(name)
    tok = tokenforge.load(path)
    cases = _llama_cpp_cases(path)
    assert len(cases) >= 40
    wrong = [(text, tok.encode(text, add_special_tokens=False), want) for text, want in cases
             if tok.encode(text, add_special_tokens=False) != want]
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("name", ["gpt-2", "llama-bpe", "qwen2", "command-r", "mpt"])
def test_byte_level_decode_gives_the_text_back(name):
    tok = tokenforge.load(_file(name))
    for text, _ in _llama_cpp_cases(_file(name)):
        assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


def test_a_sentencepiece_gguf_saves_as_a_model_file(tmp_path):
    sentencepiece = pytest.importorskip("sentencepiece")
    tok = tokenforge.load(_file("llama-spm"))
    path = tmp_path / "llama.model"
    tok.save(path, format="sentencepiece")
    reference = sentencepiece.SentencePieceProcessor(model_file=str(path))
    assert tok.get_score(500) == reference.get_score(500)
    for text, want in _llama_cpp_cases(_file("llama-spm")):
        assert reference.encode(text) == want == tok.encode(text, add_special_tokens=False)


def test_added_tokens_that_are_not_special_survive_decode():
    # MPT's runs of spaces are user-defined (not special) tokens: encode matches them in the text,
    # and decode keeps them, as tokenizers does (they were skipped with the special ones).
    hf = pytest.importorskip("tokenizers")
    import json

    path = _file("mpt")
    tok = tokenforge.load(path)
    reference = hf.Tokenizer.from_str(json.dumps(gguf.to_hf_json(path, gguf.read_metadata(path.read_bytes(), path))))
    text = "def f(x):\n        return  x  +  1\n"
    ids = tok.encode(text, add_special_tokens=False)
    assert ids == reference.encode(text, add_special_tokens=False).ids and 50276 in ids  # ("  ")
    assert tok.decode(ids) == reference.decode(ids) == text


def test_tokens_outside_the_byte_alphabet_decode_as_tokenizers_decodes_them(tmp_path):
    # Command-R's vocabulary spells 1,403 tokens (emoji, tag characters) outside GPT-2's alphabet.
    # No merge makes them, so encode never gives them; tokenizers' ByteLevel decoder gives their
    # UTF-8. They are decode-only tokens of the byte-level model (the engine encodes the rest; they
    # sent the whole file to the generic BPE model before), and survive saving in the formats that
    # can hold them.
    hf = pytest.importorskip("tokenizers")
    import json

    from tokenforge.byte_alphabet import from_chars
    from tokenforge.models import ByteBPE

    path = _file("command-r")
    obj = gguf.to_hf_json(path, gguf.read_metadata(path.read_bytes(), path))
    reference = hf.Tokenizer.from_str(json.dumps(obj))
    tok = tokenforge.load(path)
    outside = sorted(i for s, i in obj["model"]["vocab"].items() if from_chars(s) is None)
    assert len(outside) == 1403 and isinstance(tok.model, ByteBPE) and sorted(tok.model.decode_only) == outside
    hello = tok.encode("Hello 🎉 world", add_special_tokens=False)
    for ids in ([i] for i in outside[::7]), [outside[:50] + hello + outside[-50:]]:
        for seq in ids:
            assert tok.decode(seq) == reference.decode(seq), seq
            assert [tok.id_to_token(i) for i in seq] == [reference.id_to_token(i) for i in seq]
    assert tok.decode_tokens_bytes(outside[:3]) == [reference.id_to_token(i).encode() for i in outside[:3]]
    assert all(tok.token_to_id(reference.id_to_token(i)) == i for i in outside)
    assert tok.n_vocab == reference.get_vocab_size() and tok.get_vocab() == reference.get_vocab()
    # saved: tokenforge's own file and tokenizer.json keep them; tiktoken's format cannot
    text = "Emoji 😀 and 👍🏽, tags 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f, código 12345"
    for fmt, name in (("tokenforge", "c.tokenforge.json"), ("huggingface", "tokenizer.json")):
        tok.save(tmp_path / name, format=fmt)
        again = tokenforge.load(tmp_path / name)
        assert again.encode(text) == tok.encode(text) and again.decode(outside[:99]) == tok.decode(outside[:99])
    written = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert written.encode(text).ids == tok.encode(text) and written.decode(outside[:99]) == reference.decode(outside[:99])
    with pytest.raises(ValueError, match="decode-only"):
        tok.save(tmp_path / "c.tiktoken", format="tiktoken")


def test_beginning_of_text_added_as_llama_cpp_adds_it():
    llama3 = tokenforge.load(_file("llama-bpe"))  # llama.cpp adds <|begin_of_text|> for llama-bpe
    assert llama3.encode("Hello") == [128000] + llama3.encode("Hello", add_special_tokens=False)
    spm = tokenforge.load(_file("llama-spm"))  # and <s> for sentencepiece models
    assert spm.encode("Hello", add_special_tokens=True)[0] == 1
    gpt2 = tokenforge.load(_file("gpt-2"))  # not for GPT-2
    assert gpt2.encode("Hello") == gpt2.encode("Hello", add_special_tokens=False)


def _multilingual_documents() -> list[str]:
    from test_real_files import documents

    return documents()


def test_llama3_gguf_equals_metas_tokenizer_model_on_real_text():
    meta = cache_dir() / "llama-models" / "llama3" / "tokenizer.model"
    if not meta.is_file():
        pytest.skip(f"not downloaded: {meta}")
    from_gguf = tokenforge.load(_file("llama-bpe"))
    from_meta = tokenforge.load(meta)
    docs = _multilingual_documents()
    assert sum(map(len, docs)) > 100_000
    for doc in docs:
        assert from_gguf.encode_ordinary(doc) == from_meta.encode_ordinary(doc)


def test_gpt2_gguf_equals_tiktoken_on_real_text():
    import tiktoken

    from_gguf = tokenforge.load(_file("gpt-2"))
    reference = tiktoken.get_encoding("gpt2")
    for doc in _multilingual_documents():
        assert from_gguf.encode_ordinary(doc) == reference.encode_ordinary(doc)


def test_a_vocabulary_without_the_bytes_utf8_never_holds_runs_on_the_engine():
    # MPT's vocabulary has no token for C0, C1 and F5-FF, bytes no UTF-8 text holds: the engine
    # gives them ids of its own that nothing decodes; raw byte pieces lose them, as tokenizers drops
    # a character without a token.
    tok = tokenforge.load(_file("mpt"))
    model = tok._model
    assert type(model).__name__ == "ByteBPE" and tok._engine_splits
    assert set(model.absent) == set(gguf_absent := [0xC0, 0xC1, *range(0xF5, 0x100)]) and len(gguf_absent) == 13
    assert model.encode_byte_pieces([b"ab\xffc\xc0"]) == model.encode_byte_pieces([b"abc"])
    virtual = max(max(model.ranks.values()), max(t.id for t in tok._added)) + 1
    for i in (virtual, virtual + 12):
        with pytest.raises(ValueError, match=str(i)):
            tok.decode([i])


@pytest.mark.parametrize("name", ["falcon", "starcoder"])
def test_characters_without_tokens_are_dropped_as_tokenizers_drops_them(name):
    # Falcon's vocabulary lacks control bytes, StarCoder's the lead byte F1 (planes 4-7): tokenizers
    # drops such a character from a piece before merging, so its neighbours may merge across it.
    hf = pytest.importorskip("tokenizers")
    import json

    path = _file(name)
    reference = hf.Tokenizer.from_str(json.dumps(gguf.to_hf_json(path, gguf.read_metadata(path.read_bytes(), path))))
    tok = tokenforge.load(path)
    assert type(tok._model).__name__ == "ByteBPE" and tok._droppable is not None
    texts = ["a\x03b c\x04\x05d", "x\U00040001y \U00080000z", "plain text", "\x0bab\x11" * 3, "é\U00050000é",
             "in\x03formation", "\U00040000" * 5, "de\U0004ffffpth"]
    for text in texts:
        assert tok.encode(text, add_special_tokens=False) == reference.encode(text, add_special_tokens=False).ids, text
        assert tok.encode_ordinary(text) == reference.encode(text, add_special_tokens=False).ids, text
    batch = tok.encode_batch(texts, add_special_tokens=False, num_threads=2)
    assert [list(r) for r in batch] == [reference.encode(t, add_special_tokens=False).ids for t in texts]


@pytest.mark.parametrize("name", [n for n in TESTED if n not in ("llama-spm", "phi-3")])
def test_equal_to_hugging_face_tokenizers_on_real_text(name):
    # The tokenizer.json each file stands for, read by Hugging Face's tokenizers itself: the same
    # ids on the battery's multilingual text (llama.cpp's own regex engine reads a few of the
    # patterns differently: see test_equal_to_llama_cpp_on_real_text).
    hf = pytest.importorskip("tokenizers")
    import json

    path = _file(name)
    obj = gguf.to_hf_json(path, gguf.read_metadata(path.read_bytes(), path))
    reference = hf.Tokenizer.from_str(json.dumps(obj))
    tok = tokenforge.load(path)
    docs = _multilingual_documents()
    for doc in docs:
        assert tok.encode(doc, add_special_tokens=False) == reference.encode(doc, add_special_tokens=False).ids, doc[:80]


def test_a_vocabulary_without_a_byte_text_holds_is_refused_clearly(tmp_path):
    data = tiny_gguf().replace(_string(BYTES[0]), _string(BYTES[0] + "x"), 1)  # no token for the byte 00
    path = tmp_path / "gap.gguf"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"gap\.gguf.*no token for 1 of the 256 bytes \(first: 0x00"):
        tokenforge.load(path)


# --------------------------------------------------------------------------------------------------
# Files made here: a tiny byte-level vocabulary, written by hand or by gguf-py's GGUFWriter.

BYTES = [tokenforge.formats._common.BYTE_TO_CHAR[b] for b in range(256)]


def _string(s: str | bytes) -> bytes:
    raw = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(raw)) + raw


def _kv_string(key: str, value: str) -> bytes:
    return _string(key) + struct.pack("<I", 8) + _string(value)


def _kv_strings(key: str, values: list[str]) -> bytes:
    return _string(key) + struct.pack("<IIQ", 9, 8, len(values)) + b"".join(_string(v) for v in values)


def _kv_ints(key: str, values: list[int]) -> bytes:
    return _string(key) + struct.pack("<IIQ", 9, 5, len(values)) + struct.pack(f"<{len(values)}i", *values)


def tiny_gguf(extra: bytes = b"", extra_keys: int = 0, version: int = 3) -> bytes:
    """A GGUF header for byte-level BPE: the 256 bytes, "ab" and "abc", one control token."""
    tokens = BYTES + ["ab", "abc", "<|end|>"]
    kvs = [
        _kv_string("general.architecture", "llama"),
        _kv_string("general.name", "tiny"),
        _kv_string("tokenizer.ggml.model", "gpt2"),
        _kv_string("tokenizer.ggml.pre", "gpt-2"),
        _kv_strings("tokenizer.ggml.tokens", tokens),
        _kv_ints("tokenizer.ggml.token_type", [1] * 258 + [3]),
        _kv_strings("tokenizer.ggml.merges", ["a b", "ab c"]),
    ]
    body = b"".join(kvs) + extra
    return gguf.MAGIC + struct.pack("<IQQ", version, 0, len(kvs) + extra_keys) + body


def test_a_tiny_file_written_by_hand(tmp_path):
    path = tmp_path / "model.bin"  # (the name says nothing: the content does)
    path.write_bytes(tiny_gguf() + b"\xff" * 4096)  # "tensors" after the header are never read
    tok = tokenforge.load(path)
    assert tok.name == "tiny"
    assert tok.encode("abc abd", add_special_tokens=False) == [257, 32, 256, 100]  # (byte b is token b)
    assert tok.decode([257, 32, 256, 100]) == "abc abd"
    assert tok.encode("x<|end|>", allowed_special="all") == [120, 258]


def test_gguf_py_writer_and_this_reader_agree(tmp_path):
    writer_module = pytest.importorskip("gguf")
    path = tmp_path / "written.gguf"
    w = writer_module.GGUFWriter(str(path), "llama")
    w.add_name("written by gguf-py")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(BYTES + ["ab", "abc", "<|begin_of_text|>"])
    w.add_token_types([1] * 258 + [3])
    w.add_token_merges(["a b", "ab c"])
    w.add_bos_token_id(258)
    w.add_add_bos_token(True)
    w.add_uint8("general.u8", 200)
    w.add_int16("general.i16", -3)
    w.add_uint64("general.u64", 2**63)
    w.add_float64("general.f64", 0.25)
    w.add_bool("general.flag", True)
    w.add_array("general.floats", [0.5, 1.5])
    w.add_string("tokenizer.chat_template", "{{ messages }}")
    w.add_string("other.ignored", "x" * 100)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    meta = gguf.read_metadata(path.read_bytes(), path)
    assert meta["general.u8"] == 200 and meta["general.i16"] == -3 and meta["general.u64"] == 2**63
    assert meta["general.f64"] == 0.25 and meta["general.flag"] is True and meta["general.floats"] == [0.5, 1.5]
    assert meta["tokenizer.ggml.tokens"][-1] == "<|begin_of_text|>" and "other.ignored" not in meta
    assert meta["tokenizer.chat_template"] == "{{ messages }}"
    reader = writer_module.GGUFReader(str(path))
    for key, field in reader.fields.items():
        if key.startswith(("tokenizer.", "general.")) and key in meta:
            assert field.contents() == meta[key], key
    tok = tokenforge.load(path)
    assert tok.encode("abc") == [258, 257]  # llama-bpe: <|begin_of_text|> added, "abc" kept whole


def test_the_real_files_read_as_gguf_py_reads_them():
    reader_module = pytest.importorskip("gguf")
    for name in ("llama-spm", "bert-bge"):  # (gguf-py reads a vocabulary in seconds: the two small ones)
        path = _file(name)
        meta = gguf.read_metadata(path.read_bytes(), path)
        fields = reader_module.GGUFReader(str(path)).fields
        keys = [k for k in fields if k.startswith(("tokenizer.", "general."))]
        assert keys and set(keys) == set(meta)
        for key in keys:
            want = fields[key].contents()
            if isinstance(want, list) and want and isinstance(want[0], float):
                assert meta[key] == pytest.approx(want), key
            else:
                assert meta[key] == want, key


# --------------------------------------------------------------------------------------------------
# Hostile files


def test_every_truncation_is_a_clear_error(tmp_path):
    data = tiny_gguf()
    for end in list(range(0, 200)) + list(range(200, len(data), 97)):
        path = tmp_path / "cut.gguf"
        path.write_bytes(data[:end])
        with pytest.raises(ValueError, match="cut.gguf.*(truncated|does not fit|is empty|not a tokenizer file)"):
            tokenforge.load(path)


@pytest.mark.parametrize("header, message", [
    (gguf.MAGIC + struct.pack("<IQQ", 1, 0, 1), "version"),
    (gguf.MAGIC + struct.pack(">IQQ", 3, 0, 1), "little-endian"),
    (gguf.MAGIC + struct.pack("<IQQ", 7, 0, 1), "version 7"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 2**62), "metadata keys"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**60), "does not fit"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 1) + _string("k") + struct.pack("<I", 99), "unknown value type 99"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 1) + _string("k") + struct.pack("<IIQ", 9, 8, 2**61), "does not fit"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 1) + _string("k") + struct.pack("<IIQ", 9, 4, 2**61), "does not fit"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 1) + _string("general.name") + struct.pack("<I", 8) + _string(b"\xff\xfe"),
     "not UTF-8"),
    (gguf.MAGIC + struct.pack("<IQQ", 3, 0, 0) + b"\0" * 16, "without a tokenizer"),
])
def test_bad_headers_are_clear_errors(tmp_path, header, message):
    path = tmp_path / "bad.gguf"
    path.write_bytes(header + b"\0" * 8)
    with pytest.raises(ValueError, match=message):
        tokenforge.load(path)


def test_unknown_models_and_pre_tokenizers_are_named(tmp_path):
    path = tmp_path / "t5.gguf"
    path.write_bytes(gguf.MAGIC + struct.pack("<IQQ", 3, 0, 2) + _kv_string("tokenizer.ggml.model", "plamo2")
                     + _kv_strings("tokenizer.ggml.tokens", ["a"]))
    with pytest.raises(ValueError, match="'plamo2'.*'gpt2'.*'llama'.*'t5'.*'bert'.*'rwkv'"):
        tokenforge.load(path)
    data = tiny_gguf().replace(_kv_string("tokenizer.ggml.pre", "gpt-2"), _kv_string("tokenizer.ggml.pre", "nopenope"))
    path.write_bytes(data)
    with pytest.raises(ValueError, match="'nopenope'.*known"):
        tokenforge.load(path)


def test_the_shared_vocabulary_is_not_a_gguf_file():
    assert not gguf.looks_like((SHARED / "vocab" / "cl100k_base.tiktoken").read_bytes()[:4])


# --------------------------------------------------------------------------------------------------
# llama.cpp itself (llama-cpp-python, not a test dependency: it compiles llama.cpp; skipped when absent)


# Where llama.cpp's own regex engine and pre-processing differ from the model's tokenizer.json (which
# tokenforge follows, as the .out files do): deepseek-llm's "\s?" before U+3000, the BERT
# pre-processing of Arabic, Devanagari and stacked accents; and where its unigram search segments a
# word otherwise than sentencepiece (nomic-bert-moe: a run of "=" in one document of the battery;
# "poda"+"no" for sentencepiece's "pod"+"ano" in Polish, 8 of bench_gguf.py's 300 documents).
LLAMA_CPP_DIFFERS = {
    "deepseek-llm": "llama.cpp's regex engine reads '\\s?' before U+3000 otherwise than the tokenizer.json's",
    "bert-bge": "llama.cpp's BERT pre-processing of Arabic, Devanagari and stacked accents differs from tokenizers'",
    "nomic-bert-moe": "llama.cpp's unigram search segments some words otherwise than sentencepiece",
}


def test_a_unigram_gguf_equals_sentencepiece_on_real_text(tmp_path):
    # A "t5" file (sentencepiece unigram with its precompiled normalization map), saved as a .model
    # and run by sentencepiece itself: the same ids on the battery's text (llama.cpp's on all but one
    # document: LLAMA_CPP_DIFFERS).
    sentencepiece = pytest.importorskip("sentencepiece")
    tok = tokenforge.load(_file("nomic-bert-moe"))
    assert tok.model_type == "unigram" and tok.encode("Hello world") == [0, 35378, 8999, 2]  # <s> ... </s>
    path = tmp_path / "nomic.model"
    tok.save(path, format="sentencepiece")
    reference = sentencepiece.SentencePieceProcessor(model_file=str(path))
    for doc in _multilingual_documents():
        assert tok.encode_ordinary(doc) == reference.encode(doc), doc[:80]


@pytest.mark.parametrize("name", TESTED + ["nomic-bert-moe"])
def test_equal_to_llama_cpp_on_real_text(name):
    llama_cpp = pytest.importorskip("llama_cpp")
    if name in LLAMA_CPP_DIFFERS:
        pytest.skip(f"{name}: {LLAMA_CPP_DIFFERS[name]} (tokenforge follows the latter)")
    path = _file(name)
    model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    tok = tokenforge.load(path)
    sentencepiece = name in ("llama-spm", "phi-3", "nomic-bert-moe")
    for doc in _multilingual_documents():
        # llama.cpp matches user-defined tokens in the text always, control tokens with special=True:
        # encode does both for the byte-level files (as their tokenizer.json would), encode_ordinary
        # neither for the sentencepiece ones (as sentencepiece does)
        want = model.tokenize(doc.encode("utf-8"), add_bos=False, special=not sentencepiece)
        got = tok.encode_ordinary(doc) if sentencepiece else tok.encode(doc, add_special_tokens=False)
        assert got == want, doc[:80]


def test_bytes_flipped_anywhere_load_or_raise_value_error(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    data = tiny_gguf()
    path = tmp_path / "flipped.gguf"

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)), min_size=1, max_size=6))
    def check(flips):
        mutated = bytearray(data)
        for at, value in flips:
            mutated[at] = value
        path.write_bytes(bytes(mutated))
        try:
            tok = tokenforge.load(path)
        except ValueError:
            return  # (named: every error is a ValueError with the file's name)
        tok.encode("abc abd x", add_special_tokens=False)

    check()


@pytest.mark.parametrize("name", ["mpt", "command-r", "qwen2", "starcoder", "falcon", "llama-bpe", "deepseek-llm"])
def test_saved_as_tokenizer_json_tokenizers_gives_the_same_ids(tmp_path, name):
    # Byte-level GGUF files written as tokenizer.json (their pattern as a Split, non-special added
    # tokens and decode-only tokens kept) and read by Hugging Face's tokenizers: tokenforge's ids.
    hf = pytest.importorskip("tokenizers")
    tok = tokenforge.load(_file(name))
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    reference = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    docs = _multilingual_documents()[:60] + [text for text, _ in _llama_cpp_cases(_file(name))]
    for doc in docs:
        assert reference.encode(doc, add_special_tokens=False).ids == tok.encode(doc, add_special_tokens=False), doc[:80]


# A Gemma 3 file, written here from Gemma 3's sentencepiece model as llama.cpp's converter writes
# one: its user-defined pieces' '▁' as spaces (runs of spaces '  ' ...), "<unk>" typed as a control
# token, no space prefix.

def _kv_floats(key: str, values: list[float]) -> bytes:
    return _string(key) + struct.pack("<IIQ", 9, 6, len(values)) + struct.pack(f"<{len(values)}f", *values)


def _kv_u32(key: str, value: int) -> bytes:
    return _string(key) + struct.pack("<II", 4, value)


def _kv_bool(key: str, value: bool) -> bytes:
    return _string(key) + struct.pack("<IB", 7, value)


def _gemma3_gguf(tmp_path) -> tuple[Path, Path]:
    from tokenforge.spm import model_file as mf

    model = cache_dir() / "maxtext" / "tokenizer.gemma3"
    if not model.is_file():
        pytest.skip(f"not downloaded: {model} (run tools/fetch_real_tokenizers.py)")
    m = mf.parse(model.read_bytes())
    types = [p.type if p.type != mf.UNKNOWN else mf.CONTROL for p in m.pieces]
    tokens = [p.piece.replace("\u2581", " ") if p.type == mf.USER_DEFINED else p.piece for p in m.pieces]
    unk = next(i for i, p in enumerate(m.pieces) if p.type == mf.UNKNOWN)
    kvs = [_kv_string("general.architecture", "gemma3"), _kv_string("tokenizer.ggml.model", "llama"),
           _kv_string("tokenizer.ggml.pre", "default"), _kv_strings("tokenizer.ggml.tokens", tokens),
           _kv_floats("tokenizer.ggml.scores", [p.score for p in m.pieces]), _kv_ints("tokenizer.ggml.token_type", types),
           _kv_u32("tokenizer.ggml.bos_token_id", 2), _kv_u32("tokenizer.ggml.eos_token_id", 1),
           _kv_u32("tokenizer.ggml.unknown_token_id", unk), _kv_u32("tokenizer.ggml.padding_token_id", 0),
           _kv_bool("tokenizer.ggml.add_bos_token", True), _kv_bool("tokenizer.ggml.add_space_prefix", False)]
    path = tmp_path / "gemma3-vocab.gguf"
    path.write_bytes(gguf.MAGIC + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    return path, model


_SPACE_RUNS = ["a  b", "  x", "x   ", "\t\t\tz", "\n\n\n\n", " " * 40 + "a", "a" + " " * 33 + "b",
               "def f():\n        return  1\n"]


def test_a_gemma3_gguf_equals_its_sentencepiece_model(tmp_path):
    # The unknown piece typed as control (Gemma 3's files) is taken from unknown_token_id; the
    # user-defined pieces written with spaces are found where sentencepiece finds '▁▁' ...
    sentencepiece = pytest.importorskip("sentencepiece")
    path, model = _gemma3_gguf(tmp_path)
    tok = tokenforge.load(path)
    reference = sentencepiece.SentencePieceProcessor(model_file=str(model))
    for doc in _multilingual_documents() + _SPACE_RUNS + ["<start_of_turn>user\nhi<end_of_turn>"]:
        assert tok.encode_ordinary(doc) == reference.encode(doc), doc[:80]
    assert tok.encode("Hello") == [2] + reference.encode("Hello")  # <bos>, as llama.cpp adds it


def test_a_gemma3_gguf_equals_llama_cpp(tmp_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    path, _ = _gemma3_gguf(tmp_path)
    model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    tok = tokenforge.load(path)
    # (not a literal '▁▁', which llama.cpp reads as spaces; nor "<end_of_turn>", whose type llama.cpp
    # makes control whatever the file says, as the real files type it)
    for doc in _multilingual_documents() + _SPACE_RUNS:
        assert tok.encode_ordinary(doc) == model.tokenize(doc.encode("utf-8"), add_bos=False, special=False), doc[:80]
