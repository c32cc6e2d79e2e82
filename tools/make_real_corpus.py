#!/usr/bin/env python3
"""Benchmark corpora from real documents on this machine (nothing is downloaded or committed).

    python tools/make_real_corpus.py OUT_DIR [--mb 8] [--install]
    python tools/make_real_corpus.py OUT_DIR --dataset [--mb 200]

Writes three UTF-8 files of up to --mb MB each:
  english.txt       English prose: ../shared/corpora, then /usr/share/doc (README, copyright,
                    changelog texts; .gz read as is) and /usr/share/common-licenses
  multilingual.txt  Debian's localized manual pages (/usr/share/man/<lang>/, German, French,
                    Japanese, Chinese, Russian, Korean, Polish, ...) with groff requests and font
                    escapes removed, the languages interleaved page by page
  code.txt          Python's standard library sources
With --dataset, writes instead one JSON-lines file `dataset-<MB>.jsonl` of up to --mb MB for the
dataset benchmark: one record {"text": ..., "source": path} per real document, never repeated
(documents with the same text are kept once): every text file under /usr/share/doc and the common
licenses, every manual page of /usr/share/man (English and the localized ones), the Python sources
and the Markdown / reST / text documentation of the standard library and of site-packages; the four
kinds interleaved document by document, so that any part of the file is a mix of prose, manual
pages in many languages, and code.
With --cjk, writes instead chinese.txt and japanese.txt: the lines of Debian's Chinese manual pages
(/usr/share/man/zh_CN, zh_TW; manpages-zh) with a Han character and no kana, and the lines of the
Japanese ones (/usr/share/man/ja; manpages-ja) with kana, for the peer comparisons on those scripts
(benchmarks/ab_builds.py --corpus; the multilingual corpus holds little of them).
With --install, first installs manpages-de manpages-ja manpages-zh manpages-ru manpages-fr with
apt-get when they are missing (needs root and Debian's archive). The order of files is sorted, so
the output is the same on every run on the same machine.
"""

import argparse
import gzip
import itertools
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"
LANGUAGES = ["de", "ja", "zh_CN", "ru", "fr", "ko", "pl", "zh_TW", "es", "it", "pt_BR", "cs", "tr", "uk", "hu", "nl"]
_GROFF_ESCAPE = re.compile(r"\\f[BIRP]|\\f\[[A-Z]*\]|\\\(.{2}|\\\[[a-z]+\]|\\[&|^%e-]|\\s[-+]?\d")


