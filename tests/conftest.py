"""Test set-up: the real vocabularies from ../shared/vocab, loaded offline by tiktoken and tokenforge.

The environment is set at import time, before tiktoken or tokenforge read it. Nothing here touches
the network: TOKENFORGE_OFFLINE makes a missing file an error instead of a download.
"""

import os
import pathlib
import runpy
import shutil
import sys
import sysconfig
import tempfile

import pytest
from hypothesis import settings

# The property tests run derandomized by default (the same examples every run, so CI does not
# depend on luck); TOKENFORGE_HYPOTHESIS=explore draws new examples each run, as developers should
# now and then. A failure found either way becomes an explicit regression test beside the property.
settings.register_profile("fixed", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("TOKENFORGE_HYPOTHESIS", "fixed"))

SHARED = pathlib.Path(__file__).resolve().parents[1].parent / "shared"
if not (SHARED / "vocab").is_dir():
    raise RuntimeError(f"the tests need the shared data folder at {SHARED} (see README)")

_CACHE = pathlib.Path(tempfile.mkdtemp(prefix="tokenforge-test-cache-"))  # removed by pytest_unconfigure
runpy.run_path(str(SHARED / "tools" / "tiktoken_cache.py"), run_name="not_main")["main"](_CACHE / "tiktoken")
os.environ["TIKTOKEN_CACHE_DIR"] = str(_CACHE / "tiktoken")
os.environ["TOKENFORGE_CACHE_DIR"] = str(_CACHE / "tokenforge")
os.environ["TOKENFORGE_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"  # transformers, in the format tests, must not reach the hub

ENCODINGS = ["gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base"]

MULTILINGUAL = (
    "Der schnelle braune Fuchs springt über den faulen Hund. Größe, Maß, Straße — ÄÖÜ äöü ß.\n"
    "速い茶色の狐がのろまな犬を飛び越える。東京は日本の首都です。カタカナとひらがな。\n"
    "敏捷的棕色狐狸跳过了懒狗。中华人民共和国成立于1949年。\n"
    "Быстрая коричневая лиса прыгает через ленивую собаку. Москва — столица России.\n"
    "Ελληνικά: Η γρήγορη καφέ αλεπού. עברית: השועל החום המהיר. العربية: الثعلب البني السريع.\n"
    "हिन्दी: तेज़ भूरी लोमड़ी। 한국어: 빠른 갈색 여우가 게으른 개를 뛰어넘는다. ไทย: สุนัขจิ้งจอกสีน้ำตาล\n"
    "Emoji: 😀😃😄 👩‍👩‍👧‍👦 🇩🇪🇯🇵 ❤️‍🔥 👍🏽 — café naïve coöperate e\u0301 a\u0308\u0301 Å Å\n"
    "Whitespace:   \t\t  \n\n\n   \r\n\r\n \u00a0\u00a0 \u3000\u2003 x  \n  y\t\n\t z   \n"
    "Digits: 1234567890 ١٢٣٤٥ ０１２３ 3.14159 1,000,000 ²³ ½ Ⅻ 0x1F\n"
    "Contractions: don't DON'T we've WE'VE they'll I'm she'd it's 'S 'ſ 'll 'LL 'Re rock'n'roll\n"
    "Code: def f(x):\n    return x**2  # comment\n\tif (a && b) { c->d[0] = \"str\\n\"; }\n// path/to/file.py\n"
)


def _stdlib_text(limit: int) -> str:
    parts, size = [], 0
    for path in sorted(pathlib.Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        t = path.read_text(encoding="utf-8", errors="replace")
        parts.append(t)
        size += len(t)
        if size >= limit:
            break
    return "".join(parts)


@pytest.fixture(scope="session")
def corpus_texts() -> dict[str, str]:
    """Real text of each kind: prose, code, multilingual, the shared corpora."""
    return {
        "shakespeare": (SHARED / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8"),
        "taylorswift": (SHARED / "corpora" / "taylorswift.txt").read_text(encoding="utf-8"),
        "tinystories": (SHARED / "corpora" / "tinystories_sample.txt").read_text(encoding="utf-8"),
        "stdlib": _stdlib_text(1_500_000),
        "multilingual": MULTILINGUAL * 3,
    }


@pytest.fixture(scope="session", autouse=True)
def _batches_on_the_threads_they_ask_for():
    """Batches start a second thread only for 16,384 characters of text, and one more for each
    16,384 after; the tests' batches are small, so here they run on as many threads as they ask
    for, keeping the threaded paths under test (the limit itself is tested in subprocesses:
    test_engine_hardening.py)."""
    from tokenforge import _core

    previous = _core._set_characters_per_thread(1)
    yield
    _core._set_characters_per_thread(previous)


@pytest.fixture(scope="session")
def tiktoken_module():
    return pytest.importorskip("tiktoken")


@pytest.fixture(scope="session")
def shared_dir() -> pathlib.Path:
    return SHARED


sys.dont_write_bytecode = True


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)
