"""Dataset encoding: exact ids on real text with tricky boundaries, every input format, shards,
resume, validation split, atomic outputs, checked readers, bad input."""

import errno
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tokenforge
from tokenforge import dataset, dataset_readers, outputs

from conftest import MULTILINGUAL


def expected_ids(tok, docs, eot):
    return [i for d in docs for i in tok.encode_ordinary(d) + ([eot] if eot is not None else [])]


@pytest.fixture(scope="module")
def gpt2():
    return tokenforge.get_encoding("gpt2")


@pytest.fixture
def files(tmp_path, corpus_texts):
    texts = {"a.txt": corpus_texts["shakespeare"] + MULTILINGUAL, "b.txt": corpus_texts["stdlib"][:300_000], "c.txt": ""}
    paths = []
    for name, text in texts.items():
        p = tmp_path / name
        p.write_text(text, encoding="utf-8", newline="")
        paths.append(p)
    return paths, list(texts.values())


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("name,suffix,dtype", [("gpt2", ".bin", np.uint16), ("cl100k_base", ".npy", np.uint32)])
def test_exact_ids_and_sidecar(tmp_path, files, name, suffix, dtype):
    paths, texts = files
    tok = tokenforge.get_encoding(name)
    out = tmp_path / f"train{suffix}"
    meta = dataset.encode_files(tok, paths, out, num_threads=2)
    expected = expected_ids(tok, texts, tok.eot_token)
    ids = dataset.read_ids(out, verify=True)
    assert ids.dtype == dtype and ids.tolist() == expected
    assert meta["count"] == len(expected) and meta["dtype"] == np.dtype(dtype).name
    assert json.loads((tmp_path / f"train{suffix}.json").read_text()) == meta
    assert [s["tokens"] for s in meta["inputs"]] == [len(tok.encode_ordinary(t)) + 1 for t in texts]
    assert leftovers(tmp_path) == []
    if suffix == ".bin":  # one numpy call, as a training script does it
        assert np.memmap(out, dtype=dtype, mode="r").tolist() == expected
    else:
        assert np.load(out, mmap_mode="r").tolist() == expected


def test_separator_splits_documents(tmp_path, corpus_texts, gpt2):
    text = corpus_texts["tinystories"] * 3
    src = tmp_path / "stories.txt"
    src.write_text(text, encoding="utf-8")
    dataset.encode_files(gpt2, [src], tmp_path / "out.bin", separator="<|endoftext|>")
    docs = text.split("<|endoftext|>")
    docs = docs[:-1] if docs[-1] == "" else docs
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected_ids(gpt2, docs, gpt2.eot_token)


@pytest.mark.parametrize("separator", ["END OF DOC", "\n\n", "<|endoftext|>"])
def test_separator_straddling_a_read_boundary_is_found(tmp_path, monkeypatch, corpus_texts, gpt2, separator):
    """A separator with a space or newline used to be lost when it straddled a read boundary: the
    safe cut fell inside it. Small blocks put it across a boundary at every offset."""
    monkeypatch.setattr(dataset_readers, "BLOCK_BYTES", 64)
    monkeypatch.setattr(dataset_readers, "CHUNK_CHARS", 64)
    words = re.sub("\n+", "\n", corpus_texts["shakespeare"][:20_000])
    docs = [words[k * 97:(k + 1) * 97 + k % 13].strip("\n") for k in range(60)]  # every offset against the blocks
    src = tmp_path / "docs.txt"
    src.write_text(separator.join(docs), encoding="utf-8")
    dataset.encode_files(gpt2, [src], tmp_path / "out.bin", separator=separator)
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected_ids(gpt2, docs, gpt2.eot_token)


def test_real_size_boundary(tmp_path, corpus_texts, gpt2):
    """The same at the real block size: "END OF DOC" across the 1 MiB boundary."""
    filler = (corpus_texts["shakespeare"] * 2)[: dataset_readers.BLOCK_BYTES - 4]
    docs = [filler, "second document here", filler[:5000]]
    src = tmp_path / "big.txt"
    src.write_text("END OF DOC".join(docs), encoding="utf-8")
    assert src.read_bytes().index(b"END OF DOC") == dataset_readers.BLOCK_BYTES - 4
    dataset.encode_files(gpt2, [src], tmp_path / "out.bin", separator="END OF DOC")
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected_ids(gpt2, docs, gpt2.eot_token)


