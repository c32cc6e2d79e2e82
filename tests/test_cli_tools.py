"""The everyday subcommands: encode, decode, count, show, compare, convert, bench; exit codes."""

import json
import os
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
    rc, out, _ = run(capsys, "show", "-t", "cl100k_base", "--text", "hello world<|endoftext|>", "--color", "never",
                     "--allow-special")
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


def test_bench_warms_up_on_the_start_of_the_text(capsys, monkeypatch):
    # from the walkthrough: with --repeat 1 the one timed call was the first, lazy set-up included
    from tokenforge.cli import other

    calls = []

    class Spy:
        def encode_ordinary(self, text):
            calls.append(len(text))
            return []

    monkeypatch.setattr(other, "tokenizer", lambda spec: Spy())
    text = "word " * 30_000
    rc, out, _ = run(capsys, "bench", "-t", "spy", "--text", text, "--repeat", "1")
    assert rc == 0 and calls == [other.WARM_UP_CHARS, len(text)]


def test_compare_and_bench_show_progress_on_big_inputs(capsys, monkeypatch, corpus_texts):
    from tokenforge.cli import _common

    text = corpus_texts["shakespeare"][:20000]
    monkeypatch.setenv("TOKENFORGE_PROGRESS_INTERVAL", "0")  # a log line at every update (stderr is no terminal)
    rc, out, err = run(capsys, "compare", "-t", "gpt2", "-t", "cl100k_base", "--text", text)
    assert rc == 0 and err == ""  # a small input: no progress
    monkeypatch.setattr(_common, "BIG_INPUT", 0)
    rc, out, err = run(capsys, "compare", "-t", "gpt2", "-t", "cl100k_base", "--text", text, "--json")
    assert rc == 0 and json.loads(out)["tokenizers"]["gpt2"]["tokens"] == len(tokenforge.get_encoding("gpt2").encode_ordinary(text))
    lines = err.splitlines()
    assert len(lines) == 2 and "(50%)" in lines[0] and "(100%)" in lines[1] and lines[1].startswith("compare: ")
    rc, out, err = run(capsys, "bench", "-t", "gpt2", "--text", text, "--repeat", "2")
    mb = len(text.encode()) / 1e6
    assert rc == 0 and "MB/s" in out and f"bench: {4 * mb:,.1f} MB" in err.splitlines()[-1]  # 2 runs, and tiktoken's 2
    rc, out, err = run(capsys, "compare", "-t", "gpt2", "--text", text, "-q")
    assert rc == 0 and err == ""


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


# --------------------------------------------------------------------------------------------------
# One line, not a traceback; flags, not keyword arguments


