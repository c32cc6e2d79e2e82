"""Dataset encoding: exact ids, document separators, dtype, atomic output, refusal, bad input."""

import json

import numpy as np
import pytest

import tokenforge
from tokenforge import dataset

from conftest import MULTILINGUAL


@pytest.fixture
def files(tmp_path, corpus_texts):
    texts = {"a.txt": corpus_texts["shakespeare"] + MULTILINGUAL, "b.txt": corpus_texts["stdlib"][:300_000], "c.txt": ""}
    paths = []
    for name, text in texts.items():
        p = tmp_path / name
        p.write_text(text, encoding="utf-8", newline="")
        paths.append(p)
    return paths, list(texts.values())


@pytest.mark.parametrize("name,suffix,dtype", [("gpt2", ".bin", np.uint16), ("cl100k_base", ".npy", np.uint32)])
def test_exact_ids_and_sidecar(tmp_path, files, name, suffix, dtype):
    paths, texts = files
    tok = tokenforge.get_encoding(name)
    out = tmp_path / f"train{suffix}"
    meta = dataset.encode_files(tok, paths, out, num_threads=2)
    expected = [i for t in texts for i in tok.encode_ordinary(t) + [tok.eot_token]]
    ids = dataset.read_ids(out)
    assert ids.dtype == dtype and ids.tolist() == expected
    assert meta["count"] == len(expected) and meta["dtype"] == np.dtype(dtype).name
    assert json.loads((tmp_path / f"train{suffix}.json").read_text()) == meta
    assert [s["tokens"] for s in meta["sources"]] == [len(tok.encode_ordinary(t)) + 1 for t in texts]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no leftovers


def test_separator_splits_documents(tmp_path, corpus_texts):
    tok = tokenforge.get_encoding("gpt2")
    text = corpus_texts["tinystories"] * 3
    src = tmp_path / "stories.txt"
    src.write_text(text, encoding="utf-8")
    dataset.encode_files(tok, [src], tmp_path / "out.bin", separator="<|endoftext|>")
    docs = [d for d in text.split("<|endoftext|>")]
    docs = docs[:-1] if docs[-1] == "" else docs
    expected = [i for d in docs for i in tok.encode_ordinary(d) + [tok.eot_token]]
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected


def test_refuses_existing_output_and_overwrites_on_request(tmp_path, files):
    paths, _ = files
    tok = tokenforge.get_encoding("gpt2")
    out = tmp_path / "x.bin"
    dataset.encode_files(tok, paths[:1], out)
    before = out.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite"):
        dataset.encode_files(tok, paths[1:2], out)
    assert out.read_bytes() == before
    dataset.encode_files(tok, paths[1:2], out, overwrite=True)
    assert out.read_bytes() != before


def test_bad_input_leaves_nothing(tmp_path):
    tok = tokenforge.get_encoding("gpt2")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text " * 1000 + b"\xff\xfe broken")
    with pytest.raises(ValueError, match="bad.txt.*not UTF-8"):
        dataset.encode_files(tok, [bad], tmp_path / "out.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]
    meta = dataset.encode_files(tok, [bad], tmp_path / "out.bin", errors="replace")
    assert meta["count"] > 0
    with pytest.raises(FileNotFoundError):
        dataset.encode_files(tok, [tmp_path / "missing.txt"], tmp_path / "o2.bin")
    with pytest.raises(ValueError, match="directory"):
        dataset.encode_files(tok, [tmp_path], tmp_path / "o3.bin")
    with pytest.raises(ValueError, match="no input"):
        dataset.encode_files(tok, [], tmp_path / "o4.bin")
