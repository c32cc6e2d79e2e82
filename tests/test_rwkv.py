"""RWKV's "world" tokenizer (greedy longest match over bytes, models/longest_match.py): its
vocabulary file from the `rwkv` package, and the same vocabulary in a GGUF file.

- The real file (fetched by tools/fetch_real_tokenizers.py with the rwkv package's own pure-Python
  TRIE_TOKENIZER, the reference): the same ids on the battery's multilingual documents and code,
  decode gives the text back, saving writes the file again byte for byte.
- The native trie walk against the readable rule (`encode_word_reference`), hypothesis over
  vocabularies of byte strings (tokens that end inside a character too) and texts.
- A GGUF file as llama.cpp's converter writes RWKV's vocabulary (tokens escaped as Python bytes
  literals, "<s>" at id 0), written with gguf-py: the same ids, and llama.cpp's reading of "<s>".
- Hostile files: a ValueError naming the line; a literal that is code is never run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge.formats import gguf
from tokenforge.models import LongestMatch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from fetch_real_tokenizers import cache_dir  # noqa: E402

FOLDER = cache_dir() / "rwkv"
VOCAB = FOLDER / "rwkv_vocab_v20230424.txt"


@pytest.fixture(scope="module")
def real():
    """(tokenforge's tokenizer, the rwkv package's TRIE_TOKENIZER) of the real file."""
    code = FOLDER / "code" / "rwkv_tokenizer.py"
    if not VOCAB.is_file() or not code.is_file():
        pytest.skip(f"not downloaded: {VOCAB} (run tools/fetch_real_tokenizers.py)")
    spec = importlib.util.spec_from_file_location("rwkv_tokenizer_reference", code)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tokenforge.load(VOCAB), module.TRIE_TOKENIZER(str(VOCAB))


def _documents() -> list[str]:
    from test_real_files import documents

    return documents()


def test_equal_to_the_rwkv_package_on_real_text(real):
    tok, reference = real
    docs = _documents()
    assert sum(map(len, docs)) > 100_000
    for doc in docs:
        ids = tok.encode(doc)
        assert ids == reference.encode(doc), doc[:80]
        assert tok.decode(ids) == doc
    assert tok.encode_batch(docs[:40], num_threads=2) == [reference.encode(d) for d in docs[:40]]
    assert tok.encode_to_numpy(docs[0]).tolist() == reference.encode(docs[0])
    edge = "\x00\x7f é\u0301 😀👍🏽 \t\r\n" + " " * 300 + "#" * 200 + "日本語の文章。"
    assert tok.encode(edge) == reference.encode(edge)
    assert tok.encode("a\ud800b") == tok.encode("a\ufffdb")  # a lone surrogate: U+FFFD, as tiktoken does


def test_partial_characters_decode_as_the_package_decodes(real):
    tok, reference = real
    partial = [i for i in range(1, 65530) if reference.idx2token[i][:1] in (b"\xe4", b"\xe5") and
               len(reference.idx2token[i]) < 3][:5]
    assert partial  # tokens ending inside a character exist
    for i in partial:
        assert tok.decode_bytes([i]) == reference.decodeBytes([i])
        assert tok.decode([i]) == reference.decodeBytes([i]).decode("utf-8", "replace")
    assert tok.n_vocab == 65530 and tok.vocab_size == 65529
    assert tok.id_to_token(300) == "ĠA" and tok.token_to_id("ĠA") == 300  # (GPT-2's byte alphabet, as byte-level files)


def test_saved_files_are_the_same(real, tmp_path):
    tok, _ = real
    tok.save(tmp_path / "vocab.txt", format="rwkv")
    assert (tmp_path / "vocab.txt").read_bytes() == VOCAB.read_bytes().replace(b"\r\n", b"\n")  # (its lines end in CRLF)
    tok.save(tmp_path / "own.json")
    again = tokenforge.load(tmp_path / "own.json")
    text = _documents()[0]
    assert again.encode(text) == tok.encode(text) and isinstance(again.model, LongestMatch)
    with pytest.raises(ValueError, match="rwkv: the format holds a greedy longest-match"):
        tokenforge.get_encoding("gpt2").save(tmp_path / "x.txt", format="rwkv")


# tokens over a small alphabet (so that long ones occur in the texts), cut anywhere (partial UTF-8)
_byte_tokens = st.lists(st.tuples(st.text(alphabet="ab é中", min_size=1, max_size=12), st.integers(1, 40)).map(
    lambda t: t[0].encode("utf-8")[:t[1]]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(_byte_tokens, st.text(alphabet=st.sampled_from(list("ab é中😀\n")), max_size=80))
def test_native_equals_the_readable_rule(extra, text):
    tokens = {bytes([b]): b for b in range(256)}
    for t in extra:
        tokens.setdefault(t, len(tokens))
    model = LongestMatch(tokens)
    assert model.encode_pieces([text]) == model.encode_word_reference(text)


def _write_gguf(path: Path, writer_module, tokens: dict[bytes, int]) -> None:
    """RWKV's vocabulary as llama.cpp's converter writes it (convert_hf_to_gguf.py,
    _set_vocab_rwkv_world): "<s>" (control) at 0, then each token as repr(bytes)[2:-1]. With the
    hyperparameters llama.cpp asks of an RWKV-6 model (a tiny one: no tensors are read)."""
    w = writer_module.GGUFWriter(str(path), "rwkv6")
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(64)
    w.add_layer_norm_eps(1e-5)
    w.add_rescale_every_n_layers(6)
    w.add_wkv_head_size(64)
    w.add_time_mix_extra_dim(32)
    w.add_time_decay_extra_dim(64)
    w.add_tokenizer_model("rwkv")
    by_id = sorted(tokens.items(), key=lambda kv: kv[1])
    assert [i for _, i in by_id] == list(range(1, len(by_id) + 1))
    w.add_token_list([b"<s>"] + [repr(b)[2:-1].encode("utf-8") for b, _ in by_id])
    w.add_token_types([3] + [1] * len(by_id))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()


def test_a_gguf_file_of_the_vocabulary(real, tmp_path):
    writer_module = pytest.importorskip("gguf")
    tok, reference = real
    path = tmp_path / "rwkv.gguf"
    _write_gguf(path, writer_module, tok.model.tokens)
    from_gguf = tokenforge.load(path)
    assert from_gguf.token_to_id("<s>") == 0 and from_gguf.n_vocab == 65530
    for doc in _documents()[:60]:
        assert from_gguf.encode(doc) == reference.encode(doc), doc[:80]
    # llama.cpp puts "<s>" in its trie with the other tokens: text holding it gives 0
    assert from_gguf.encode("a<s>b") == tok.encode("a") + [0] + tok.encode("b")
    assert gguf.unescape_rwkv(r"\xe4\xb8\t\n\r\\\'x") == b"\xe4\xb8\t\n\r\\'x"


@pytest.mark.parametrize("line, words", [
    ("1 'a' 2", "line 1: the token has 1 bytes, the line says 2"),
    ("1 'a' 1\n1 'b' 1", "line 2: id 1 again (line 1)"),
    ("1 'a' 1\n2 'a' 1", "line 2: the token b'a' again (id 1)"),
    ("1 'a' 1\n2 __import__('os').system('true') 1", "line 2: expected '<id> <Python str or bytes literal> <length>'"),
    ("1 'a' 1\n2 '__import__(\"os\").system(\"true\")' 1", "line 2: the token has 31 bytes, the line says 1"),
    ("1 'a'+'\\x62' 2", "is not a str or bytes literal"),
    ("1 b'\\xzz' 1", "is not a str or bytes literal"),
    ("1 'a' 1", "byte 0 (0x00) is not a token"),
    ("1 'a' 1\n2 'b' 99999999999", "line 2: expected '<id> <Python str or bytes literal> <length>'"),
    ("1 'a' 1\n" + "9" * 5000 + " 'b' 1", "line 2: expected"),  # (int() of 5,000 digits would raise its own error)
    ("1 'a' 1\n2 '" + "x" * 70_000 + "' 70000", "longer than 65536 bytes"),  # (a table entry per byte)
])
def test_broken_files_are_clear_errors(tmp_path, line, words):
    path = tmp_path / "vocab.txt"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=None) as e:
        tokenforge.load(path)
    assert str(e.value).startswith(str(path)) and words in str(e.value), str(e.value)


def test_equal_to_llama_cpp(real, tmp_path):
    # llama.cpp itself on the GGUF file (llama-cpp-python compiles llama.cpp: not a test dependency;
    # skipped unless installed, as in tests/test_gguf.py)
    llama_cpp = pytest.importorskip("llama_cpp")
    writer_module = pytest.importorskip("gguf")
    tok, _ = real
    path = tmp_path / "rwkv.gguf"
    _write_gguf(path, writer_module, tok.model.tokens)
    model = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    from_gguf = tokenforge.load(path)
    for doc in _documents() + ["a<s>b"]:
        assert from_gguf.encode(doc) == model.tokenize(doc.encode("utf-8"), add_bos=False, special=False), doc[:80]