@pytest.mark.parametrize("argv, message", [
    (["train", "{f}", "-o", "{tmp}/t.tf", "--vocab-size", "1000000000000"], "--vocab-size: 1000000000000 is larger"),
    (["serve", "--port", "99999"], "--port: a port is 0..65535"),
    (["train", "{f}", "-o", "{tmp}/t.tf", "--vocab-size", "300", "--pattern", "(unclosed"], "--pattern: not a valid regex"),
    (["train", "{f}", "-o", "{tmp}/t.tf", "--vocab-size", "300", "--pattern", "cl100k_bsae"], "not a pattern name"),
    (["convert", "{f}", "{tmp}/x", "--to", "tiktoken", "--pattern", "nonsense"], "not a pattern name"),
    (["encode", "-t", "gpt2", "-o", "{tmp}/o.bin", "--threads", "-3", "{f}"], "--threads: expected a positive integer"),
    (["encode", "-t", "gpt2", "-o", "{tmp}/o.bin", "--shard-size", "lots", "{f}"], "--shard-size: expected a count"),
    (["encode", "-t", "gpt2", "-o", "{tmp}/o.bin", "--val-fraction", "1.5", "{f}"], "--val-fraction: expected a fraction"),
])
def test_bad_options_are_one_line(capsys, tmp_path, argv, message):
    f = tmp_path / "f.txt"
    f.write_text("hello world\n")
    with pytest.raises(SystemExit) as e:
        cli.main([a.format(f=f, tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and "Traceback" not in err


def test_library_errors_quote_flags(capsys, tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes(b"hello \xff world")
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "-o", str(tmp_path / "o.bin"), str(f))
    assert rc == 1 and "--errors replace" in err and "errors='replace'" not in err
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "-o", str(tmp_path / "missing" / "o.bin"), str(f), "--errors", "replace")
    assert rc == 1 and "no such folder" in err and not (tmp_path / "missing").exists()
    tok = tokenforge.train_bpe([f], 260, verbose=False, errors="replace")
    tok.save(tmp_path / "plain.tokenforge")
    rc, _, err = run(capsys, "encode", "-t", str(tmp_path / "plain.tokenforge"), "-o", str(tmp_path / "o.bin"), str(f),
                     "--errors", "replace")
    assert rc == 1 and "--eot-token" in err and "--no-eot" in err and "eot=None" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"tokenforge {tokenforge.__version__}"


def test_pattern_names_resolve(tmp_path, capsys, corpus_texts):
    f = tmp_path / "f.txt"
    f.write_text(corpus_texts["shakespeare"][:20_000])
    for given in ("cl100k_base", "cl100k"):
        out = tmp_path / f"{given}.tokenforge"
        assert cli.main(["train", str(f), "-o", str(out), "--vocab-size", "300", "--pattern", given, "-q"]) == 0
        tok = tokenforge.load(out)
        assert tok.encode("hello world") != [] and tok.decode(tok.encode("hello world")) == "hello world"
    assert tokenforge.load(tmp_path / "cl100k_base.tokenforge").encode("it's 12345") == \
        tokenforge.load(tmp_path / "cl100k.tokenforge").encode("it's 12345")


def test_one_special_token_policy(capsys):
    text = "a<|endoftext|>b"
    enc = tokenforge.get_encoding("cl100k_base")
    ordinary, special = enc.encode_ordinary(text), enc.encode(text, allowed_special="all")
    for flags, ids in ([], ordinary), (["--allow-special"], special):
        rc, out, _ = run(capsys, "encode", "-t", "cl100k_base", "--text", text, *flags)
        assert rc == 0 and [int(x) for x in out.split()] == ids
        rc, out, _ = run(capsys, "show", "-t", "cl100k_base", "--text", text, "--color", "never", *flags)
        assert rc == 0 and out.splitlines()[1].endswith(f"{ids}")
        rc, out, _ = run(capsys, "count", "-t", "cl100k_base", "--text", text, "--json", *flags)
        assert rc == 0 and json.loads(out)["total"]["cl100k_base"] == len(ids)
    for command in (["encode"], ["show"], ["count"]):
        rc, _, err = run(capsys, *command, "-t", "cl100k_base", "--text", text, "--disallow-special")
        assert rc == 1 and "--allow-special" in err
        assert "--allow-special" in cli.build_parser()._subparsers._group_actions[0].choices[command[0]].format_help()


def test_count_streams_many_files_exactly(capsys, tmp_path, corpus_texts):
    text = corpus_texts["shakespeare"]
    files = []
    for k in range(40):
        p = tmp_path / f"{k}.txt"
        p.write_text(text[k * 5000:(k + 1) * 5000 + k])
        files.append(p)
    big = tmp_path / "big.txt"
    big.write_text(text * 3)
    rc, out, _ = run(capsys, "count", "-t", "cl100k_base", "-t", "gpt2", "--json", *map(str, files + [big]))
    data = json.loads(out)
    for name in ("cl100k_base", "gpt2"):
        enc = tokenforge.get_encoding(name)
        want = [len(enc.encode_ordinary(p.read_text())) for p in files + [big]]
        assert [r["tokens"][name] for r in data["inputs"]] == want


def test_encode_command_jsonl_shards_resume_and_log_lines(capsys, tmp_path, corpus_texts):
    docs = [corpus_texts["shakespeare"][k:k + 3000] for k in range(0, 600_000, 3000)]
    src = tmp_path / "d.jsonl"
    src.write_text("".join(json.dumps({"body": d}) + "\n" for d in docs))
    out = tmp_path / "shards"
    proc = subprocess.run([sys.executable, "-m", "tokenforge.cli", "encode", "-t", "gpt2", "--field", "body", "--shard-size", "50K", "--val-fraction", "0.05",
                           "-o", str(out), str(src)], capture_output=True, text=True,
                          env=dict(os.environ, TOKENFORGE_PROGRESS_INTERVAL="0"))
    assert proc.returncode == 0, proc.stderr
    enc = tokenforge.get_encoding("gpt2")
    from tokenforge import dataset

    train = [d for k, d in enumerate(docs) if not dataset._val_document(k, 0.05)]
    assert dataset.read_shards(out).tolist() == [i for d in train for i in enc.encode_ordinary(d) + [enc.eot_token]]
    lines = proc.stderr.splitlines()
    assert any("encoding:" in line and "documents" in line and "MB/s" in line for line in lines)  # not a terminal
    size = src.stat().st_size
    assert "wrote" in lines[-1] and f"{size / 1e6:,.1f} MB of {size / 1e6:,.1f} MB (100%)" in lines[-1]
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "--field", "body", "--shard-size", "50K", "-o", str(out), str(src))
    assert rc == 1 and "--resume" in err
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "-o", str(tmp_path / "raw.bin"), str(src), "-q")
    assert rc == 1 and "no field 'text'" in err and "--field" in err  # JSON lines are not encoded as raw text


