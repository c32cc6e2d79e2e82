"""Runs tokenforge's reliability checks and writes docs/reliability.md (the table is generated, never
typed by hand).

    python tools/reliability.py                  # everything, about 10-15 minutes on 2 cores
    python tools/reliability.py --quick          # smaller sizes and 15 s of fuzzing per target
    python tools/reliability.py --only growth,leak --output /tmp/r.md

Checks (each case in a fresh subprocess, so its peak RSS is its own):
- growth: adversarial inputs at n and 4n characters; time (best of 3) and the extra peak RSS of the
  encode, and the ratio 4n / n. Linear growth gives about 4; n log n (the BPE heap of one huge
  piece) a bit more; cache effects on a shared machine add noise. A case also checks its result
  (round trip, or the documented error).
- fuzz: each atheris target in fuzz/ for a fixed time; executions, coverage, crashes.
- leak: RSS after 20k and after 200k mixed calls (encode, batch, numpy, decode, errors); and, if
  valgrind is installed, --leak-check=full over a shorter loop, counting bytes lost in frames of
  tokenforge's extension.
- attacks: hostile files and unlucky inputs (tools/attacks.py), each beside what the peer library
  that reads the same file does with it.
- asan: builds the extension with -fsanitize=address,undefined into a temporary folder and runs a
  workload with libasan preloaded (leak detection off: CPython's own allocations at exit are not
  ours). Skipped with the reason when it cannot run.
Needs ../shared beside the checkout (cl100k_base from shared/vocab; nothing from the network).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
FUZZ = ROOT / "fuzz"
sys.path.insert(0, str(FUZZ))

# --------------------------------------------------------------------------------------------------
# growth

# Each case: (name, what it checks, size n in characters, python expression making the text from n,
# the operation). The child prints JSON: seconds (best of 3), extra peak RSS in MB, and ok.
CASES = [
    ("single line of mixed text", "cl100k, one 25 / 100 MB line, no newline; decode round trip",
     25_000_000, "line", "encode_ordinary"),
    ("repeated 'a'", "cl100k, one piece of n bytes (BPE heap); round trip", 2_500_000, "'a' * n", "encode_ordinary"),
    ("repeated ' '", "cl100k, one whitespace piece; round trip", 2_500_000, "' ' * n", "encode_ordinary"),
    ("repeated ' ' (o200k)", "o200k (tiktoken's regex overflows here); round trip", 2_500_000, "' ' * n", "encode_ordinary:o200k"),
    ("repeated '\\n'", "cl100k; round trip", 2_500_000, "'\\n' * n", "encode_ordinary"),
    ("repeated NUL", "cl100k; round trip", 2_500_000, "'\\x00' * n", "encode_ordinary"),
    ("repeated '1'", "cl100k, digits in groups of 3; round trip", 2_500_000, "'1' * n", "encode_ordinary"),
    ("repeated emoji", "cl100k, 4-byte characters, one piece; round trip", 1_000_000, "'😀' * n", "encode_ordinary"),
    ("combining marks", "cl100k, 'e' + n x U+0301; round trip", 250_000, "'e' + '\\u0301' * n", "encode_ordinary"),
    ("lone surrogates", "cl100k, 'a\\ud800' x n/2 (replaced as tiktoken does)", 2_500_000, "'a\\ud800' * (n // 2)", "encode_ordinary:surrogates"),
    ("special tokens, allowed", "cl100k, '<|endoftext|>' x n/13: every id is 100257", 2_500_000,
     "'<|endoftext|>' * (n // 13)", "encode_allowed"),
    ("special tokens as text", "disallowed_special=(): ordinary ids, none 100257", 2_500_000,
     "'<|endoftext|>' * (n // 13)", "encode_as_text"),
    ("special tokens, disallowed", "the default policy: ValueError", 2_500_000, "'x' * n + '<|endoftext|>'", "encode_disallowed"),
    ("look-alikes", "'<|endoftext|' x n/12: text, never 100257", 2_500_000, "'<|endoftext|' * (n // 12)", "encode_allowed_none"),
    ("encode_iterable", "a 25 / 100 MB line streamed in 64 KiB chunks equals whole", 25_000_000, "line", "iterable"),
    ("encode_batch", "n/1000 documents of 1000 characters, 8 threads", 2_500_000, "line", "batch"),
    ("train_bpe", "random words, texts of 5000 characters, vocab 2000, 2 workers; round trip", 2_500_000, "words", "train"),
]

_CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import _common, tokenforge
n, make, op = int(sys.argv[2]), sys.argv[3], sys.argv[4]
base = _common.TRAIN_TEXT.replace("\n", " ").replace("\r", " ")
line = (base * (n // len(base) + 1))[:n]
import random
rng = random.Random(n)
words = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyzéß中") for _ in range(rng.randint(1, 9))) for _ in range(n // 5))[:n] if make == "words" else ""
text = eval(make, {"n": n, "line": line, "words": words})
tok = _common.cl100k()
if op.endswith(":o200k"):
    tok = tokenforge.load(_common.SHARED / "vocab" / "o200k_base.tiktoken", pattern="o200k",
                          special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018})
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
def run():
    kind = op.split(":")[0]
    if kind == "encode_ordinary":
        return tok.encode_to_numpy(text, disallowed_special=())
    if kind == "encode_allowed" or kind == "encode_allowed_none":
        return tok.encode_to_numpy(text, allowed_special="all")
    if kind == "encode_as_text":
        return tok.encode_to_numpy(text, disallowed_special=())
    if kind == "encode_disallowed":
        try:
            tok.encode(text)
        except ValueError as e:
            return str(e)
        return None
    if kind == "iterable":
        import numpy as np
        chunks = (text[i:i + 65536] for i in range(0, len(text), 65536))
        return np.fromiter(tok.encode_iterable(chunks, disallowed_special=()), dtype=np.uint32)
    if kind == "batch":
        return tok.encode_ordinary_batch([text[i:i + 1000] for i in range(0, len(text), 1000)], num_threads=8)
    if kind == "train":
        return tokenforge.train_bpe(iter([text[i:i + 5000] for i in range(0, len(text), 5000)]), 2000,
                                    num_workers=2, verbose=False)
before = rss_mb()
best = float("inf")
for _ in range(3):
    t = time.perf_counter()
    result = run()
    best = min(best, time.perf_counter() - t)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
kind = op.split(":")[0]
if kind in ("encode_ordinary", "encode_as_text"):
    want = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if op.endswith(":surrogates") else text
    ok = tok.decode_bytes(result) == want.encode()
    if kind == "encode_as_text":
        ok = ok and 100257 not in set(result.tolist())
elif kind == "encode_allowed":
    ok = len(result) == len(text) // 13 and bool((result == 100257).all())
elif kind == "encode_allowed_none":
    ok = 100257 not in set(result.tolist()) and tok.decode_bytes(result.tolist()) == text.encode()
elif kind == "encode_disallowed":
    ok = result is not None and "disallowed special token" in result
elif kind == "iterable":
    ok = result.tolist() == tok.encode_ordinary(text)
elif kind == "batch":
    ok = [x for r in result for x in r] == [x for i in range(0, len(text), 1000) for x in tok.encode_ordinary(text[i:i + 1000])]
elif kind == "train":
    ok = result.n_vocab == 2000 and result.decode(result.encode(text[:100000])) == text[:100000]
print(json.dumps({"seconds": best, "extra_mb": max(0.0, peak - before), "input_mb": len(text.encode("utf-8", "surrogatepass")) / 2**20, "ok": bool(ok)}))
"""


