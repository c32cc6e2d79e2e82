"""tokenforge.distributed: counting, training and encoding on a real local Ray cluster, against the
local paths; a worker that dies mid-run is retried and the result is unchanged.

One Ray instance of the tests' own (2 CPUs, no dashboard) serves the whole module and is shut down at its end.
Without Ray the cluster tests are skipped; the missing-Ray error is tested with Ray hidden.
"""

import os
import sys

import numpy as np
import pytest

import tokenforge
from tokenforge import _core, distributed
from tokenforge.dataset import encode_files, read_ids
from tokenforge.train import _Counting, _Plan

EOT = "<|endoftext|>"


# --------------------------------------------------------------------------------------------------
# Without Ray


def test_engine_ray_without_ray_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    path = tmp_path / "a.txt"
    path.write_text("hello world\n")
    with pytest.raises(ImportError, match=r"pip install \"tokenforge\[ray\]\""):
        tokenforge.train_bpe(path, 300, engine="ray", verbose=False)
    tok = tokenforge.train_bpe(path, 300, verbose=False)  # the local engine does not need Ray
    with pytest.raises(ImportError, match=r"tokenforge\[ray\]"):
        distributed.encode_files_ray(tok, [path], tmp_path / "out", add_eot=False)


def test_engine_argument_checked(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("hello world\n")
    with pytest.raises(ValueError, match="engine"):
        tokenforge.train_bpe(path, 300, engine="spark", verbose=False)
    with pytest.raises(ValueError, match="ray_address"):
        tokenforge.train_bpe(path, 300, ray_address="auto", verbose=False)


def test_piece_table_round_trip():
    counter = _core.PieceCounter(1, [])
    text = b"the cat sat on the mat, the end\n\xe4\xb8\xad\xe6\x96\x87 \x00\x00 x"
    counter.count_bytes(text, 0, len(text), 1)
    counter.add([(b"the", 1 << 40)])
    table = distributed.PieceTable.of_counter(counter)
    assert (table.data.dtype, table.ends.dtype, table.counts.dtype) == (np.uint8, np.int64, np.uint64)
    assert dict(table.items()) == dict(counter.items()) and len(table) == len(counter)
    frozen = distributed.PieceTable(*(np.frombuffer(a.tobytes(), a.dtype) for a in (table.data, table.ends, table.counts)))  # read-only, as from Ray
    doubled = distributed.merge_tables([frozen, table])
    assert dict(doubled.items()) == {p: 2 * c for p, c in counter.items()}
    empty = distributed.PieceTable.of_counter(_core.PieceCounter(0, []))
    assert len(empty) == 0 and len(distributed.merge_tables([empty])) == 0
    with pytest.raises(ValueError, match="end offsets"):
        _core.PieceCounter(0, []).add_table(table.data, table.ends[::-1].copy(), table.counts)
    with pytest.raises(ValueError, match="one end offset per count"):
        _core.PieceCounter(0, []).add_table(table.data, table.ends, table.counts[1:].copy())


# --------------------------------------------------------------------------------------------------
# A local cluster


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'tokenforge[ray]')")
    env = {k: os.environ[k] for k in distributed.FORWARDED_ENV if k in os.environ}
    saved = os.environ.pop("RAY_ADDRESS", None)
    # address="local": always a new instance of our own, never a cluster someone else started here,
    # listening on 127.0.0.1 only (as distributed.connect starts one).
    options = {}
    distributed._loopback_only(options)
    ray.init(address="local", num_cpus=2, runtime_env={"env_vars": env}, log_to_driver=False, **options)
    try:
        yield ray
    finally:
        ray.shutdown()
        if saved is not None:
            os.environ["RAY_ADDRESS"] = saved


@pytest.fixture(scope="module")
def files(tmp_path_factory, corpus_texts):
    """Several files of mixed text with special tokens in them, and an empty one."""
    folder = tmp_path_factory.mktemp("ray-corpus")
    texts = {
        "shakespeare.txt": corpus_texts["shakespeare"][:300_000].replace("\n\n", f"\n\n{EOT}"),
        "code.txt": corpus_texts["stdlib"][:200_000],
        "multi.txt": (corpus_texts["multilingual"] + EOT) * 20,
        "stories.txt": corpus_texts["tinystories"][:150_000],
        "empty.txt": "",
    }
    paths = []
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8", newline="")
        paths.append(folder / name)
    return paths