@pytest.mark.parametrize("kind", ["cjk", "csv"])
def test_text_without_ascii_cuts_streams_in_bounded_pieces(tmp_path, monkeypatch, kind):
    """Chinese / Japanese and numeric CSV have no "a b" cut: the reader used to keep the whole file
    in one growing buffer (quadratic rescans, memory as large as the file)."""
    monkeypatch.setattr(dataset_readers, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(dataset_readers, "CHUNK_CHARS", 4096)
    if kind == "cjk":
        lines = [line for line in MULTILINGUAL.splitlines() if any("\u3040" <= c <= "\u9fff" for c in line)]
        text = "".join(lines) * 1500
    else:
        rng = np.random.default_rng(0)
        text = "\n".join(",".join(f"{x:.4f}" for x in row) for row in rng.normal(size=(4000, 8)) * 1000)
    src = tmp_path / "t.txt"
    src.write_text(text, encoding="utf-8")
    sizes = [len(t) for t, _ in dataset_readers.segments(dataset_readers.Source(str(src), None),
                                                        cut=lambda b, s, e: dataset.safe_cut(b, (), start=s, end=e))]
    assert len(sizes) > 10 and max(sizes) <= 3 * 4096
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok = tokenforge.get_encoding(name)
        dataset.encode_files(tok, [src], tmp_path / f"{name}.bin")
        assert dataset.read_ids(tmp_path / f"{name}.bin").tolist() == expected_ids(tok, [text], tok.eot_token)


def test_refuses_existing_output_and_overwrites_on_request(tmp_path, files, gpt2):
    paths, _ = files
    out = tmp_path / "x.bin"
    dataset.encode_files(gpt2, paths[:1], out)
    before = out.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite"):
        dataset.encode_files(gpt2, paths[1:2], out)
    assert out.read_bytes() == before
    dataset.encode_files(gpt2, paths[1:2], out, overwrite=True)
    assert out.read_bytes() != before


def test_bad_input_leaves_nothing(tmp_path, gpt2):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine text " * 300_000 + b"\xff\xfe broken")
    with pytest.raises(ValueError, match=r"bad.txt.*not UTF-8.*byte offset 3000000\b"):  # from the file's start
        dataset.encode_files(gpt2, [bad], tmp_path / "out.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt"]
    meta = dataset.encode_files(gpt2, [bad], tmp_path / "out.bin", errors="replace")
    assert meta["count"] > 0
    with pytest.raises(FileNotFoundError):
        dataset.encode_files(gpt2, [tmp_path / "missing.txt"], tmp_path / "o2.bin")
    with pytest.raises(ValueError, match="directory"):
        dataset.encode_files(gpt2, [tmp_path], tmp_path / "o3.bin")
    with pytest.raises(ValueError, match="no input"):
        dataset.encode_files(gpt2, [], tmp_path / "o4.bin")
    with pytest.raises(FileNotFoundError, match="no such folder"):  # encode_files (older API) creates it
        dataset.encode_dataset(gpt2, [bad], tmp_path / "missing" / "o5.bin", errors="replace")
    assert not (tmp_path / "missing").exists()


# --------------------------------------------------------------------------------------------------
# Input formats


def write_jsonl(path, docs, field="text", opener=open):
    with opener(path, "wt", encoding="utf-8") as f:
        for k, d in enumerate(docs):
            f.write(json.dumps({"id": k, field: d, "meta": {"n": [1, 2]}}) + "\n")


@pytest.fixture
def docs(corpus_texts):
    text = corpus_texts["shakespeare"][:200_000]
    return [text[k:k + 1500 + k % 700] for k in range(0, 190_000, 2900)] + [MULTILINGUAL, "", "<|endoftext|> as text"]


def test_jsonl_gzip_zstd_and_parquet(tmp_path, docs, gpt2):
    zstandard = pytest.importorskip("zstandard")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    write_jsonl(tmp_path / "a.jsonl", docs)
    write_jsonl(tmp_path / "b.jsonl.gz", docs, opener=gzip.open)
    with open(tmp_path / "c.jsonl.zst", "wb") as raw, zstandard.ZstdCompressor().stream_writer(raw) as z:
        z.write("".join(json.dumps({"content": d}) + "\n" for d in docs).encode())
    pq.write_table(pa.table({"text": docs, "n": list(range(len(docs)))}), tmp_path / "d.parquet", row_group_size=7)
    expected = expected_ids(gpt2, docs, gpt2.eot_token)
    for name, field in [("a.jsonl", "text"), ("b.jsonl.gz", "text"), ("c.jsonl.zst", "content"), ("d.parquet", "text")]:
        out = tmp_path / f"{name}.bin"
        meta = dataset.encode_dataset(gpt2, [tmp_path / name], out, field=field)
        assert dataset.read_ids(out).tolist() == expected, name
        assert meta["documents"] == len(docs)
    # a gzip-compressed text file: its text, not "not UTF-8"
    with gzip.open(tmp_path / "t.txt.gz", "wt", encoding="utf-8") as f:
        f.write("<|endoftext|>".join(docs[:-2]))  # not the empty one (a trailing separator ends the text) nor the last (it holds the separator)
    dataset.encode_dataset(gpt2, [tmp_path / "t.txt.gz"], tmp_path / "t.bin", separator="<|endoftext|>")
    assert dataset.read_ids(tmp_path / "t.bin").tolist() == expected_ids(gpt2, docs[:-2], gpt2.eot_token)


def test_jsonl_errors_name_the_file_and_line(tmp_path, gpt2):
    cases = {
        "raw.jsonl": ("just some text\n", r"raw.jsonl: line 1: not a JSON record"),
        "field.jsonl": ('{"text": "a"}\n{"body": "b"}\n', r"field.jsonl: line 2: no field 'text' \(fields: body\).*--field"),
        "type.jsonl": ('{"text": 5}\n', r"type.jsonl: line 1: field 'text' is int"),
        "array.jsonl": ('[1, 2]\n', r"array.jsonl: line 1: expected a JSON object"),
        "deep.jsonl": ("[" * 100_000 + "]" * 100_000 + "\n", r"deep.jsonl: line 1: JSON nested too deeply"),
        "bytes.jsonl": (b'{"text": "\xff"}\n', r"bytes.jsonl: line 1: not UTF-8"),
    }
    for name, (content, message) in cases.items():
        p = tmp_path / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(ValueError, match=message):
            dataset.encode_dataset(gpt2, [p], tmp_path / "out.bin")
        assert not (tmp_path / "out.bin").exists()
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "x.parquet")
    with pytest.raises(ValueError, match=r"x.parquet: no column 'text' \(columns: body\)"):
        dataset.encode_dataset(gpt2, [tmp_path / "x.parquet"], tmp_path / "out.bin")
    pq.write_table(pa.table({"text": ["x", None]}), tmp_path / "n.parquet")
    with pytest.raises(ValueError, match=r"n.parquet: row 2: column 'text' is null"):
        dataset.encode_dataset(gpt2, [tmp_path / "n.parquet"], tmp_path / "out.bin")
    (tmp_path / "corrupt.txt.gz").write_bytes(gzip.compress(b"hello " * 1000)[:-30])
    with pytest.raises(ValueError, match="corrupt.txt.gz: corrupt gzip"):
        dataset.encode_dataset(gpt2, [tmp_path / "corrupt.txt.gz"], tmp_path / "out.bin")
    assert leftovers(tmp_path) == []