def run_case(n: int, make: str, op: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(FUZZ), str(n), make, op], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def growth(quick: bool) -> list[dict]:
    rows = []
    for name, what, n, make, op in CASES:
        if quick:
            n //= 10
        small, big = run_case(n, make, op), run_case(4 * n, make, op)
        row = {"name": name, "what": what, "n": n, "small": small, "big": big}
        if "error" not in small and "error" not in big:
            row["time_ratio"] = big["seconds"] / max(small["seconds"], 1e-9)
            row["mem_ratio"] = (big["extra_mb"] + 1) / (small["extra_mb"] + 1)  # +1 MB: noise floor
        rows.append(row)
        print(f"growth: {name}: {row.get('time_ratio', 0):.2f}x time, {row.get('mem_ratio', 0):.2f}x memory", file=sys.stderr)
    return rows


# --------------------------------------------------------------------------------------------------
# fuzz


def fuzz(seconds: int) -> list[dict]:
    if importlib.util.find_spec("atheris") is None:
        return [{"target": "all", "skipped": "atheris is not installed (pip install atheris)"}]
    sys.path.insert(0, str(ROOT / "tests"))
    from test_hardening_fuzz import TARGETS, _seeds

    rows = []
    for target in TARGETS:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            _seeds(target, tmp / "corpus")
            (tmp / "artifacts").mkdir()
            cmd = [sys.executable, str(FUZZ / f"{target}.py"), f"-max_total_time={seconds}", "-timeout=20",
                   "-rss_limit_mb=3072", f"-artifact_prefix={tmp}/artifacts/", "-print_final_stats=1", str(tmp / "corpus")]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 600,
                                  env={**os.environ, "TMPDIR": str(tmp)})  # libFuzzer exits past atexit
            stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", proc.stderr))
            cov = re.findall(r"cov: (\d+)", proc.stderr)
            found = sorted(p.name for p in (tmp / "artifacts").iterdir())
            if found:
                keep = ROOT / "build" / "fuzz-artifacts" / target
                keep.mkdir(parents=True, exist_ok=True)
                for p in (tmp / "artifacts").iterdir():
                    shutil.copy(p, keep / p.name)
            rows.append({"target": target, "seconds": seconds, "runs": int(stats.get("number_of_executed_units", 0)),
                         "coverage": int(cov[-1]) if cov else 0, "exit": proc.returncode, "crashes": found})
            print(f"fuzz: {target}: {rows[-1]}", file=sys.stderr)
    return rows