def local_counts(paths, pattern="cl100k", specials=(EOT,)):
    plan = _Plan(300, pattern, specials, 1, False, "x")
    counting = _Counting(plan, 1)
    for p in paths:
        counting.count_file(p, 1 << 20, "strict", _NoBar())
    return dict(counting.finish().items())


class _NoBar:
    def update(self, n=1):
        pass


def test_workers_run_this_python_and_this_tokenforge(ray_cluster):
    @ray_cluster.remote
    def where():
        import sys

        import tokenforge

        return sys.executable, tokenforge.__file__, os.environ.get("TIKTOKEN_CACHE_DIR")

    assert ray_cluster.get(where.remote()) == (sys.executable, tokenforge.__file__, os.environ["TIKTOKEN_CACHE_DIR"])


def test_local_instance_listens_on_loopback_only(ray_cluster):
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    listening = []
    for proc in [me] + me.children(recursive=True):
        try:
            listening += [c.laddr for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            pass
    assert listening, "Ray's processes should listen somewhere"
    assert all(addr.ip in ("127.0.0.1", "::ffff:127.0.0.1", "::1") for addr in listening), listening


def test_ranges_end_at_safe_cuts(files):
    text = files[0].read_bytes()
    cutter = _core.PieceCounter(1, [EOT.encode()])
    ranges = distributed.file_ranges(files[0], len(text), 10_000, cutter)
    assert len(ranges) > 20
    assert ranges[0][0] == 0 and ranges[-1][1] == len(text)
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(ranges, ranges[1:]))
    # each cut is one the counter itself would use (seen from somewhere before it)
    for _, end in ranges[:-1]:
        window = text[end - 100:end + 100]
        assert any(cutter.first_cut(window, k, len(window)) == 100 for k in range(100))


@pytest.mark.parametrize("pattern", ["cl100k", "o200k", "gpt2"])
def test_counts_exact_and_merges_identical(ray_cluster, files, pattern):
    plan = _Plan(2000, pattern, [EOT], 1, False, "x")
    stats = {}
    counter = distributed.count_files_ray(plan, files, chunk_size=4096, range_size=20_000, fanout=3, stats=stats)
    assert stats["ranges"] > 25 and stats["merge_levels"] >= 3  # many ranges, a tree several levels deep
    assert dict(counter.items()) == local_counts(files, pattern)
    local = tokenforge.train_bpe(files, 2000, pattern=pattern, special_tokens=[EOT], verbose=False)
    ray_tok = distributed.train_bpe_ray(files, 2000, pattern=pattern, special_tokens=[EOT], verbose=False,
                                        range_size=20_000, fanout=3)
    assert ray_tok.merges == local.merges
    assert ray_tok._state() == local._state()
    assert len(local.merges) == 2000 - 256 - 1


def test_train_bpe_engine_ray(ray_cluster, files):
    local = tokenforge.train_bpe(files, 1500, special_tokens=[EOT], verbose=False)
    ray_tok = tokenforge.train_bpe(files, 1500, special_tokens=[EOT], verbose=False, engine="ray", num_workers=2)
    assert ray_tok._state() == local._state()
    # train_bpe_from_counts on the counts (as str keys, as a Spark job would write them): the same tokenizer
    counts = {p.decode("utf-8"): c for p, c in local_counts(files).items()}
    assert tokenforge.train_bpe_from_counts(counts, 1500, special_tokens=[EOT], verbose=False)._state() == local._state()


def test_custom_pattern_and_replace_errors(ray_cluster, tmp_path, files):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(files[2].read_bytes()[:5000] + b"\xff\xfe broken \xc3 x\n" + files[0].read_bytes()[:20000])
    pat = r"\s?\w+|[^\w\s]+|\s+"
    local = tokenforge.train_bpe([bad, files[3]], 700, pattern=pat, errors="replace", verbose=False)
    ray_tok = distributed.train_bpe_ray([bad, files[3]], 700, pattern=pat, errors="replace", verbose=False,
                                        range_size=3000)
    assert ray_tok._state() == local._state()
    with pytest.raises(ValueError, match=r"invalid UTF-8 at byte offset 5000") as info:
        distributed.train_bpe_ray([bad], 700, verbose=False, range_size=3000)
    assert type(info.value) is ValueError  # the task's error itself, not Ray's wrapper
    tok = tokenforge.train_bpe([files[3]], 300, special_tokens=[EOT], verbose=False)
    with pytest.raises(ValueError, match=r"not UTF-8"):
        distributed.encode_files_ray(tok, [bad], tmp_path / "out", shard_size=3000)


