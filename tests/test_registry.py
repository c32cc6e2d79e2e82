"""Named encodings, the model table, and the vocabulary-file cache (offline, verified, atomic)."""

import hashlib

import pytest

import tokenforge
import importlib

loader = importlib.import_module("tokenforge.vocab_cache")


def test_list_and_get_every_encoding(tiktoken_module):
    assert set(tokenforge.list_encoding_names()) == set(tiktoken_module.list_encoding_names())
    for name in tokenforge.list_encoding_names():
        enc = tokenforge.get_encoding(name)
        ref = tiktoken_module.get_encoding(name)
        assert enc.name == name and enc.n_vocab == ref.n_vocab
        assert enc._special_tokens == ref._special_tokens
    with pytest.raises(ValueError, match="Unknown encoding"):
        tokenforge.get_encoding("nope")


def test_o200k_harmony(tiktoken_module):
    enc, ref = tokenforge.get_encoding("o200k_harmony"), tiktoken_module.get_encoding("o200k_harmony")
    text = "<|start|>user<|message|>hi there<|end|><|reserved_200500|>"
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    ids = ref.encode("<|endofprompt|><|reserved_200018|>", allowed_special="all")  # two names, one id
    assert enc.encode("<|endofprompt|><|reserved_200018|>", allowed_special="all") == ids
    assert enc.decode(ids) == ref.decode(ids)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-2024-05-13", "gpt-4", "gpt-4-0314", "gpt-3.5-turbo-0301",
                                   "text-embedding-3-small", "text-davinci-003", "davinci", "gpt2", "o1-mini",
                                   "ft:gpt-4o-mini:org", "gpt-oss-120b", "gpt-5-mini", "code-davinci-edit-001"])
def test_model_table_matches_tiktoken(tiktoken_module, model):
    assert tokenforge.encoding_name_for_model(model) == tiktoken_module.encoding_name_for_model(model)
    assert tokenforge.encoding_for_model(model).name == tiktoken_module.encoding_for_model(model).name


def test_unknown_model_names_it():
    with pytest.raises(KeyError, match="my-model"):
        tokenforge.encoding_for_model("my-model")


URL = "https://example.invalid/vocab/test.tiktoken"


def test_reads_from_tiktoken_cache_and_verifies(tmp_path, monkeypatch):
    data = b"YQ== 0\n"
    sha = hashlib.sha256(data).hexdigest()
    monkeypatch.setenv("TOKENFORGE_CACHE_DIR", str(tmp_path / "own"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tt"))
    (tmp_path / "tt").mkdir()
    (tmp_path / "tt" / loader.cache_key(URL)).write_bytes(data)
    assert loader.read_file_cached(URL, sha) == data
    # A file whose hash is wrong is never used.
    (tmp_path / "tt" / loader.cache_key(URL)).write_bytes(b"tampered")
    with pytest.raises(loader.VocabularyNotFound) as e:
        loader.read_file_cached(URL, sha)
    assert loader.cache_key(URL) in str(e.value) and str(tmp_path / "own") in str(e.value)


def test_offline_error_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENFORGE_CACHE_DIR", str(tmp_path / "own"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    with pytest.raises(loader.VocabularyNotFound, match="test.tiktoken"):
        loader.read_file_cached(URL, "0" * 64)


def test_write_atomic_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "f.bin"
    loader.write_atomic(target, b"old")

    class Boom(bytes):
        pass

    with pytest.raises(TypeError):
        loader.write_atomic(target, object())  # fails while writing
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temporary left behind


def test_parse_tiktoken_errors_name_the_line():
    with pytest.raises(ValueError, match="line 2"):
        loader.parse_tiktoken_bpe(b"YQ== 0\nnot-base64!! 1\n", source="x.tiktoken")
    with pytest.raises(ValueError, match="appears twice"):
        loader.parse_tiktoken_bpe(b"YQ== 0\nYQ== 1\n")