# --------------------------------------------------------------------------------------------------
# leak

_LEAK_CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import _common, tokenforge
calls = int(sys.argv[2])
toks = [_common.cl100k(), _common.small_tokenizers()["regex"], _common.small_tokenizers()["nfkc"]]
text = "Hello world, don't 1234 — naïve 速い 😀 <|endoftext|> \ud800 end"
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
def step(i):
    tok = toks[i % 3]
    ids = tok.encode(text, allowed_special="all")
    tok.encode_batch([text, text[:20]], num_threads=2, allowed_special="all")
    tok.encode_to_numpy(text, allowed_special="all")
    tok.decode(ids); tok.decode_tokens_bytes(ids); tok.count_tokens(text)
    try:
        tok.decode(ids + [2**31])
    except tokenforge.UnknownTokenError:
        pass
    try:
        tok.encode(text)
    except ValueError:
        pass
marks = {}
for i in range(calls):
    step(i)
    if i + 1 in (calls // 10, calls):
        marks[i + 1] = rss_mb()
print(marks[calls // 10], marks[calls])
"""


def leak(calls: int, valgrind_calls: int) -> list[dict]:
    rows = []
    proc = subprocess.run([sys.executable, "-c", _LEAK_CHILD, str(FUZZ), str(calls)], capture_output=True, text=True, timeout=3600)
    if proc.returncode == 0:
        a, b = map(float, proc.stdout.split())
        rows.append({"check": f"RSS after {calls // 10:,} and {calls:,} rounds of 8 mixed calls (3 tokenizers)",
                     "result": f"{a:.1f} MB -> {b:.1f} MB ({b - a:+.1f} MB)", "ok": b - a < 5})
    else:
        rows.append({"check": "RSS over repeated calls", "result": proc.stderr[-300:], "ok": False})
    if shutil.which("valgrind"):
        # Run at two lengths: a leak per call grows with the rounds; what is lost once (the ints each
        # tokenizer caches, which ~IntCache does not release once the interpreter is finalizing)
        # does not.
        env = {**os.environ, "PYTHONMALLOC": "malloc"}
        lost = []
        t = time.perf_counter()
        for rounds in (valgrind_calls, 3 * valgrind_calls):
            cmd = ["valgrind", "--leak-check=full", "--show-leak-kinds=definite", "--num-callers=30",
                   sys.executable, "-c", _LEAK_CHILD, str(FUZZ), str(rounds)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=7200, env=env)
            lost.append((rounds, *_definitely_lost_in_core(proc.stderr), proc.returncode))
        (r1, ours1, total1, rc1), (r2, ours2, total2, rc2) = lost
        rows.append({"check": f"valgrind --leak-check=full, {r1:,} and {r2:,} rounds (PYTHONMALLOC=malloc)",
                     "result": f"definitely lost in stacks through tokenforge's extension: {ours1:,} and {ours2:,} bytes "
                               f"(whole process: {total1:,} and {total2:,}); growth with the rounds: {ours2 - ours1:+,} bytes "
                               f"({time.perf_counter() - t:.0f} s)", "ok": ours2 - ours1 < 8 * (r2 - r1) and rc1 == rc2 == 0})
        # (8 calls per round: a leak of one byte per call would show as 8 * (r2 - r1) bytes; the
        # same-size runs differ by a few blocks from run to run in what is still referenced at exit)
    else:
        rows.append({"check": "valgrind", "result": "skipped: valgrind is not installed", "ok": None})
    return rows


def _definitely_lost_in_core(report: str) -> tuple[int, int]:
    ours = 0
    for block in re.split(r"\n==\d+== \n", report):
        m = re.search(r"([\d,]+) bytes in [\d,]+ blocks are definitely lost", block)
        if m and re.search(r"tokenforge/_core|tokenforge::|PyEncoder|PyPieceCounter|PyBpeTrainer|IntCache", block):
            ours += int(m.group(1).replace(",", ""))
    total = re.search(r"definitely lost: ([\d,]+) bytes", report)
    return ours, int(total.group(1).replace(",", "")) if total else 0


# --------------------------------------------------------------------------------------------------
# asan: the extension itself under AddressSanitizer + UndefinedBehaviorSanitizer

_ASAN_WORKLOAD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import tokenforge, _common
assert "asan-site" in tokenforge.__file__, tokenforge.__file__
import fuzz_encode, fuzz_decode, fuzz_load, fuzz_model_file, random
rng = random.Random(0)
n = 0
for i in range(int(sys.argv[2])):
    data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    fuzz_encode.TestOneInput(data)
    fuzz_decode.TestOneInput(data)
    n += 2
for seed in _common.seed_inputs():
    fuzz_load.TestOneInput(seed)
    n += 1
import importlib, pathlib
for folder in sorted((pathlib.Path(sys.argv[1]).parent / "tests" / "regressions").iterdir()):  # inputs that once crashed
    if folder.is_dir():
        target = importlib.import_module(folder.name)
        for path in sorted(folder.iterdir()):
            target.TestOneInput(path.read_bytes())
            n += 1
for model in fuzz_model_file.seed_models():  # .model files with bytes changed: the native unigram / byte tables
    for i in range(int(sys.argv[2])):
        data = bytearray(model)
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        fuzz_model_file.TestOneInput(bytes(data))
        n += 1
tok = _common.cl100k()
# JSON lines read natively (cpp/jsonl.cc writes the unescaped text through a pointer into room it
# sized first): lines built from the pieces that move the parser, cut anywhere, one at a time
# and as blocks encoded by the dataset path
pieces = [b'{"text": "', b'"', b'\\', b'\\u', b'\\ud83d\\ude00', b'\\ud800', b'\\u00e9', b'\\n', b"0f3A", b"\xe4\xb8\xad",
          b"\xf0\x9f\x98", b"\xff", b"\x01", b"plain ascii text 0123456789", b"}", b", ", b'"a": [1, {"b": null}]', b" "]
for i in range(int(sys.argv[2])):
    line = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 40)))
    if rng.random() < 0.5:
        line = b'{"text": "' + line
    for cut in (len(line), rng.randrange(len(line) + 1)):
        tokenforge._core.read_jsonl_record(line[:cut], b"text")
        block = b"\n".join([line[:cut]] * 3)
        tokenforge._core.encode_jsonl_lines(tok._core, block, 0, len(block), b"text", 100257)
        n += 2
for text in ["a" * 300_000, " " * 300_000, "<|endoftext|>" * 20_000, "e" + "\u0301" * 100_000, _common.TRAIN_TEXT * 200]:
    assert tok.decode(tok.encode(text, allowed_special="all")) == text
    tok.encode_batch([text] * 4, num_threads=4, allowed_special="all")
    n += 2
tokenforge.train_bpe(iter([_common.TRAIN_TEXT] * 50), 600, num_workers=2, verbose=False)
print(n)
"""


def asan(rounds: int) -> list[dict]:
    lib = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not lib or not os.path.exists(lib):
        return [{"check": "extension under ASan", "result": "skipped: gcc's libasan.so not found", "ok": None}]
    site = pathlib.Path(tempfile.mkdtemp(prefix="tokenforge-asan-site-"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "--target", str(site / "asan-site"),
         "-C", f"build-dir={ROOT}/build/reliability-asan", "-C", "cmake.define.TOKENFORGE_SANITIZE=ON",
         "-C", "cmake.build-type=Debug", str(ROOT)], capture_output=True, text=True, timeout=1800)
    if build.returncode != 0:
        return [{"check": "extension under ASan", "result": "skipped: the sanitizer build failed: " + build.stderr[-300:], "ok": None}]
    # libstdc++ preloaded with libasan: otherwise ASan's __cxa_throw interceptor finds no real
    # function (libstdc++ comes later, with the extension) and aborts at the first C++ exception.
    cxx = subprocess.run(["gcc", "-print-file-name=libstdc++.so"], capture_output=True, text=True).stdout.strip()
    env = {**os.environ, "LD_PRELOAD": f"{lib} {cxx}", "PYTHONPATH": str(site / "asan-site"),
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _ASAN_WORKLOAD, str(FUZZ), str(rounds)], capture_output=True, text=True,
                          env=env, timeout=7200)
    shutil.rmtree(site, ignore_errors=True)
    reports = proc.stderr.count("ERROR: AddressSanitizer") + proc.stderr.count("runtime error:")
    ok = proc.returncode == 0 and reports == 0
    calls = proc.stdout.strip() or "?"
    return [{"check": "the Python extension built with -fsanitize=address,undefined, libasan preloaded (leak detection off)",
             "result": (f"{calls} fuzz-style calls, every seed file loaded, long pieces, batch threads, training: "
                        f"{reports} sanitizer reports, exit {proc.returncode} ({time.perf_counter() - t:.0f} s)")
             + ("" if ok else "\n" + proc.stderr[-1500:]), "ok": ok}]


# --------------------------------------------------------------------------------------------------
# the report


def _mark(ok) -> str:
    return "ok" if ok else "skipped" if ok is None else "**FAIL**"


def _verdict(row) -> str:
    if "time_ratio" not in row:
        return "**FAIL**: " + (row["small"].get("error") or row["big"].get("error", ""))[:120]
    ok = row["small"]["ok"] and row["big"]["ok"]
    return "ok" if ok else "**FAIL** (wrong result)"


RUN_DATE = None  # when the results were measured (set when rendering saved results)
UPDATED = None  # with --update: (the sections run now, the date of the run the others come from)


def report(sections: dict, args, started: float) -> str:
    out = [
        "# tokenforge reliability",
        "",
        f"Generated by `python tools/reliability.py{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}` on "
        f"{RUN_DATE or datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; {time.perf_counter() - started:.0f} s in all. Do not edit by hand: run the "
        "script (it overwrites this file). The unit tests (tests/test_hardening*.py) check the same properties at "
        "smaller sizes, without timing.",
        "",
    ]
    if UPDATED:
        kept = "; ".join(f"{name} from {date[:16].replace('T', ' ')} UTC" for name, date in sorted(UPDATED[1].items()))
        out[-1:] = [f"Sections run now: {', '.join(sorted(UPDATED[0]))}; kept from earlier runs (`--update`): {kept}.", ""]
    if "growth" in sections:
        out += [
            "## Adversarial input: time and memory at n and 4n",
            "",
            "Each size runs in a fresh process: time is the best of 3, memory the peak RSS of the process minus its "
            "RSS just before encoding (the text itself excluded). Growth is the 4n figure over the n figure: linear "
            "is about 4, n log n a little more. The machine is shared (other jobs running), so single timings vary; "
            "the memory ratio adds 1 MB to both sides as a noise floor. Two known reasons for ratios above 4: one "
            "huge piece (the repeated-character rows) is merged with a heap over the piece, O(n log n), and its "
            "arrays (about 20 bytes per byte of the piece) leave the CPU caches at these sizes; and a scan that "
            "takes under a millisecond at n (the disallowed-token row) runs from cache at n and from memory at 4n. "
            "The train_bpe row trains on random words, so the number of distinct pieces (what the merge loop "
            "works on) grows with n too, and its timing varies most between runs. "
            "No row checks a time limit: a wrong result is what fails.",
            "",
            "| input | what is checked | n | time at n | time at 4n | growth | extra memory at n | at 4n | growth | result |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sections["growth"]:
            s, b = r["small"], r["big"]
            if "time_ratio" in r:
                out.append(f"| {r['name']} | {r['what']} | {r['n']:,} chars ({s['input_mb']:.1f} MB) | {s['seconds']:.3f} s | "
                           f"{b['seconds']:.3f} s | {r['time_ratio']:.1f}x | {s['extra_mb']:.0f} MB | {b['extra_mb']:.0f} MB | "
                           f"{r['mem_ratio']:.1f}x | {_verdict(r)} |")
            else:
                out.append(f"| {r['name']} | {r['what']} | {r['n']:,} | | | | | | | {_verdict(r)} |")
        out.append("")
    if "fuzz" in sections:
        out += ["## Coverage-guided fuzzing (atheris, libFuzzer)", "",
                "Targets in `fuzz/`; coverage is of tokenforge's Python code (atheris instruments Python bytecode; the "
                "C++ core is exercised but not instrumented for coverage: it runs under ASan below and in the C++ "
                "tests). Seeds: every kind of small tokenizer saved in every format; saved crashes in "
                "`tests/regressions/` replay in `tests/test_hardening_fuzz.py`.", "",
                "| target | time | executions | coverage (edges) | crashes / hangs |", "|---|---|---|---|---|"]
        for r in sections["fuzz"]:
            if "skipped" in r:
                out.append(f"| {r['target']} | | | | skipped: {r['skipped']} |")
            else:
                crashes = "none" if not r["crashes"] and r["exit"] == 0 else f"**{', '.join(r['crashes']) or 'exit ' + str(r['exit'])}**"
                out.append(f"| `{r['target']}` | {r['seconds']} s | {r['runs']:,} | {r['coverage']} | {crashes} |")
        out.append("")
    if "attacks" in sections:
        out += ["## Hostile files and unlucky inputs, beside the peers", "",
                "Each case runs in a fresh process (60 s limit, 4 GB address space) against tokenforge and against the "
                "library that reads the same file; the cell says what happened: a clear error, the result, a crash "
                "(signal), a hang (killed at the limit). tests/test_hardening_files.py checks each tokenforge row.", "",
                "| attack | input | tokenforge | peer |", "|---|---|---|---|"]
        for r in sections["attacks"]:
            peers = "<br>".join(f"{p}: {v}" for p, v in r["peers"].items()) or "(no peer reads this)"
            out.append(f"| {r['attack']} | {r['what']} | {r['tokenforge']} | {peers} |".replace("\n", " "))
        out.append("")
    for key, title in (("leak", "Leaks over repeated calls"), ("asan", "Native memory safety of the extension")):
        if key in sections:
            out += [f"## {title}", "", "| check | result | verdict |", "|---|---|---|"]
            for r in sections[key]:
                out.append(f"| {r['check']} | {r['result'].splitlines()[0] if r['result'] else ''} | {_mark(r['ok'])} |")
            out.append("")
    out += ["## Not covered here", "",
            textwrap.fill("The C++ core's own tests (cpp/tests) run under ASan + UBSan in .ci/run, and so does the "
                          "sanitizer workload above at its quick size (`--only asan --quick`). Wall-clock limits "
                          "are not asserted anywhere; the growth table is the measurement. Fuzzing of the C++ core "
                          "directly with libFuzzer (without Python) is not set up.", 100), ""]
    return "\n".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="sizes / 10, 15 s of fuzzing per target, fewer calls")
    p.add_argument("--only", default="growth,fuzz,leak,asan,attacks", help="comma-separated: growth, fuzz, leak, asan, attacks")
    p.add_argument("--fuzz-seconds", type=int, default=None)
    p.add_argument("--output", default=str(ROOT / "docs" / "reliability.md"))
    p.add_argument("--update", action="store_true", help="keep the sections not in --only from the previous "
                   "run's raw results (the .json beside --output), e.g. after adding a fuzz target")
    p.add_argument("--render", metavar="JSON", help="only rewrite the markdown from the raw results a run saved "
                   "beside it (docs/reliability.json), e.g. after changing the report's wording")
    args = p.parse_args(argv)
    only = set(args.only.split(","))
    started = time.perf_counter()
    sections = {}
    if args.render:
        only = set()
    if "growth" in only:
        sections["growth"] = growth(args.quick)
    if "fuzz" in only:
        sections["fuzz"] = fuzz(args.fuzz_seconds or (15 if args.quick else 60))
    if "leak" in only:
        sections["leak"] = leak(20_000 if args.quick else 200_000, 50 if args.quick else 300)
    if "asan" in only:
        sections["asan"] = asan(200 if args.quick else 2_000)
    if "attacks" in only:
        import attacks

        sections["attacks"] = attacks.run(str(ROOT.parent / "shared"))
    if args.render:
        saved = json.loads(pathlib.Path(args.render).read_text(encoding="utf-8"))
        sections, started = saved["sections"], time.perf_counter() - saved["seconds"]
        global RUN_DATE
        RUN_DATE = datetime.datetime.fromisoformat(saved["date"])
        sys.argv = [sys.argv[0], *saved["argv"]]
    else:
        raw = pathlib.Path(args.output).with_suffix(".json")
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        dates = {name: now for name in sections}
        if args.update and raw.exists():
            global UPDATED
            saved = json.loads(raw.read_text(encoding="utf-8"))
            kept = {name: saved.get("dates", {}).get(name, saved["date"]) for name in saved["sections"] if name not in sections}
            UPDATED = (set(sections), kept)
            sections, dates = {**saved["sections"], **sections}, {**kept, **dates}
        raw.write_text(json.dumps({"sections": sections, "seconds": time.perf_counter() - started, "argv": sys.argv[1:],
                                   "date": now, "dates": dates}, indent=1), encoding="utf-8")
    text = report(sections, args, started)
    pathlib.Path(args.output).write_text(text, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    failed = text.count("**FAIL")
    if failed:
        print(text, file=sys.stderr)
        for rows in sections.values():  # the full details of failed rows (the table keeps one line)
            for row in rows:
                if isinstance(row, dict) and row.get("ok") is False:
                    print(row.get("result", ""), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