def test_encode_help_names_the_sidecar():
    text = cli.build_parser()._subparsers._group_actions[0].choices["encode"].format_help()
    assert "OUT.bin.json" in " ".join(text.split())


def test_stats_several_tokenizers_empty_file_and_offsets(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    rc, _, err = run(capsys, "stats", "-t", "gpt2", "-o", str(tmp_path / "r0"), str(empty))
    assert rc == 0, err
    f = tmp_path / "f.txt"
    f.write_text("some text here\n" * 1000)
    old_mask = os.umask(0o022)
    try:
        rc, _, err = run(capsys, "stats", "-t", "gpt2", "-t", "o200k_base", "-o", str(tmp_path / "r"), str(f))
    finally:
        os.umask(old_mask)
    data = json.loads((tmp_path / "r" / "stats.json").read_text())
    assert rc == 0 and [r["tokenizer"] for r in data] == ["gpt2", "o200k_base"]
    assert "Tokenizer statistics: gpt2, o200k_base on f.txt" in (tmp_path / "r" / "report.md").read_text()
    assert os.stat(tmp_path / "r" / "report.md").st_mode & 0o777 == 0o644  # not mkstemp's 0600
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"x" * 3_000_000 + b"\xff")
    rc, _, err = run(capsys, "stats", "-t", "gpt2", "-o", str(tmp_path / "r2"), str(bad))
    assert rc == 1 and "byte offset 3000000" in err


def test_pattern_assumed_for_gpt2_files_is_said(capsys, tmp_path):
    enc = tokenforge.get_encoding("gpt2")
    enc.save(tmp_path, format="gpt2")  # encoder.json + vocab.bpe: no pattern in them
    rc, out, err = run(capsys, "encode", "-t", str(tmp_path / "encoder.json"), "--text", "hello world")
    assert rc == 0 and [int(x) for x in out.split()] == enc.encode("hello world")
    assert "carries no split pattern; GPT-2's is assumed" in err
    rc, _, err = run(capsys, "encode", "-t", "gpt2", "--text", "hello world")
    assert "assumed" not in err
    # and converting a tokenizer of another pattern to such files says what is lost
    tokenforge.get_encoding("cl100k_base").save(tmp_path / "cl.json")
    rc, _, err = run(capsys, "convert", str(tmp_path / "cl.json"), str(tmp_path / "vm"), "--to", "vocab_merges")
    assert rc == 0 and "carry no split pattern" in err
    rc, _, err = run(capsys, "convert", str(tmp_path / "encoder.json"), str(tmp_path / "again"), "--to", "gpt2")
    assert rc == 0 and "carry no split pattern" not in err