def test_fast_json_parser_reads_what_json_reads(tmp_path, monkeypatch, gpt2):
    """orjson (when installed) parses the lines first; whatever it refuses or reads differently
    from json (escaped lone surrogates, NaN, huge ints, invalid UTF-8 with errors="replace",
    duplicate keys) must give json's documents."""
    lines = [
        '{"text": "plain"}', '{"text": "dup", "text": "last wins"}', '{"text": "\\ud800 lone"}',
        '{"text": "nan", "x": NaN}', '{"text": "big", "n": 123456789012345678901234567890}',
        '  {"text": "spaces around"}  ', '{"text": "tab\\tand\\u00e9 \\ud83d\\ude00"}', "",
        '{"meta": {"text": 1}, "text": "nested field elsewhere"}',
    ]
    raw = "\n".join(lines).encode() + b'\n{"text": "bad \xff byte"}\n'
    (tmp_path / "t.jsonl").write_bytes(raw)
    source = dataset_readers.Source(str(tmp_path / "t.jsonl"), None)

    def documents():
        return [t for t, _ in dataset_readers.segments(source, errors="replace")]

    fast = documents()
    monkeypatch.setattr(dataset_readers, "_fast_json_loads", lambda: None)
    assert fast == documents()
    assert fast[1] == "last wins" and fast[2] == "\ud800 lone" and fast[-1] == "bad \ufffd byte"


def test_long_json_records_are_cut_and_exact(tmp_path, monkeypatch, corpus_texts, gpt2):
    """A long record (a 20 MB changelog in a JSON line) is cut at safe cuts like a text file, so
    that every core encodes it; the ids are those of the whole record."""
    monkeypatch.setattr(dataset_readers, "CHUNK_CHARS", 4096)
    monkeypatch.setattr(dataset, "BATCH_CHARS", 10_000)
    docs = [corpus_texts["shakespeare"][:60_000], "short", MULTILINGUAL * 20, corpus_texts["stdlib"][:50_000]]
    write_jsonl(tmp_path / "d.jsonl", docs)
    source = dataset_readers.Source(str(tmp_path / "d.jsonl"), None)
    cut = dataset._Encoder(gpt2, 2).cut
    segments = list(dataset_readers.segments(source, cut=cut))
    assert len(segments) > 20 and max(len(t) for t, _ in segments) <= 3 * 4096
    assert sum(ends for _, ends in segments) == len(docs)
    for name in ("gpt2", "o200k_base"):
        tok = tokenforge.get_encoding(name)
        meta = dataset.encode_dataset(tok, [tmp_path / "d.jsonl"], tmp_path / f"{name}.bin", num_threads=2)
        assert dataset.read_ids(tmp_path / f"{name}.bin").tolist() == expected_ids(tok, docs, tok.eot_token)
        assert meta["documents"] == len(docs)


def test_folders_globs_stdin_and_fsspec_urls(tmp_path, docs, gpt2):
    fsspec = pytest.importorskip("fsspec")
    folder = tmp_path / "corpus"
    (folder / "sub").mkdir(parents=True)
    (folder / ".hidden").mkdir()
    write_jsonl(folder / "b.jsonl", docs[:5])
    write_jsonl(folder / "sub" / "a.jsonl", docs[5:9])
    write_jsonl(folder / ".hidden" / "x.jsonl", ["never read"])
    expected = expected_ids(gpt2, docs[:9], gpt2.eot_token)
    dataset.encode_dataset(gpt2, [folder], tmp_path / "f.bin")
    assert dataset.read_ids(tmp_path / "f.bin").tolist() == expected
    dataset.encode_dataset(gpt2, [str(folder / "**" / "*.jsonl")], tmp_path / "g.bin")
    assert dataset.read_ids(tmp_path / "g.bin").tolist() == expected
    with pytest.raises(FileNotFoundError, match="no file matches"):
        dataset.encode_dataset(gpt2, [str(folder / "*.parquet")], tmp_path / "h.bin")
    # standard input, through the command line
    text = "<|endoftext|>".join(docs[:4])
    r = subprocess.run([sys.executable, "-m", "tokenforge.cli", "encode", "-t", "gpt2", "-q", "--separator",
                        "<|endoftext|>", "-o", str(tmp_path / "s.bin"), "-"], input=text.encode(), capture_output=True)
    assert r.returncode == 0, r.stderr
    assert dataset.read_ids(tmp_path / "s.bin").tolist() == expected_ids(gpt2, docs[:4], gpt2.eot_token)
    # fsspec: memory:// in and out, file:// in
    with fsspec.open("memory://in/docs.jsonl", "wt") as f:
        f.write("".join(json.dumps({"text": d}) + "\n" for d in docs[:9]))
    meta = dataset.encode_dataset(gpt2, ["memory://in/*.jsonl"], "memory://out/train.bin")
    fs = fsspec.filesystem("memory")
    assert np.frombuffer(fs.cat("/out/train.bin"), np.uint16).tolist() == expected
    assert json.loads(fs.cat("/out/train.bin.json"))["count"] == meta["count"] == len(expected)
    dataset.encode_dataset(gpt2, [f"file://{folder}"], "memory://out/shards", shard_size=2000)
    index = json.loads(fs.cat("/out/shards/index.json"))
    got = np.concatenate([np.frombuffer(fs.cat(f"/out/shards/{s['file']}"), np.uint16) for s in index["shards"]])
    assert got.tolist() == expected and len(index["shards"]) > 1
    assert not any(p.name.startswith("s3") for p in tmp_path.iterdir())


