"""The everyday subcommands: encode, decode, count, show, compare, convert, bench; exit codes."""

import json
import subprocess
import sys

import numpy as np
import pytest

import tokenforge
from tokenforge import cli

from conftest import MULTILINGUAL


def run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_encode_decode_stdout(capsys, tmp_path):
    f = tmp_path / "t.txt"
    f.write_text(MULTILINGUAL, encoding="utf-8")
    rc, out, _ = run(capsys, "encode", "-t", "cl100k_base", str(f))
    ids = [int(x) for x in out.split()]
    assert rc == 0 and ids == tokenforge.get_encoding("cl100k_base").encode(MULTILINGUAL)
    rc, out, _ = run(capsys, "decode", "-t", "cl100k_base", *map(str, ids))
    assert rc == 0 and out == MULTILINGUAL


def test_encode_dataset_and_decode_it(capsys, tmp_path, corpus_texts):
    src = tmp_path / "a.txt"
    src.write_text(corpus_texts["taylorswift"], encoding="utf-8")
    out = tmp_path / "train.bin"
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "-o", str(out), str(src), "-q")
    enc = tokenforge.get_encoding("gpt2")
    assert rc == 0 and "wrote" in err
    assert np.fromfile(out, dtype=np.uint16).tolist() == enc.encode_ordinary(corpus_texts["taylorswift"]) + [enc.eot_token]
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "-o", str(out), str(src), "-q")
    assert rc == 1 and "already exists" in err
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "-o", str(tmp_path / "x.txt"), str(src))
    assert rc == 1 and ".bin or .npy" in err
    rc, text, _ = run(capsys, "decode", "-t", "gpt2", "-i", str(out))
    assert text == corpus_texts["taylorswift"] + "<|endoftext|>"


def test_count_and_compare(capsys, tmp_path, corpus_texts):
    f = tmp_path / "s.txt"
    f.write_text(corpus_texts["shakespeare"][:50000], encoding="utf-8")
    rc, out, _ = run(capsys, "count", "-t", "cl100k_base", "-t", "o200k_base", str(f), "--json")
    data = json.loads(out)
    for name in ("cl100k_base", "o200k_base"):
        assert data["total"][name] == len(tokenforge.get_encoding(name).encode_ordinary(corpus_texts["shakespeare"][:50000]))
    rc, out, _ = run(capsys, "compare", "-t", "gpt2", "-t", "o200k_base", str(f), "--json")
    r = json.loads(out)["tokenizers"]["gpt2"]
    assert rc == 0 and r["tokens"] == len(tokenforge.get_encoding("gpt2").encode_ordinary(corpus_texts["shakespeare"][:50000]))
    assert abs(r["bytes_per_token"] - len(corpus_texts["shakespeare"][:50000].encode()) / r["tokens"]) < 1e-9


def test_show_marks_boundaries(capsys):
    rc, out, _ = run(capsys, "show", "-t", "cl100k_base", "--text", "hello world<|endoftext|>", "--color", "never")
    assert rc == 0 and out.splitlines()[0] == "hello| world|<|endoftext|>"
    rc, out, _ = run(capsys, "show", "-t", "cl100k_base", "--text", "hi", "--color", "always")
    assert "\x1b[" in out


def test_convert(capsys, tmp_path):
    out = tmp_path / "r50k.tiktoken"
    rc, _, _ = run(capsys, "convert", str(tmp_path / "missing.json"), str(out), "--to", "tiktoken")
    assert rc == 1
    src = tmp_path / "g.tokenforge"
    tokenforge.get_encoding("r50k_base").save(src)
    rc, _, _ = run(capsys, "convert", str(src), str(out), "--to", "tiktoken")
    assert rc == 0
    again = tokenforge.load(out, pattern="gpt2", special_tokens={"<|endoftext|>": 50256})
    assert again.encode("hello world") == tokenforge.get_encoding("r50k_base").encode("hello world")


def test_bench_runs(capsys):
    rc, out, _ = run(capsys, "bench", "-t", "cl100k_base", "--text", "hello world " * 1000, "--repeat", "1")
    assert rc == 0 and "MB/s" in out


def test_every_command_has_help():
    for command in ["demo", "train", "encode", "decode", "count", "show", "compare", "stats", "convert", "serve", "bench"]:
        r = subprocess.run([sys.executable, "-m", "tokenforge.cli", command, "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "usage:" in r.stdout, command
    r = subprocess.run([sys.executable, "-m", "tokenforge.cli", "encode"], capture_output=True, text=True)
    assert r.returncode == 2  # argparse: a bad command line


def test_user_errors_exit_1(capsys, tmp_path):
    rc, _, err = run(capsys, "count", "-t", "no-such-tokenizer", "--text", "x")
    assert rc == 1 and "no-such-tokenizer" in err
    rc, _, err = run(capsys, "count", "-t", "gpt2", str(tmp_path))
    assert rc == 1 and "directory" in err
    rc, _, err = run(capsys, "decode", "-t", "gpt2", "12", "99999999")
    assert rc == 1 and "99999999" in err


def test_stats_writes_report(capsys, tmp_path, corpus_texts):
    pytest.importorskip("matplotlib")
    f = tmp_path / "t.txt"
    f.write_text(corpus_texts["taylorswift"], encoding="utf-8")
    rc, _, err = run(capsys, "stats", "-t", "gpt2", "-o", str(tmp_path / "rep"), str(f))
    assert rc == 0 and "bytes/token" in err
    report = json.loads((tmp_path / "rep" / "stats.json").read_text())
    text = corpus_texts["taylorswift"]
    assert json.dumps(report).count(str(len(tokenforge.get_encoding("gpt2").encode_ordinary(text)))) >= 1
    assert (tmp_path / "rep" / "token_lengths.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