def test_train_rejects_texts_and_bad_paths(ray_cluster, tmp_path):
    with pytest.raises(TypeError, match="files"):
        tokenforge.train_bpe(iter(["a b c"]), 300, engine="ray", verbose=False)
    with pytest.raises(FileNotFoundError):
        tokenforge.train_bpe([tmp_path / "missing.txt"], 300, engine="ray", verbose=False)
    (tmp_path / "e.txt").write_text("")
    with pytest.raises(ValueError, match="largest node of the Ray cluster has 2"):  # rather than wait forever
        tokenforge.train_bpe([tmp_path / "e.txt"], 300, engine="ray", num_workers=3, verbose=False)
    with pytest.raises(ValueError, match="empty"):
        tokenforge.train_bpe([tmp_path / "e.txt"], 300, engine="ray", verbose=False)


@pytest.fixture(scope="module")
def trained(files):
    return tokenforge.train_bpe(files, 1000, special_tokens=[EOT], verbose=False)


@pytest.mark.parametrize("separator", [None, EOT])
@pytest.mark.parametrize("which", ["trained", "cl100k_base", "custom", "nfkc"])
def test_encode_files_identical_to_local(ray_cluster, files, trained, tmp_path, separator, which):
    if which == "trained":
        tok = trained
    elif which == "custom":  # a regex pattern: one shard per file
        tok = tokenforge.train_bpe(files[2:], 400, pattern=r"\s?\w+|[^\w\s]+|\s+", special_tokens=[EOT], verbose=False)
        files = files[2:]
    elif which == "nfkc":  # a normalizer: one shard per file
        tok = tokenforge.Tokenizer(pattern="cl100k", mergeable_ranks=trained._mergeable_ranks,
                                   special_tokens=trained._special_tokens, normalizer="NFKC")
    else:
        tok = tokenforge.get_encoding(which)  # a named encoding pickles by name: workers load it
    encode_files(tok, files, tmp_path / "local.bin", separator=separator)
    index = distributed.encode_files_ray(tok, files, tmp_path / "shards", separator=separator, shard_size=30_000)
    # files cut into several shards (an empty file is one shard too)
    if which in ("custom", "nfkc"):
        assert len(index["shards"]) == len(files)
    else:
        assert len(index["shards"]) > 2 * len(files)
    ids = distributed.read_shards(tmp_path / "shards")
    expected = np.asarray(read_ids(tmp_path / "local.bin"))
    assert index["count"] == len(expected) == sum(s["count"] for s in index["shards"])
    assert index["dtype"] == expected.dtype.name
    np.testing.assert_array_equal(ids, expected)
    with pytest.raises(FileExistsError):
        distributed.encode_files_ray(tok, files, tmp_path / "shards")
    if which == "trained":  # overwrite with fewer shards: the extra ones of the first run are removed
        index = distributed.encode_files_ray(tok, files, tmp_path / "shards", separator=separator, overwrite=True)
        assert sorted(p for p in os.listdir(tmp_path / "shards") if p.startswith("shard-")) == [s["file"] for s in index["shards"]]
        np.testing.assert_array_equal(distributed.read_shards(tmp_path / "shards"), expected)


def test_encode_cuts_keep_away_from_the_separator(ray_cluster, tmp_path):
    # a separator that contains a safe cut ("d\nA"), and text where it is the nearest cut but for
    # " hello world" in one document of ten: a shard must never start inside the separator
    sep = "end\nAND"
    text = "".join(f"item{i}=({i},{i * 7});" + (" hello world" if i % 10 == 0 else "") + sep for i in range(3000))
    path = tmp_path / "s.txt"
    path.write_text(text)
    tok = tokenforge.train_bpe(path, 400, special_tokens=[EOT], verbose=False)
    encode_files(tok, [path], tmp_path / "local.bin", separator=sep)
    index = distributed.encode_files_ray(tok, [path], tmp_path / "shards", separator=sep, shard_size=2000)
    assert len(index["shards"]) > 10
    data = path.read_bytes()
    for s in index["shards"][1:]:
        assert sep.encode() not in data[s["start"] - len(sep) + 1:s["start"] + len(sep) - 1]
    np.testing.assert_array_equal(distributed.read_shards(tmp_path / "shards"), read_ids(tmp_path / "local.bin"))