def read_text(path: pathlib.Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except OSError:
            return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def take(texts, limit: int) -> str:
    out, size = [], 0
    for t in texts:
        if not t.strip():
            continue
        out.append(t if t.endswith("\n") else t + "\n")
        size += len(out[-1].encode("utf-8"))
        if size >= limit:
            break
    return "".join(out)


def english(limit: int) -> str:
    def texts():
        for p in sorted((SHARED / "corpora").glob("*.txt")):
            yield read_text(p)
        for p in sorted(pathlib.Path("/usr/share/common-licenses").glob("*")):
            if p.is_file():
                yield read_text(p)
        for p in sorted(pathlib.Path("/usr/share/doc").rglob("*")):
            name = p.name.lower()
            if p.is_file() and (name.startswith(("readme", "copyright", "news", "changelog")) or name.endswith(".txt")):
                yield read_text(p)
    return take(texts(), limit)


def man_text(raw: str) -> str:
    lines = []
    for line in raw.splitlines():
        if line.startswith((".", "'")):
            rest = line.split(None, 1)
            if len(rest) == 2 and rest[0] in (".SH", ".SS", ".B", ".I", ".BR", ".IR", ".IP", ".TP", ".BI", ".RB", ".RI"):
                lines.append(_GROFF_ESCAPE.sub("", rest[1]).replace('"', ""))
            continue
        lines.append(_GROFF_ESCAPE.sub("", line).replace("\\-", "-").replace("\\ ", " "))
    return "\n".join(lines)


MAN = pathlib.Path("/usr/share/man")


def man_pages(lang: str, root: pathlib.Path = MAN) -> list[pathlib.Path]:
    """The compressed manual pages of one language, sorted (none when it is not installed)."""
    return sorted((root / lang).rglob("*.gz")) if (root / lang).is_dir() else []


def multilingual(limit: int) -> str:
    per_language = []
    for lang in LANGUAGES:
        per_language.append(man_text(read_text(p)) for p in man_pages(lang))
    interleaved = (t for group in itertools.zip_longest(*per_language) for t in group if t)
    return take(interleaved, limit)


def code(limit: int) -> str:
    stdlib = pathlib.Path(sysconfig.get_paths()["stdlib"])
    return take((read_text(p) for p in sorted(stdlib.rglob("*.py")) if "test" not in p.parts), limit)


_NOT_PROSE = (".html", ".png", ".svg", ".css", ".js", ".pdf", ".ps", ".ps.gz", ".eps", ".tar", ".tar.gz", ".tgz",
              ".json", ".json.gz")


def _looks_binary(text: str) -> bool:
    """Archives and dumps that happen to be valid UTF-8: NUL bytes or many control characters."""
    controls = sum(text.count(c) for c in "\x00\x01\x02\x03\x04\x05\x06\x07\x0e\x0f\x10\x1b")
    return controls > len(text) // 1000


def _files(root: pathlib.Path, suffixes: tuple[str, ...]):
    if not root.is_dir():
        return
    for p in sorted(root.rglob("*")):
        if p.suffix in suffixes and p.is_file() and not p.is_symlink():
            yield p


def dataset_documents():
    """(source path, text) of the real documents named in the module docstring, interleaved by kind."""
    doc_root, man_root = pathlib.Path("/usr/share/doc"), MAN
    python_roots = sorted({pathlib.Path(sysconfig.get_paths()[k]) for k in ("stdlib", "purelib", "platlib")})
    python_roots = [r for r in python_roots if not any(r != o and o in r.parents for o in python_roots)]

    def prose():
        for p in sorted(pathlib.Path("/usr/share/common-licenses").glob("*")):
            if p.is_file():
                yield p, read_text(p)
        for p in sorted(doc_root.rglob("*")):
            if p.is_file() and not p.name.endswith(_NOT_PROSE):
                yield p, read_text(p)

    def manuals():
        for p in sorted(man_root.rglob("*.gz")):
            yield p, man_text(read_text(p))

    def code():
        for root in python_roots:
            for p in _files(root, (".py",)):
                yield p, read_text(p)

    def python_docs():
        for root in python_roots:
            for p in _files(root, (".md", ".rst", ".txt")):
                yield p, read_text(p)

    kinds = [prose(), manuals(), code(), python_docs()]
    for group in itertools.zip_longest(*kinds):
        for item in group:
            if item is not None:
                yield item


def write_dataset(path: pathlib.Path, limit: int) -> tuple[int, int]:
    """Writes up to `limit` bytes of JSON lines from dataset_documents(); (documents, bytes of text)."""
    import hashlib
    import json

    seen: set[bytes] = set()
    documents = size = 0
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:
        for source, text in dataset_documents():
            # gigatoken's readers encode "<|endoftext|>" found in a document as the special token
            text = text.replace("<|endoftext|>", "<|end of text|>")
            if not text.strip() or _looks_binary(text):
                continue
            digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()
            if digest in seen:
                continue
            seen.add(digest)
            line = json.dumps({"text": text, "source": str(source)}, ensure_ascii=False) + "\n"
            f.write(line)
            documents += 1
            size += len(line.encode("utf-8"))
            if size >= limit:
                break
    tmp.replace(path)
    return documents, size


def _has(line: str, ranges) -> bool:
    return any(lo <= ord(ch) < hi for ch in line for lo, hi in ranges)


_HAN = ((0x3400, 0x4DC0), (0x4E00, 0xA000))
_KANA = ((0x3040, 0x3100),)


def chinese_line(line: str) -> bool:
    return _has(line, _HAN) and not _has(line, _KANA)


def japanese_line(line: str) -> bool:
    return _has(line, _KANA)


def cjk_lines(languages, keep, limit: int, root: pathlib.Path = MAN) -> str:
    """The lines of the manual pages of `languages` for which keep(line) holds, up to limit bytes."""
    pages = (p for lang in languages for p in man_pages(lang, root))
    return take(("".join(line + "\n" for line in man_text(read_text(p)).splitlines() if keep(line))
                 for p in pages), limit)


def install_manpages() -> None:
    wanted = ["manpages-de", "manpages-ja", "manpages-zh", "manpages-ru", "manpages-fr"]
    missing = [w for w in wanted if subprocess.run(["dpkg", "-s", w], capture_output=True).returncode != 0]
    if missing and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=False, stdout=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=pathlib.Path)
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--install", action="store_true")
    ap.add_argument("--dataset", action="store_true", help="one JSON-lines file of real documents (see above)")
    ap.add_argument("--cjk", action="store_true", help="chinese.txt and japanese.txt instead (see above)")
    args = ap.parse_args()
    if args.install:
        install_manpages()
    limit = int(args.mb * 1e6)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.dataset:
        path = args.out_dir / f"dataset-{args.mb:g}.jsonl"
        documents, size = write_dataset(path, limit)
        print(f"{path}: {documents} documents, {size / 1e6:.1f} MB", file=sys.stderr)
        return
    makers = (("english", english), ("multilingual", multilingual), ("code", code))
    if args.cjk:
        makers = (("chinese", lambda n: cjk_lines(["zh_CN", "zh_TW"], chinese_line, n)),
                  ("japanese", lambda n: cjk_lines(["ja"], japanese_line, n)))
    for name, make in makers:
        text = make(limit)
        (args.out_dir / f"{name}.txt").write_text(text, encoding="utf-8")
        print(f"{name}: {len(text.encode('utf-8')) / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
