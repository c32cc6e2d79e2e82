"""The benchmark scripts that read each other's output agree on its format (they are not run here)."""

import importlib.util
import pathlib

BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


def load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_paired_reads_ab_builds_result_line():
    ab_builds, paired = load("ab_builds"), load("bench_paired")
    # tokenforge (a) takes 1 s, 2 s, 4 s on three slices; the peer (b) 2 s, 2 s, 2 s.
    line = ab_builds.summary("cl100k_base english numpy", 1_000_000, 6.0, [[1.0, 2.0, 4.0], [2.0, 2.0, 2.0]])
    found = paired.RESULT.search(line)
    assert found, line
    assert paired.row("cl100k english numpy", "gigatoken", found) == (
        "| cl100k english numpy | 0.9 | gigatoken | 1.0 | x1.00 (0.50-2.00) |")