# --------------------------------------------------------------------------------------------------
# Fault tolerance: a task kills its own worker process on its first attempt (marker file), Ray retries


@pytest.mark.parametrize("kind", ["count", "merge"])
def test_killed_worker_is_retried_training(ray_cluster, files, tmp_path, kind):
    marker = tmp_path / f"crashed-{kind}"
    local = tokenforge.train_bpe(files, 1200, special_tokens=[EOT], verbose=False)
    tok = distributed.train_bpe_ray(files, 1200, special_tokens=[EOT], verbose=False, range_size=50_000,
                                    _crash_once=(kind, str(marker)))
    assert marker.exists()  # a worker did die (its pid is in the marker)
    assert int(marker.read_text()) != os.getpid()
    assert tok._state() == local._state()


def test_killed_worker_without_retries_fails(ray_cluster, files, tmp_path):
    # the same crash with max_retries=0 is an error: the test above passes because of Ray's retry
    marker = tmp_path / "crashed"
    with pytest.raises(ray_cluster.exceptions.WorkerCrashedError):
        distributed.train_bpe_ray(files, 1200, special_tokens=[EOT], verbose=False, range_size=50_000,
                                  max_retries=0, _crash_once=("count", str(marker)))
    assert marker.exists()


def test_killed_worker_is_retried_encoding(ray_cluster, files, trained, tmp_path):
    marker = tmp_path / "crashed"
    encode_files(trained, files, tmp_path / "local.bin", separator=EOT)
    distributed.encode_files_ray(trained, files, tmp_path / "shards", separator=EOT, shard_size=50_000,
                                 _crash_once=("encode", str(marker)))
    assert marker.exists()
    np.testing.assert_array_equal(distributed.read_shards(tmp_path / "shards"), read_ids(tmp_path / "local.bin"))
    assert not [p for p in os.listdir(tmp_path / "shards") if p.endswith(".partial")]


def test_command_line_engine_ray(ray_cluster, files, tmp_path):
    from tokenforge import cli

    out = tmp_path / "tok.tokenforge"
    assert cli.main(["train", *map(str, files), "-o", str(out), "--vocab-size", "500", "-q", "--engine", "ray",
                     "--special-token", EOT]) == 0
    local = tokenforge.train_bpe(files, 500, special_tokens=[EOT], verbose=False)
    assert tokenforge.load(out).merges == local.merges
    assert cli.main(["encode", "-t", str(out), "-o", str(tmp_path / "shards"), "--engine", "ray", "-q",
                     *map(str, files)]) == 0
    encode_files(local, files, tmp_path / "local.bin")
    np.testing.assert_array_equal(distributed.read_shards(tmp_path / "shards"), np.asarray(read_ids(tmp_path / "local.bin")))


# --------------------------------------------------------------------------------------------------
# The dataset readers on Ray, separators across read boundaries, resume, workers make the folder


def test_ray_reads_jsonl_gzip_and_globs(ray_cluster, tmp_path, corpus_texts):
    import gzip
    import json

    docs = [corpus_texts["shakespeare"][k:k + 2000] for k in range(0, 100_000, 2000)]
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps({"text": d}) + "\n" for d in docs))
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs[:7]))
    tok = tokenforge.get_encoding("gpt2")
    out = tmp_path / "new" / "deeper"  # created by the workers
    index = distributed.encode_files_ray(tok, [str(tmp_path / "*.json*")], out, num_threads=1)
    expected = [i for d in docs + docs[:7] for i in tok.encode_ordinary(d) + [tok.eot_token]]
    assert distributed.read_shards(out).tolist() == expected and index["complete"] is True


