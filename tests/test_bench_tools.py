"""The benchmark scripts that read each other's output agree on its format (they are not run here), and
the corpus tool picks the lines it says."""

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


def test_make_real_corpus_cjk_keeps_each_languages_lines(tmp_path):
    """--cjk: the Chinese pages' lines with a Han character and no kana, the Japanese pages' lines
    with kana; groff requests go as in the other corpora, and other lines are left out."""
    import gzip

    spec = importlib.util.spec_from_file_location("make_real_corpus", BENCH.parent / "tools" / "make_real_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    page = ".TH LS 1\n.SH 名称\nls - 列出目录内容\nusage: ls [OPTION]\nこれはテストです\n漢字だけ\n"
    for lang in ("zh_CN", "ja"):
        (tmp_path / lang / "man1").mkdir(parents=True)
        (tmp_path / lang / "man1" / "ls.1.gz").write_bytes(gzip.compress(page.encode()))
    chinese = corpus.cjk_lines(["zh_CN", "zh_TW"], corpus.chinese_line, 10**6, root=tmp_path)
    japanese = corpus.cjk_lines(["ja"], corpus.japanese_line, 10**6, root=tmp_path)
    assert chinese == "名称\nls - 列出目录内容\n"  # (漢字だけ has kana: Japanese)
    assert japanese == "これはテストです\n漢字だけ\n"