@pytest.mark.parametrize("protocol", ["memory", "file"])
def test_resume_of_a_remote_sharded_output(tmp_path, monkeypatch, docs, gpt2, protocol):
    """-o URL --shard-size --resume with the local engine: each checkpoint uploads its shards, then
    index.json; an interrupted run resumes from the remote index, never uploading a listed shard again."""
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem(protocol)
    root = f"/resume-{os.getpid()}" if protocol == "memory" else str(tmp_path / "remote")
    url = f"{protocol}://{root}"
    write_jsonl(tmp_path / "d.jsonl", docs * 3)
    once = tmp_path / "once"
    index = dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], once, shard_size=3000, val_fraction=0.1)
    monkeypatch.setattr(dataset, "BATCH_CHARS", 20_000)
    calls = []

    def interrupt(state):
        calls.append(state.tokens)
        if len(calls) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=3000, val_fraction=0.1, progress=interrupt)
    partial = json.loads(fs.cat_file(f"{root}/index.json"))
    assert partial["complete"] is False and 0 < len(partial["shards"]) < len(index["shards"])
    fs.pipe_file(f"{root}/train-000099.bin", b"stale shard of a killed run")
    with pytest.raises(FileExistsError, match="--resume"):
        dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=3000, val_fraction=0.1)
    with pytest.raises(ValueError, match=re.escape(url) + "/index.json: cannot resume: shard_size"):
        dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=4000, val_fraction=0.1, resume=True)
    uploads = []
    real_put = type(fs).put_file
    monkeypatch.setattr(type(fs), "put_file", lambda self, lpath, rpath, **kw: (uploads.append(rpath),
                                                                                 real_put(self, lpath, rpath, **kw))[1])
    result = dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=3000, val_fraction=0.1, resume=True)
    uploaded = {u.rstrip("/").rsplit("/", 1)[-1] for u in uploads}
    assert not uploaded & {s["file"] for s in partial["shards"]}  # finished shards are not rewritten
    remote = json.loads(fs.cat_file(f"{root}/index.json"))
    assert remote == result and remote["complete"] is True
    assert [s["file"] for s in remote["shards"]] == [s["file"] for s in index["shards"]]
    assert not fs.exists(f"{root}/train-000099.bin")
    for split in ("train", "val"):
        got = [np.frombuffer(fs.cat_file(f"{root}/{s['file']}"), np.uint16) for s in remote["shards"] if s["split"] == split]
        assert np.concatenate(got).tolist() == dataset.read_shards(once, split).tolist()
    # resuming a finished run: nothing to do, nothing rewritten (a job runner may run --resume again)
    uploads.clear()
    again = dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=3000, val_fraction=0.1, resume=True)
    assert again == dict(remote, already_complete=True) and not uploads
    assert json.loads(fs.cat_file(f"{root}/index.json")) == remote
    with pytest.raises(ValueError, match="cannot resume: shard_size"):  # still checked first
        dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=4000, val_fraction=0.1, resume=True)
    if protocol == "file":  # the command line passes --resume through
        r = subprocess.run([sys.executable, "-m", "tokenforge.cli", "encode", "-t", "gpt2", "-q", "--shard-size", "3000",
                            "--val-fraction", "0.1", "--resume", "-o", url, str(tmp_path / "d.jsonl")],
                           capture_output=True, text=True)
        assert r.returncode == 0 and "complete already" in r.stderr and "nothing to resume" in r.stderr, r.stderr
    # overwrite: the old index goes first, then its shards
    new = dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], url, shard_size=100_000, overwrite=True)
    names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(root, detail=False))
    assert names == ["index.json"] + [s["file"] for s in new["shards"]] and len(new["shards"]) < len(index["shards"])


def test_end_of_text_token_choice(tmp_path, corpus_texts, docs):
    sample = tmp_path / "sample.txt"
    sample.write_text(corpus_texts["shakespeare"][:50_000])
    tok = tokenforge.train_bpe([sample], 400, special_tokens=["<s>", "</s>"], verbose=False)
    write_jsonl(tmp_path / "d.jsonl", docs[:6])
    end = tok.encode_single_token("</s>")
    dataset.encode_dataset(tok, [tmp_path / "d.jsonl"], tmp_path / "auto.bin")  # </s> is found
    assert dataset.read_ids(tmp_path / "auto.bin").tolist() == expected_ids(tok, docs[:6], end)
    start = tok.encode_single_token("<s>")
    dataset.encode_dataset(tok, [tmp_path / "d.jsonl"], tmp_path / "s.bin", eot="<s>")
    assert dataset.read_ids(tmp_path / "s.bin").tolist() == expected_ids(tok, docs[:6], start)
    dataset.encode_dataset(tok, [tmp_path / "d.jsonl"], tmp_path / "none.bin", eot=None)
    assert dataset.read_ids(tmp_path / "none.bin").tolist() == expected_ids(tok, docs[:6], None)
    with pytest.raises(ValueError, match="'<eot>' is not a token"):
        dataset.encode_dataset(tok, [tmp_path / "d.jsonl"], tmp_path / "x.bin", eot="<eot>")
    plain = tokenforge.train_bpe([sample], 300, verbose=False)
    with pytest.raises(ValueError, match="--eot-token.*--no-eot"):
        dataset.encode_dataset(plain, [tmp_path / "d.jsonl"], tmp_path / "x.bin")


def test_other_tokenizer_families_encode_whole_documents(tmp_path, corpus_texts, docs):
    text = corpus_texts["shakespeare"][:100_000]
    wp = tokenforge.WordPieceTokenizer.train([text], vocab_size=500)
    write_jsonl(tmp_path / "d.jsonl", docs[:5])
    dataset.encode_dataset(wp, [tmp_path / "d.jsonl"], tmp_path / "wp.bin", eot="[SEP]")
    sep = wp.token_to_id("[SEP]")
    expected = [i for d in docs[:5] for i in wp.encode(d, add_special_tokens=False) + [sep]]
    assert dataset.read_ids(tmp_path / "wp.bin").tolist() == expected


def test_added_tokens_matched_in_ordinary_text_are_kept(tmp_path, files):
    # Added tokens that are not special (MPT's runs of spaces) are matched in any text, so the
    # dataset's native path (which cuts and encodes without added tokens) must not take such a
    # tokenizer: the ids are encode_ordinary's.
    paths, texts = files
    gpt2 = tokenforge.get_encoding("gpt2")
    tok = tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=gpt2._mergeable_ranks, special_tokens={"<|endoftext|>": 50256},
                               added_tokens=[tokenforge.AddedToken("    ", 50257, special=False)])
    assert tok.encode_ordinary("a    b") == [64, 50257, 65] and tok._native_pattern == -1
    dataset.encode_files(tok, paths, tmp_path / "out.bin", num_threads=2)
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected_ids(tok, texts, 50256)


# --------------------------------------------------------------------------------------------------
# Shards, resume, validation split