def test_ray_separator_across_read_boundaries(ray_cluster, tmp_path, corpus_texts, monkeypatch):
    filler = (corpus_texts["shakespeare"] * 2)[: (1 << 20) - 4]
    docs = [filler, "second document", filler[:3000]]
    path = tmp_path / "s.txt"
    path.write_text("END OF DOC".join(docs))
    tok = tokenforge.get_encoding("gpt2")
    distributed.encode_files_ray(tok, [path], tmp_path / "shards", separator="END OF DOC", shard_size=10 << 20)
    expected = [i for d in docs for i in tok.encode_ordinary(d) + [tok.eot_token]]
    assert distributed.read_shards(tmp_path / "shards").tolist() == expected


def test_ray_resume_after_a_killed_driver(ray_cluster, files, trained, tmp_path):
    import json

    out = tmp_path / "shards"
    full = distributed.encode_files_ray(trained, files, out, shard_size=40_000)
    index = json.loads((out / "index.json").read_text())
    # as a driver killed midway leaves it: some shards listed, "complete" false
    kept = index["shards"][::2]
    (out / "index.json").write_text(json.dumps(dict(index, shards=kept, complete=False)))
    for s in index["shards"][1::2]:
        os.unlink(out / s["file"])
    with pytest.raises(ValueError, match="--resume"):
        distributed.read_shards(out)
    with pytest.raises(FileExistsError, match="resume"):
        distributed.encode_files_ray(trained, files, out, shard_size=40_000)
    # another tokenizer of the same name and size (two tokens' ids swapped): refused, not mixed in
    ranks = dict(trained._mergeable_ranks)
    a, b = sorted(ranks, key=ranks.get)[-2:]
    ranks[a], ranks[b] = ranks[b], ranks[a]
    impostor = tokenforge.Tokenizer.from_ranks(ranks, pattern=trained.pattern, special_tokens=trained._special_tokens,
                                               name=trained.name)
    assert (impostor.name, impostor.n_vocab) == (trained.name, trained.n_vocab)
    with pytest.raises(ValueError, match="cannot resume with another tokenizer"):
        distributed.encode_files_ray(impostor, files, out, shard_size=40_000, resume=True)
    inodes = {s["file"]: os.stat(out / s["file"]).st_ino for s in kept}
    again = distributed.encode_files_ray(trained, files, out, shard_size=40_000, resume=True)
    assert {f: os.stat(out / f).st_ino for f in inodes} == inodes  # finished shards not rewritten
    assert again["shards"] == full["shards"]
    encode_files(trained, files, tmp_path / "local.bin")
    np.testing.assert_array_equal(distributed.read_shards(out), read_ids(tmp_path / "local.bin"))


def test_command_line_ray_shard_size_and_threads(ray_cluster, files, trained, tmp_path):
    from tokenforge import cli

    trained.save(tmp_path / "t.tokenforge")
    assert cli.main(["encode", "-t", str(tmp_path / "t.tokenforge"), "-o", str(tmp_path / "shards"), "--engine", "ray",
                     "-q", "--shard-size", "10K", "--threads", "2", *map(str, files)]) == 0
    import json

    index = json.loads((tmp_path / "shards" / "index.json").read_text())
    assert len(index["shards"]) > 2 * len(files)
    assert cli.main(["encode", "-t", str(tmp_path / "t.tokenforge"), "-o", str(tmp_path / "s2"), "--engine", "ray",
                     "-q", "--threads", "64", *map(str, files)]) == 1  # more CPUs than the cluster has: an error


def test_ray_writes_to_an_fsspec_url(ray_cluster, files, trained, tmp_path):
    """An output URL (file:// here; s3:// and gs:// go the same way): workers upload their shards,
    the driver writes index.json; no local ./file: folder appears."""
    pytest.importorskip("fsspec")
    url = f"file://{tmp_path}/remote/out"
    index = distributed.encode_files_ray(trained, files, url, shard_size=40_000)
    assert len(index["shards"]) > len(files) and index["complete"] is True
    encode_files(trained, files, tmp_path / "local.bin")
    np.testing.assert_array_equal(distributed.read_shards(tmp_path / "remote" / "out"), read_ids(tmp_path / "local.bin"))
    with pytest.raises(FileExistsError):
        distributed.encode_files_ray(trained, files, url, shard_size=40_000)
    again = distributed.encode_files_ray(trained, files, url, shard_size=40_000, resume=True)
    assert again["shards"] == index["shards"]
    assert not any(p.startswith("file:") for p in os.listdir("."))
