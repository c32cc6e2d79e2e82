"""The `tokenforge` command line: train (tokenizer file + vocabulary listing), demo, errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tokenforge
from tokenforge import cli, reference
from tokenforge.formats.listing import render

EOT = "<|endoftext|>"


@pytest.fixture
def corpus(tmp_path, corpus_texts):
    path = tmp_path / "corpus.txt"
    path.write_text(corpus_texts["shakespeare"][:60_000] + EOT + corpus_texts["multilingual"], encoding="utf-8")
    return path


def test_train_writes_tokenizer_and_listing(tmp_path, corpus, capsys):
    out = tmp_path / "out" / "tok.tokenforge"
    out.parent.mkdir()
    rc = cli.main(["train", str(corpus), "-o", str(out), "--vocab-size", "400", "--special-token", EOT, "-q"])
    assert rc == 0
    tok = tokenforge.load(out)
    want = tokenforge.train_bpe(corpus, 400, special_tokens=[EOT], verbose=False)
    assert tok._state()["mergeable_ranks"] == want._state()["mergeable_ranks"]
    assert tok.special_tokens == {EOT: 399}
    assert tok.name == "tok"
    lines = (tmp_path / "out" / "tok.tokenforge.vocab").read_text(encoding="utf-8").splitlines()
    body = [line for line in lines if not line.startswith("#")]
    assert len(body) == 400
    assert body[10] == "10\t[\\n]"
    assert body[399] == f"399\t[{EOT}]\tspecial"
    # each merged token with the two parts it was merged from, recovered independently from the ranks
    ranks = {b: i for i, b in tok.vocab.items() if i < 399}
    for k, (a, b) in enumerate(reference.recover_merges(ranks)):
        assert body[256 + k] == f"{256 + k}\t[{render(a + b)}]\t[{render(a)}] + [{render(b)}]"
    assert capsys.readouterr().err == ""
    # --no-vocab-file, --vocab-file
    out2 = tmp_path / "b.tokenforge"
    assert cli.main(["train", str(corpus), "-o", str(out2), "--vocab-size", "300", "-q", "--no-vocab-file"]) == 0
    assert not (tmp_path / "b.tokenforge.vocab").exists()
    listing = tmp_path / "listing.txt"
    assert cli.main(["train", str(corpus), "-o", str(out2), "--vocab-size", "300", "-q", "--vocab-file", str(listing)]) == 0
    assert listing.read_text(encoding="utf-8").count("\n") == 301


def _no_leftovers(folder) -> bool:
    return not any(name.endswith((".tmp", ".partial")) for name in os.listdir(folder))


def test_failed_training_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"hello\n" * 100 + b"\xc3\x28 oops")
    out = tmp_path / "tok.tokenforge"
    rc = cli.main(["train", str(bad), "-o", str(out), "--vocab-size", "300", "-q"])
    assert rc == 1
    err = capsys.readouterr().err
    assert f"{bad}: invalid UTF-8 at byte offset 600" in err and "Traceback" not in err
    assert not out.exists() and _no_leftovers(tmp_path)
    # with --errors replace the same file trains
    assert cli.main(["train", str(bad), "-o", str(out), "--vocab-size", "300", "-q", "--errors", "replace"]) == 0
    assert out.exists()


def test_interrupted_save_leaves_no_partial_file(tmp_path, corpus, monkeypatch, capsys):
    out = tmp_path / "tok.tokenforge"

    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)  # the moment between writing and renaming
    rc = cli.main(["train", str(corpus), "-o", str(out), "--vocab-size", "300", "-q"])
    assert rc == 130
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists() and _no_leftovers(tmp_path)


def test_ctrl_c_while_renaming_keeps_tokenizer_and_listing_together(tmp_path, corpus, monkeypatch, capsys):
    """A real SIGINT arriving between the renames of the tokenizer file and its listing waits until
    both are in place (before, it could leave a new tokenizer beside no or an old listing)."""
    import signal

    out = tmp_path / "tok.tokenforge"
    real_replace = os.replace

    def replace_then_interrupt(src, dst):
        real_replace(src, dst)
        if not os.path.basename(dst).startswith("."):  # the final renames, not those inside each save
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C right after the first of them

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    rc = cli.main(["train", str(corpus), "-o", str(out), "--vocab-size", "300", "-q"])
    monkeypatch.setattr(os, "replace", real_replace)
    assert rc == 130
    tok = tokenforge.load(out)
    listing = (tmp_path / "tok.tokenforge.vocab").read_text(encoding="utf-8").splitlines()
    assert len([line for line in listing if not line.startswith("#")]) == tok.n_vocab
    assert _no_leftovers(tmp_path)


@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "missing.txt", "-o", "x.tokenforge", "--vocab-size", "300"], "missing.txt: no such file"),
        (["train", "{corpus}", "-o", "x.tokenforge", "--vocab-size", "100"], "--vocab-size must be at least 256"),
        (["train", "{corpus}", "-o", "nowhere/x.tokenforge", "--vocab-size", "300"], "nowhere: no such folder for --output"),
        (["train", "{corpus}", "-o", "{tmp}", "--vocab-size", "300"], "is a directory"),
        (["train", "{tmp}/empty", "-o", "x.tokenforge", "--vocab-size", "300"], "a folder without files"),
    ],
)
def test_train_errors(tmp_path, corpus, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    args = [a.format(corpus=corpus, tmp=tmp_path) for a in args]
    assert cli.main(args + ["-q"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.tokenforge").exists()


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "train" in capsys.readouterr().err


def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo.tokenforge"
    proc = subprocess.run(
        [sys.executable, "-m", "tokenforge.cli", "demo", "--vocab-size", "600", "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "decode(encode(sample)) == sample: True" in proc.stdout
    tok = tokenforge.load(out)
    assert tok.n_vocab == 600
    assert tok.decode(tok.encode(cli.DEMO_SAMPLE)) == cli.DEMO_SAMPLE


def test_library_messages_become_the_command_lines_words():
    # keywords become flags only as words of their own, a flag is not named twice, and a message
    # that only Python can follow gets the command line's way (the walkthrough found all three)
    assert cli.as_flags("resume needs a sharded output (shard_size / --shard-size)") == \
        "resume needs a sharded output (--shard-size)"
    assert "enc.special_tokens_set" in cli.as_flags("pass `disallowed_special=(enc.special_tokens_set - {'x'})`")
    message = cli.as_flags("f.tiktoken: a tiktoken rank file holds only the ranks, and this one is not a known "
                           "model's; pass pattern= and special_tokens= (special_tokens={'<|endoftext|>': 1})")
    assert "--special-token={" not in message and "tokenforge convert FILE OUT.json" in message
    assert cli.as_flags("vocab_size must be at least 256") == "--vocab-size must be at least 256"


def test_disallowed_special_text_is_one_line(tmp_path, capsys):
    text = tmp_path / "sp.txt"
    text.write_text("a <|endoftext|> b", encoding="utf-8")
    assert cli.main(["count", "-t", "gpt2", "--disallow-special", str(text)]) != 0
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "the text holds the special token '<|endoftext|>'" in err


def test_a_special_token_on_a_tokens_id_is_refused(tmp_path, capsys):
    # convert wrote a file that loading then refused; in Python the two mapped to one id
    enc = tokenforge.get_encoding("gpt2")
    with pytest.raises(ValueError, match=r"'<\|endoftext\|>' has id 5, the id of the token b'&'"):
        tokenforge.Tokenizer.from_ranks(enc._mergeable_ranks, pattern=enc.pattern, special_tokens={"<|endoftext|>": 5})
    enc.save(tmp_path / "g.tiktoken", format="tiktoken")
    out = tmp_path / "out.json"
    rc = cli.main(["convert", str(tmp_path / "g.tiktoken"), str(out), "--to", "huggingface", "--pattern", "gpt2",
                   "--special-token", "<|endoftext|>=5"])
    assert rc != 0 and not out.exists() and "the id of the token" in capsys.readouterr().err
    assert cli.main(["convert", str(tmp_path / "g.tiktoken"), str(out), "--to", "huggingface", "--pattern", "gpt2",
                     "--special-token", "<|endoftext|>=50256"]) == 0
    assert tokenforge.load(out).encode("a<|endoftext|>", allowed_special="all") == [64, 50256]


def test_decode_and_serve_say_what_is_wrong(tmp_path, capsys):
    import socket

    assert cli.main(["decode", "-t", "gpt2", "-i", str(tmp_path / "missing.bin")]) != 0
    assert "missing.bin: no such file" in capsys.readouterr().err
    assert cli.main(["decode", "-t", "gpt2", "-i", str(tmp_path)]) != 0
    assert "no index.json (not a folder of shards" in capsys.readouterr().err
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        port = busy.getsockname()[1]
        assert cli.main(["serve", "--port", str(port)]) != 0
        assert f"127.0.0.1:{port} is in use by another program (--port PORT" in capsys.readouterr().err
    finally:
        busy.close()


def test_train_reads_what_encode_reads(tmp_path, corpus_texts):
    # JSON lines (a field of each record), gzip, folders: each document a text of its own, as
    # train_bpe(iter(documents)); a compressed text file as the same text uncompressed (train used
    # to count the JSON and the compressed bytes, or refuse them)
    import gzip
    import json

    docs = [d for d in corpus_texts["shakespeare"][:120_000].split("\n\n") if d.strip()]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"id": k, "body": d}) + "\n" for k, d in enumerate(docs)),
                                      encoding="utf-8")
    text = corpus_texts["stdlib"][:100_000]
    (tmp_path / "f.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "f.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "f.txt").write_text(text, encoding="utf-8")

    def trained(*inputs):
        out = tmp_path / f"t{len(list(tmp_path.iterdir()))}.tf"
        assert cli.main(["train", *map(str, inputs), "-o", str(out), "--vocab-size", "500", "-q", "--no-vocab-file"]) == 0
        return tokenforge.load(out)._mergeable_ranks

    assert cli.main(["train", str(tmp_path / "d.jsonl"), "--field", "body", "-o", str(tmp_path / "j.tf"),
                     "--vocab-size", "500", "-q", "--no-vocab-file"]) == 0
    assert tokenforge.load(tmp_path / "j.tf")._mergeable_ranks == \
        tokenforge.train_bpe(iter(docs), 500, verbose=False)._mergeable_ranks
    plain = trained(tmp_path / "f.txt")
    assert trained(tmp_path / "f.txt.gz") == plain == trained(tmp_path / "folder")


def test_count_shows_the_bytes_of_text_of_a_compressed_file(tmp_path, capsys, corpus_texts):
    import gzip
    import json

    text = corpus_texts["stdlib"][:50_000]
    (tmp_path / "f.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "f.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    assert cli.main(["count", "-t", "gpt2", "--json", "-q", str(tmp_path / "f.txt"), str(tmp_path / "f.txt.gz")]) == 0
    rows = json.loads(capsys.readouterr().out)["inputs"]
    assert rows[0]["bytes"] == rows[1]["bytes"] == len(text.encode("utf-8"))  # (the .gz showed its compressed size)
    assert rows[0]["tokens"] == rows[1]["tokens"]


def test_a_quiet_encode_sums_up_what_it_did(tmp_path, capsys, corpus_texts):
    (tmp_path / "f.txt").write_text(corpus_texts["stdlib"][:20_000], encoding="utf-8")
    assert cli.main(["encode", "-t", "gpt2", "-o", str(tmp_path / "q.bin"), str(tmp_path / "f.txt"), "-q"]) == 0
    err = capsys.readouterr().err
    count = len(tokenforge.dataset.read_ids(tmp_path / "q.bin"))
    assert f"wrote {count:,} tokens" in err and f"1 documents, {count:,} tokens" in err  # (it said 0 tokens, 0%)


@pytest.mark.parametrize("args, message", [
    (["encode", "-t", "gpt2", "F", "--text", "hi"], "--text and files (F...): give the text or the files, not both"),
    (["count", "-t", "gpt2", "F", "--text", "hi"], "--text and files (F...): give the text or the files, not both"),
    (["encode", "-t", "gpt2", "F", "--field", "body"], "--field applies to a training array: give --output"),
    (["encode", "-t", "gpt2", "--text", "hi", "--shard-size", "5", "--resume"], "--shard-size, --resume apply to a training array"),
    (["encode", "-t", "gpt2", "F", "-o", "OUT.bin", "--no-eot", "--eot-token", "<|endoftext|>"],
     "--no-eot and --eot-token <|endoftext|>: give one or the other"),
    (["encode", "-t", "gpt2", "F", "-o", "OUT.bin", "--field", "body"], "--field 'body': every input is read as text"),
    (["encode", "-t", "gpt2", "F", "-o", "OUT.bin", "--field", "body", "--format", "text"], "--field 'body': every input"),
    (["train", "F", "--vocab-size", "300", "-o", "OUT.json", "--field", "body"], "--field 'body': every input is read as text"),
])
def test_options_that_would_be_ignored_are_refused(tmp_path, capsys, args, message):
    # from the walkthrough: each of these was accepted and silently left out (--text with files
    # printed the ids of --text alone)
    (tmp_path / "F").write_text("hello world\n", encoding="utf-8")
    args = [str(tmp_path / a) if a in ("F", "OUT.bin", "OUT.json") else a for a in args]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert message.replace("F...", str(tmp_path / "F") + "...") in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["F"]  # nothing written


def test_field_is_taken_where_an_input_has_fields(tmp_path, capsys):
    (tmp_path / "F.txt").write_text("plain text\n", encoding="utf-8")
    (tmp_path / "d.jsonl").write_text('{"body": "hello world"}\n', encoding="utf-8")
    out = tmp_path / "o.bin"
    assert cli.main(["encode", "-t", "gpt2", "-q", "-o", str(out), "--field", "body", str(tmp_path / "d.jsonl"),
                     str(tmp_path / "F.txt")]) == 0
    assert tokenforge.get_encoding("gpt2").encode("hello world") == tokenforge.dataset.read_ids(out).tolist()[:2]