def test_shards_resume_and_validation_split(tmp_path, docs, gpt2):
    write_jsonl(tmp_path / "d.jsonl", docs)
    once = tmp_path / "once"
    index = dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], once, shard_size=3000, val_fraction=0.1)
    train_docs = [d for k, d in enumerate(docs) if not dataset._val_document(k, 0.1)]
    val_docs = [d for k, d in enumerate(docs) if dataset._val_document(k, 0.1)]
    assert len(val_docs) == len(docs) // 10
    assert dataset.read_shards(once).tolist() == expected_ids(gpt2, train_docs, gpt2.eot_token)
    assert dataset.read_shards(once, "val").tolist() == expected_ids(gpt2, val_docs, gpt2.eot_token)
    train = [s for s in index["shards"] if s["split"] == "train"]
    assert len(train) > 3 and all(s["count"] >= 3000 for s in train[:-1])
    for s in index["shards"]:  # each shard loads with one np.memmap
        assert len(np.memmap(once / s["file"], dtype=np.uint16, mode="r")) == s["count"]

    # a run interrupted after a few shards, then resumed: same result, finished shards untouched
    out = tmp_path / "resumed"
    calls = []

    def interrupt(state):
        calls.append(state.tokens)
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkey = dataset.BATCH_CHARS
    dataset.BATCH_CHARS = 20_000
    try:
        with pytest.raises(KeyboardInterrupt):
            dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], out, shard_size=3000, val_fraction=0.1,
                                   progress=interrupt)
        partial = json.loads((out / "index.json").read_text())
        assert partial["complete"] is False and 0 < len(partial["shards"]) < len(index["shards"])
        with pytest.raises(ValueError, match="interrupted run.*--resume"):
            dataset.read_shards(out)
        with pytest.raises(FileExistsError, match="--resume"):
            dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], out, shard_size=3000, val_fraction=0.1)
        with pytest.raises(ValueError, match="cannot resume: shard_size"):
            dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], out, shard_size=4000, val_fraction=0.1, resume=True)
        # another tokenizer of the same name, size and end-of-text token (two tokens' ids swapped):
        # refused, not mixed into the same shards
        ranks = dict(gpt2._mergeable_ranks)
        ranks[b" the"], ranks[b" and"] = ranks[b" and"], ranks[b" the"]
        impostor = tokenforge.Tokenizer.from_ranks(ranks, pattern=gpt2.pattern, special_tokens=gpt2._special_tokens,
                                                   name=gpt2.name)
        assert (impostor.name, impostor.n_vocab) == (gpt2.name, gpt2.n_vocab)
        with pytest.raises(ValueError, match="cannot resume: tokenizer_sha256"):
            dataset.encode_dataset(impostor, [tmp_path / "d.jsonl"], out, shard_size=3000, val_fraction=0.1,
                                   resume=True)
        done = {s["file"]: os.stat(out / s["file"]).st_ino for s in partial["shards"]}
        (out / "train-notes.bin").write_bytes(b"not a shard")  # a file of the user's: left alone
        dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], out, shard_size=3000, val_fraction=0.1, resume=True)
    finally:
        dataset.BATCH_CHARS = monkey
    assert {f: os.stat(out / f).st_ino for f in done} == done
    assert (out / "train-notes.bin").read_bytes() == b"not a shard"
    for split in ("train", "val"):
        assert dataset.read_shards(out, split).tolist() == dataset.read_shards(once, split).tolist()
    assert leftovers(out) == []


# --------------------------------------------------------------------------------------------------
# Torn outputs, checked readers, file modes


def test_an_error_in_an_encoding_thread_is_raised_and_leaves_nothing(tmp_path, files, gpt2, monkeypatch):
    """The batches are encoded by a pool of threads: an error there (here a MemoryError on the
    fourth batch) reaches the caller as itself, later batches are not written, no file is left."""
    paths, texts = files
    real_encode = dataset._Encoder.encode
    calls = []

    def failing(self, texts, suffix):
        calls.append(len(texts))
        if len(calls) == 4:
            raise MemoryError("no memory for this batch")
        return real_encode(self, texts, suffix)

    monkeypatch.setattr(dataset, "BATCH_CHARS", 20_000)
    monkeypatch.setattr(dataset._Encoder, "encode", failing)
    with pytest.raises(MemoryError, match="no memory"):
        dataset.encode_files(gpt2, paths, tmp_path / "out.bin", num_threads=2)
    assert not (tmp_path / "out.bin").exists() and leftovers(tmp_path) == []
    assert len(calls) < 4 + 2 * dataset.IN_FLIGHT * 2  # the pool stopped taking batches
    monkeypatch.setattr(dataset._Encoder, "encode", real_encode)
    dataset.encode_files(gpt2, paths, tmp_path / "out.bin", num_threads=2)
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected_ids(gpt2, texts, gpt2.eot_token)


def test_disk_full_leaves_nothing_and_a_rerun_works(tmp_path, files, gpt2, monkeypatch):
    paths, texts = files
    real_write = dataset._Part.write

    def full(self, ids):
        if self.count > 1000:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, ids)

    monkeypatch.setattr(dataset, "BATCH_CHARS", 50_000)
    monkeypatch.setattr(dataset._Part, "write", full)
    with pytest.raises(OSError, match="No space"):
        dataset.encode_files(gpt2, paths, tmp_path / "out.bin")
    assert not (tmp_path / "out.bin").exists() and not (tmp_path / "out.bin.json").exists()
    assert leftovers(tmp_path) == []
    monkeypatch.setattr(dataset._Part, "write", real_write)
    dataset.encode_files(gpt2, paths, tmp_path / "out.bin")
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected_ids(gpt2, texts, gpt2.eot_token)


@pytest.mark.parametrize("shards", [False, True])
def test_disk_full_at_the_sidecar_or_index_leaves_no_partial_files(tmp_path, files, gpt2, monkeypatch, shards):
    paths, _ = files
    out = tmp_path / ("shards" if shards else "out.bin")
    run = (lambda **kw: dataset.encode_dataset(gpt2, paths[:1], out, shard_size=10**9, **kw)) if shards else (
        lambda **kw: dataset.encode_files(gpt2, paths[:1], out, **kw))
    run()
    folder = out if shards else tmp_path
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    real = outputs.partial_file

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def partial_file(target):
        f, path = real(target)
        return (Full(f) if target.name.endswith(".json") else f), path

    monkeypatch.setattr(outputs, "partial_file", partial_file)
    with pytest.raises(OSError, match="No space"):
        run(overwrite=True)
    if not shards:  # one file and its sidecar: replaced together or not at all
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    else:  # shards are committed one by one; the old index went first, so nothing names a missing shard
        assert leftovers(folder) == [] and "index.json" not in os.listdir(folder)
        with pytest.raises(FileNotFoundError, match="index.json"):
            dataset.read_shards(out)


