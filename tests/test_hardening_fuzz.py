"""The fuzz targets in fuzz/: every saved crashing input replays cleanly, and each target runs under
atheris (coverage-guided, libFuzzer) for a bounded time without a crash, a hang or an undocumented
exception. About 8 s per target; FUZZ_SECONDS changes it (tools/reliability.py runs them longer).
"""

import importlib
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUZZ = ROOT / "fuzz"
REGRESSIONS = ROOT / "tests" / "regressions"
TARGETS = ["fuzz_load", "fuzz_encode", "fuzz_decode", "fuzz_model_file", "fuzz_server_request",
           "fuzz_dataset_files"]
# Structure-aware server inputs (fuzz_server_request.request_bytes): a POST, a GET with a body, a
# HEAD, a pipelined second request; and a raw request line.
SERVER_SEEDS = [b"\x01hello world", b"\x03x", b"\x05x", b"\x21two requests", b"\x09short", b"\x19twice",
                b"\x80GET /api/tokenizers HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"]
SECONDS = int(os.environ.get("FUZZ_SECONDS", "8"))

sys.path.insert(0, str(FUZZ))


def _regressions():
    return [(t, p) for t in TARGETS for p in sorted((REGRESSIONS / t).glob("*")) if p.is_file()]


@pytest.mark.parametrize("target,path", _regressions(), ids=[f"{t}/{p.name}" for t, p in _regressions()])
def test_saved_crashes_replay_cleanly(target, path):
    module = importlib.import_module(target)
    module.TestOneInput(path.read_bytes())


def _seeds(target: str, folder: pathlib.Path) -> None:
    import _common

    folder.mkdir(parents=True, exist_ok=True)
    if target == "fuzz_load":
        _common.write_corpus(folder)
    elif target == "fuzz_encode":
        texts = ["Hello world <|endoftext|> don't 123", "\ud800x", "<|endoftext", "e\u0301\u0301 中 😀\n\n  ", "\x00" * 5]
        for n, t in enumerate(texts):
            for tok in range(0, 8, 3):
                (folder / f"seed-{n}-{tok}").write_bytes(bytes([tok, n % 5, 0, 7]) + t.encode("utf-8", "surrogatepass"))
    elif target == "fuzz_model_file":
        import fuzz_model_file

        for n, model in enumerate(fuzz_model_file.seed_models()):
            (folder / f"seed-{n}").write_bytes(model)
    elif target == "fuzz_server_request":
        for n, seed in enumerate(SERVER_SEEDS):
            (folder / f"seed-{n}").write_bytes(seed)
    elif target == "fuzz_dataset_files":
        import fuzz_dataset_files

        for n, seed in enumerate(fuzz_dataset_files.seed_inputs()):
            (folder / f"seed-{n}").write_bytes(seed)
    else:
        (folder / "seed").write_bytes(bytes([1]) + b"".join(bytes([k]) + (300 + k).to_bytes(4, "little") for k in range(8)))
    for p in (REGRESSIONS / target).glob("*"):
        (folder / f"regression-{p.name}").write_bytes(p.read_bytes())


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_for_a_bounded_time(tmp_path, target):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    _seeds(target, corpus)
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    cmd = [sys.executable, str(FUZZ / f"{target}.py"), f"-max_total_time={SECONDS}", "-timeout=20",
           "-rss_limit_mb=3072", f"-artifact_prefix={artifacts}/", "-print_final_stats=1", str(corpus)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=SECONDS + 120,
                          env={**os.environ, "PYTHONHASHSEED": "0", "TMPDIR": str(tmp_path)})  # libFuzzer exits past atexit
    found = sorted(p.name for p in artifacts.iterdir())
    assert proc.returncode == 0 and not found, (
        f"{target} failed (exit {proc.returncode}); inputs kept in {artifacts}: {found}\n{proc.stderr[-6000:]}")
    runs = [line for line in proc.stderr.splitlines() if line.startswith("stat::number_of_executed_units")]
    assert runs and int(runs[0].split(":")[-1]) > 0, proc.stderr[-2000:]


def _flip(seed: bytes, edits: list) -> bytes:
    data = bytearray(seed)
    for pos, value in edits:
        if data:
            data[pos % len(data)] = value
    return bytes(data)


@pytest.mark.parametrize("target", TARGETS)
def test_targets_on_hypothesis_inputs(target):
    """The same targets driven by hypothesis (runs where atheris is not installed too): arbitrary
    bytes, and seed files with bytes changed (structure-aware inputs for fuzz_load start at 0x80)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import _common

    module = importlib.import_module(target)
    if target == "fuzz_load":
        seeds = _common.seed_inputs()
    elif target == "fuzz_model_file":
        seeds = module.seed_models()
    elif target == "fuzz_server_request":
        seeds = SERVER_SEEDS
    elif target == "fuzz_dataset_files":
        seeds = module.seed_inputs()
    else:
        seeds = [b"\x00\x01\x00\x07Hello <|endoftext|> \xed\xa0\x80"]
    inputs = st.one_of(
        st.binary(max_size=600),
        st.builds(_flip, st.sampled_from(seeds), st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=6)),
    )

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=inputs)
    def run(data):
        module.TestOneInput(data)

    run()