@pytest.mark.parametrize("shards", [False, True])
def test_an_error_of_the_background_sync_fails_the_run(tmp_path, files, gpt2, monkeypatch, shards):
    """The data is sent to the disk while the run goes on (dataset_files._BackgroundSync); a
    failure there (a full disk, EIO) fails the run before anything is committed, as the fsync
    before the commit would (which may not report it a second time), and no partial file is left.
    Without it the calls are made, and the ids are the same."""
    from tokenforge import dataset_files

    paths, texts = files

    def run(out):
        if shards:
            return dataset.encode_dataset(gpt2, paths, out, shard_size=10**9)
        return dataset.encode_files(gpt2, paths, out)

    monkeypatch.setattr(dataset_files._BackgroundSync, "SYNC_EVERY", 1000)
    calls = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: calls.append(os.fstat(fd).st_size))
    good = tmp_path / ("good" if shards else "good.bin")
    run(good)
    ids = dataset.read_shards(good) if shards else dataset.read_ids(good)
    assert calls and np.array_equal(np.asarray(ids), expected_ids(gpt2, texts, gpt2.eot_token))

    def fail(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", fail)
    bad = tmp_path / ("bad" if shards else "bad.bin")
    with pytest.raises(OSError, match="Input/output error"):
        run(bad)
    assert leftovers(tmp_path) == [] and not (tmp_path / "bad.bin").exists()
    if shards:
        assert leftovers(bad) == [] and not (bad / "index.json").exists()


def test_crash_between_renames_never_pairs_new_data_with_old_sidecar(tmp_path, files, monkeypatch):
    paths, _ = files
    dataset.encode_files(tokenforge.get_encoding("gpt2"), paths[:1], tmp_path / "out.bin")
    real_replace = os.replace
    calls = []

    def crash_on_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as a SIGKILL would stop it there
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        dataset.encode_files(tokenforge.get_encoding("cl100k_base"), paths[:1], tmp_path / "out.bin", overwrite=True)
    monkeypatch.setattr(os, "replace", real_replace)
    with pytest.raises(ValueError, match="no sidecar"):
        dataset.read_ids(tmp_path / "out.bin")


def test_readers_check_the_sidecar(tmp_path, files, gpt2):
    paths, _ = files
    out = tmp_path / "out.bin"
    dataset.encode_files(gpt2, paths[:1], out)
    sidecar = tmp_path / "out.bin.json"
    meta = json.loads(sidecar.read_text())
    for dtype in ("O", "float64", "int8", "V8", "<U4", 5):
        sidecar.write_text(json.dumps(dict(meta, dtype=dtype)))
        with pytest.raises(ValueError, match="dtype .* not one that tokenforge writes"):
            dataset.read_ids(out)
    sidecar.write_text(json.dumps(dict(meta, dtype="uint32")))  # an old sidecar of another tokenizer
    with pytest.raises(ValueError, match="does not describe out.bin"):
        dataset.read_ids(out)
    sidecar.write_text(json.dumps(dict(meta, crc32=meta["crc32"] ^ 1)))
    assert len(dataset.read_ids(out)) == meta["count"]  # the size check is cheap; the checksum needs verify
    with pytest.raises(ValueError, match="checksum"):
        dataset.read_ids(out, verify=True)
    sidecar.write_text("[" * 100_000)
    with pytest.raises(ValueError, match="not valid JSON"):
        dataset.read_ids(out)


def test_shard_index_cannot_point_outside_its_folder(tmp_path, files, gpt2):
    paths, _ = files
    folder = tmp_path / "shards"
    dataset.encode_dataset(gpt2, paths[:1], folder, shard_size=10_000)
    index = json.loads((folder / "index.json").read_text())
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\x00" * 8)
    for name in [str(secret), "../secret.bin", "..", "sub/../../secret.bin", None, 7]:
        bad = dict(index, shards=[dict(index["shards"][0], file=name, count=4, bytes=8)])
        (folder / "index.json").write_text(json.dumps(bad))
        with pytest.raises(ValueError, match="not a plain file name inside the folder"):
            dataset.read_shards(folder)
    (folder / "index.json").write_text(json.dumps(dict(index, dtype="O")))
    with pytest.raises(ValueError, match="dtype"):
        dataset.read_shards(folder)


def test_stale_partials_of_killed_runs_are_cleaned(tmp_path, files, gpt2):
    paths, _ = files
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.bin.{int(dead.stdout)}.partial"
    stale.write_bytes(b"x" * 1000)
    alive = tmp_path / f".out.bin.{os.getppid()}.partial"  # a running process's file is left alone
    alive.write_bytes(b"y")
    dataset.encode_files(gpt2, paths[:1], tmp_path / "out.bin")
    assert not stale.exists() and alive.exists()


def test_outputs_respect_the_umask_and_keep_a_mode(tmp_path, files, gpt2):
    paths, _ = files
    old = os.umask(0o022)
    try:
        dataset.encode_files(gpt2, paths[:1], tmp_path / "out.bin")
        assert os.stat(tmp_path / "out.bin").st_mode & 0o777 == 0o644
        assert os.stat(tmp_path / "out.bin.json").st_mode & 0o777 == 0o644
        os.chmod(tmp_path / "out.bin", 0o640)
        dataset.encode_files(gpt2, paths[1:2], tmp_path / "out.bin", overwrite=True)
        assert os.stat(tmp_path / "out.bin").st_mode & 0o777 == 0o640
        outputs.write_atomic(tmp_path / "w.json", b"{}")
        assert os.stat(tmp_path / "w.json").st_mode & 0o777 == 0o644
    finally:
        os.umask(old)


def test_write_atomic_group_is_whole_or_nothing(tmp_path):
    """Several files that belong together: all written and on disk before the first rename; a
    failure on any of them leaves every old file as it was and no partial file."""
    vocab, merges = tmp_path / "sub" / "vocab.json", tmp_path / "sub" / "merges.txt"
    old = os.umask(0o027)
    try:
        outputs.write_atomic_group({vocab: b"old vocab", merges: b"old merges"})  # the folder is made
        assert os.stat(vocab).st_mode & 0o777 == 0o640
        os.chmod(merges, 0o604)
        with pytest.raises(TypeError):
            outputs.write_atomic_group({vocab: b"new vocab", merges: object()})  # fails on the second
        assert vocab.read_bytes() == b"old vocab" and merges.read_bytes() == b"old merges"
        assert sorted(p.name for p in vocab.parent.iterdir()) == ["merges.txt", "vocab.json"]
        outputs.write_atomic_group({vocab: b"new vocab", merges: b"new merges"})
        assert vocab.read_bytes() == b"new vocab" and merges.read_bytes() == b"new merges"
        assert os.stat(merges).st_mode & 0o777 == 0o604 and os.stat(vocab).st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


def test_outputs_write_through_links_and_refuse_special_files(tmp_path, files, gpt2, capsys):
    """A symbolic link is written through (its target gets the data, the link stays a link); a
    directory, a FIFO or a device is refused with the path named and left as it was (replacing
    /dev/full by a regular file was possible before), by every writer: whole files, the dataset
    encoder's data and sidecar, the command line's outputs."""
    from tokenforge import cli

    target = tmp_path / "target.json"
    target.write_bytes(b"old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    outputs.write_atomic(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for bad, what in ((fifo, "not a regular file"), (tmp_path, "a directory")):
        with pytest.raises(ValueError, match=f"{bad}: {what}"):
            outputs.write_atomic(bad, b"x")
        with pytest.raises(ValueError, match=what):
            outputs.write_atomic_group({tmp_path / "ok.txt": b"x", bad: b"y"})
    assert not (tmp_path / "ok.txt").exists() and fifo.is_fifo()
    paths, _ = files
    fifo_bin = tmp_path / "fifo.bin"
    os.mkfifo(fifo_bin)
    with pytest.raises(ValueError, match="not a regular file"):
        dataset.encode_files(gpt2, paths[:1], fifo_bin, overwrite=True)
    assert fifo_bin.is_fifo()
    data_link = tmp_path / "data.bin"
    data_link.symlink_to(tmp_path / "real.bin")  # (dangling: the data is written where it points)
    dataset.encode_files(gpt2, paths[:1], data_link)
    assert data_link.is_symlink() and (tmp_path / "real.bin").stat().st_size > 0
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world " * 200, encoding="utf-8")
    rc = cli.main(["train", str(corpus), "-o", str(tmp_path / "t.tf"), "--vocab-size", "300", "-q",
                   "--vocab-file", str(fifo)])
    assert rc != 0 and fifo.is_fifo() and "not a regular file" in capsys.readouterr().err
    if os.path.exists("/dev/full") and os.access("/dev/full", os.W_OK):
        with pytest.raises(ValueError, match="not a regular file"):
            outputs.write_atomic("/dev/full", b"x")
        assert not Path("/dev/full").is_file()


def test_overwrite_without_a_validation_split_removes_the_old_one(tmp_path, files, gpt2):
    paths, _ = files
    dataset.encode_files(gpt2, paths[:2], tmp_path / "v.bin", val_fraction=0.5)
    assert (tmp_path / "v_val.bin").exists() and (tmp_path / "v_val.bin.json").exists()
    (tmp_path / "w_val.bin").write_bytes(b"the user's")  # no sidecar: not tokenforge's, kept
    dataset.encode_files(gpt2, paths[1:2], tmp_path / "w.bin")
    dataset.encode_files(gpt2, paths[1:2], tmp_path / "v.bin", overwrite=True)
    assert not (tmp_path / "v_val.bin").exists() and not (tmp_path / "v_val.bin.json").exists()
    assert (tmp_path / "w_val.bin").read_bytes() == b"the user's"
    assert len(dataset.read_ids(tmp_path / "v.bin")) > 0


def test_decode_refuses_ids_of_another_tokenizer(tmp_path, files, gpt2, capsys):
    """`tokenforge decode -i` checks the sidecar's fingerprint: p50k_base's ids are not gpt2's
    (it printed garbage, or named an invalid id); r50k_base maps the same tokens, so it decodes."""
    from tokenforge import cli

    paths, texts = files
    dataset.encode_files(gpt2, paths[1:2], tmp_path / "ids.bin")
    assert cli.main(["decode", "-t", "p50k_base", "-i", str(tmp_path / "ids.bin")]) != 0
    assert "written with the tokenizer 'gpt2'" in capsys.readouterr().err
    assert cli.main(["decode", "-t", "r50k_base", "-i", str(tmp_path / "ids.bin")]) == 0
    assert capsys.readouterr().out.startswith(texts[1][:200])


def _fingerprint_one_id_at_a_time(tok) -> str:
    """tokenizer_fingerprint as written before the bulk listing (the oracle: the same value)."""
    import hashlib

    tokens = [tok.id_to_token(i) for i in range(tok.n_vocab)]
    text = json.dumps([tok.n_vocab, getattr(tok, "pattern", None), tokens], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _byte_level_with_added_tokens():
    """A byte-level tokenizer with a decode-only token, an id gap, a special token on a model
    token's id (its content wins) and a non-special added token on one (the model's token wins)."""
    from tokenforge.models import ByteBPE
    from tokenforge.special import AddedToken

    ranks = {bytes([b]): b for b in range(256)} | {b' "': 256, b' "\\': 257, b"\xe6\x97": 258, b"\xe6\x97\xa5": 259}
    model = ByteBPE(ranks, decode_only={300: "🎉"})
    return tokenforge.Tokenizer(model, pre_tokenizer=None, added_tokens=[
        AddedToken("<s>", 66), AddedToken("plain", 67, special=False), AddedToken("</s>", 305)])


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base", "added"])
def test_fingerprint_lists_every_id_as_id_to_token_does(name):
    """The fingerprint lists a byte-level tokenizer's tokens natively (_core.spelled_by_id): the
    same list as id_to_token one id at a time, so the same value as before (a resume of a run of an
    earlier version still matches)."""
    tok = _byte_level_with_added_tokens() if name == "added" else tokenforge.get_encoding(name)
    one_by_one = [tok.id_to_token(i) for i in range(tok.n_vocab)]
    assert tok._tokens_up_to(tok.n_vocab) == one_by_one
    assert dataset.tokenizer_fingerprint(tok) == _fingerprint_one_id_at_a_time(tok)
    if name == "added":
        assert one_by_one[66] == "<s>" and one_by_one[67] == "C" and one_by_one[300] == "🎉"
        assert one_by_one[257] == 'Ġ"\\' and one_by_one[259] == "æĹ¥" and one_by_one[301] is None and tok.n_vocab == 306
    if name == "gpt2":  # the value written by the one-id-at-a-time code (session 34)
        assert dataset.tokenizer_fingerprint(tok).startswith("a420e26e8588")


def test_fingerprint_of_a_tokenizer_without_bulk_listing(gpt2):
    """A family without the bulk listing (WordPiece) is fingerprinted one id at a time."""
    from tokenforge import pipeline

    tok = pipeline.WordPieceTokenizer.train(["the cat sat on the mat"] * 5, vocab_size=60)
    assert tok._tokens_up_to(tok.n_vocab) is None
    assert dataset.tokenizer_fingerprint(tok) == _fingerprint_one_id_at_a_time(tok)


def test_progress_reaches_the_total(tmp_path, files, gpt2):
    paths, texts = files
    seen = []
    meta = dataset.encode_dataset(gpt2, paths, tmp_path / "out.bin", separator="\n\n", progress=lambda s: seen.append(
        (s.bytes, s.documents, s.tokens, s.total_bytes)))
    total = sum(p.stat().st_size for p in paths)
    assert seen[-1] == (total, meta["documents"], meta["count"], total)
    assert [b for b, *_ in seen] == sorted(b for b, *_ in seen)
    deltas = []  # the older callback: increments, summing to the totals
    meta = dataset.encode_files(gpt2, paths, tmp_path / "sub" / "o.bin", progress=lambda b, t: deltas.append((b, t)))
    assert (sum(b for b, _ in deltas), sum(t for _, t in deltas)) == (total, meta["count"])


def test_readme_loader_example(tmp_path, monkeypatch, docs, gpt2):
    """The PyTorch loader of the README runs on a real output (where PyTorch is installed)."""
    torch = pytest.importorskip("torch")
    import pathlib

    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## Preparing a training dataset"):]
    code = section[section.index("```python") + len("```python"):section.index("```\n", section.index("```python"))]
    write_jsonl(tmp_path / "d.jsonl", docs)
    monkeypatch.chdir(tmp_path)
    dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], tmp_path / "train.bin")
    dataset.encode_dataset(gpt2, [tmp_path / "d.jsonl"], tmp_path / "shards", shard_size=5000)
    code = code.replace('Blocks("shards", 1024)', 'Blocks("shards", 64)')
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    x, y = next(iter(scope["loader"]))
    assert x.shape == (8, 64) and torch.equal(x[:, 1:], y[:, :-1])
    assert scope["ids"].tolist() == dataset.read_ids(tmp_path / "train.bin").tolist()


# --------------------------------------------------------------------------------------------------
# The safe cuts themselves, against encoding the whole text (the oracle)

from hypothesis import given, settings, strategies as st  # noqa: E402

_ALPHABET = list("aZé中文，。、；！？,.;:!?()[]{}'\"-_/ \n\t0123456789") + ["\u0301", "\u00ad", "\u200b", "ǅ", "ʰ", "²", "Ⅻ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), min_size=2, max_size=60).map("".join))
def test_every_safe_cut_splits_exactly(text):
    cuts = set()
    end = len(text)
    while True:  # every cut the search can return, from the end backwards
        c = dataset.safe_cut(text, (), end=end)
        if not c:
            break
        cuts.add(c)
        end = c
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok = tokenforge.get_encoding(name)
        whole = tok.encode_ordinary(text)
        for c in cuts:
            assert tok.encode_ordinary(text[:c]) + tok.encode_ordinary(text[c:]) == whole, (name, text, c)


def test_safe_cut_is_linear_without_cuts():
    """Text without any cut (one long run of letters) is searched once, not once per read."""
    import time

    text = "中" * 4_000_000
    start = time.perf_counter()
    searched = 0
    for end in range(1 << 20, len(text) + 1, 1 << 20):  # as the reader does: only the new part
        assert dataset.safe_cut(text, (), start=max(0, searched - 2), end=end) == 0
        searched = end
    incremental = time.perf_counter() - start
    start = time.perf_counter()
    assert dataset.safe_cut(text, ()) == 0
    once = time.perf_counter() - start
    assert incremental < 3 * once + 0.5


def _containers(inner):
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                     _containers, max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["dtype", "count", "byteorder", "crc32", "bytes", "shards", "file", "complete"]),
                       _JSON | st.sampled_from(["uint16", "uint32", "O", "<u2", ">u4", "float64", "V3", "S5"]),
                       max_size=6),
       st.binary(max_size=64))
def test_hostile_sidecars_and_indexes_never_crash(tmp_path_factory, meta, data):
    """Any sidecar or index: an array of the written dtypes, a ValueError, or FileNotFoundError for a
    shard the index names but the folder lacks; never another error."""
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "x.bin").write_bytes(data)
    (folder / "x.bin.json").write_text(json.dumps(meta))
    (folder / "index.json").write_text(json.dumps(meta))
    for read in (lambda: dataset.read_ids(folder / "x.bin", verify=True), lambda: dataset.read_shards(folder, verify=True)):
        try:
            ids = read()
        except (ValueError, FileNotFoundError):
            continue
        assert ids.dtype.name in dataset.READABLE_DTYPES
