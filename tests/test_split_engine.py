"""The native split-pattern engine (cpp/split_regex.h) against the `regex` module and tiktoken.

Every pattern runs four ways: "auto" (a named pattern's scanner when the pattern means the same),
"dfa" (the lazy DFA), "vm" (the Pike VM alone; both fall back to the backward program past their
work budget) and "backward" (the backward dynamic program for the whole text); all must give
`regex.finditer`'s spans.
"""

import functools

import pytest
import regex
import tiktoken
import unicodedata2
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import _core, patterns

ENGINES = ["auto", "dfa", "vm", "backward"]

SINGLE = {name: p for name, p in patterns.NAMED.items() if name != "kimi_k2"}
PARTS = {f"{name}[{i}]": p for name, seq in patterns.SEQUENCES.items() for i, p in enumerate(seq)}
ALL_NATIVE = {**SINGLE, **PARTS}


@functools.lru_cache(maxsize=None)
def _agreeing_code_points() -> list[int]:
    """Code points whose general category and White_Space are the same in `regex` (its own, newer
    Unicode tables) and in Unicode 16 (the engine's tables): only there can the two agree."""
    chars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    ok = set(map(ord, chars))
    for cat in ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
                "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn"]:
        in_regex = set(map(ord, regex.findall(r"\p{" + cat + "}", chars)))
        in_16 = {c for c in ok if unicodedata2.category(chr(c)) == cat}
        ok -= in_regex ^ in_16
    return sorted(ok)


# Text drawn from characters that matter to the patterns (letters of every case, marks, digits,
# CJK, spaces of every kind, CR/LF, apostrophes, punctuation), plus any agreeing code point.
_INTERESTING = list("aAbBsStTlLvVeEdDmMrRkKiI'’ \t\n\r\x0b\x0c/.,!?-_#$%&()[]{}*+<=>@\\^`|~\"019") + [
    "\u00a0", "\u3000", "\u2003", "\u0085", "\u2028", "\u1680", "\u017f", "\u212a", "\u0130", "\u0131",
    "é", "É", "ǅ", "ʰ", "中", "文", "あ", "カ", "ー", "\u0301", "\u0308", "\u0903", "\u20dd", "٣", "²", "Ⅻ",
    "½", "😀", "€", "©", "\u200d", "\ufe0f", "\x00", "\x1c", "\x1f", "\U0001f1e9",
]


def _text_strategy():
    # The code points are found here, once, not inside a draw: the search takes seconds, and what
    # else runs meanwhile (a finalizer of an earlier test's object) must not look like the strategy
    # using the random module (Hypothesis warned about exactly that in full runs).
    cps = _agreeing_code_points()

    def any_agreeing(i):
        return chr(cps[i % len(cps)])

    char = st.one_of(st.sampled_from(_INTERESTING), st.integers(0, 10**7).map(any_agreeing))
    return st.lists(char, max_size=60).map("".join)


def _spans(pattern: str, text: str):
    return [m.span() for m in regex.finditer(pattern, text)]


# ----------------------------------------------------------------------------------------------
# Every pattern of the model families

@pytest.mark.parametrize("name", sorted(ALL_NATIVE))
def test_model_patterns_compile_natively(name):
    p = _core.Pattern(ALL_NATIVE[name])
    expected = {"gpt2": "gpt2", "r50k": "gpt2", "p50k": "gpt2", "gpt_neox": "gpt2", "olmo": "gpt2", "phi2": "gpt2",
                "cl100k": "cl100k", "gpt4": "cl100k", "o200k": "o200k"}.get(name)
    assert p.scanner == expected


@pytest.mark.parametrize("name", sorted(ALL_NATIVE))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_text_strategy())
def test_model_patterns_equal_regex(name, text):
    pattern = ALL_NATIVE[name]
    expected = _spans(pattern, text)
    for engine in ENGINES:
        assert _core.Pattern(pattern, engine).spans(text) == expected, engine


@pytest.mark.parametrize("name", sorted(ALL_NATIVE))
def test_model_patterns_on_real_text(name, corpus_texts):
    pattern = ALL_NATIVE[name]
    text = "".join(t[:30000] for t in corpus_texts.values())
    expected = _spans(pattern, text)
    for engine in ENGINES:
        p = _core.Pattern(pattern, engine)
        assert p.spans(text) == expected, engine
        assert p.split(text[:5000]) == [m.group() for m in regex.finditer(pattern, text[:5000])]


# ----------------------------------------------------------------------------------------------
# Arbitrary patterns of the subset

_ATOMS = ["a", "b", " ", r"\n", "'", r"\s", r"\S", r"\d", r"\p{L}", r"\p{Lu}", r"\p{Ll}", r"\p{N}", r"\P{L}", ".",
          r"[ab]", r"[^a\s]", r"[^\r\n\p{L}\p{N}]", r"[\p{L}\p{M}]", r"[a-c\d]", r"[^\S\n]", r"\x41", r"[\u4e00-\u9fa5]",
          "(?i:a)", "(?i:s)", "(?i:[a-k])"]
_QUANTS = ["", "", "*", "+", "?", "*?", "+?", "??", "*+", "++", "?+", "{2}", "{1,3}", "{0,2}", "{2,}", "{1,3}+",
           "{,2}", "{1,2}?"]


@st.composite
def _patterns(draw, depth=0):
    alts = []
    for _ in range(draw(st.integers(1, 3))):
        items = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.integers(0, 9))
            if kind == 0 and depth < 2:
                items.append("(?:" + draw(_patterns(depth=depth + 1)) + ")" + draw(st.sampled_from(["", "?", "+", "*"])))
            elif kind == 1:
                items.append(draw(st.sampled_from([r"(?!\S)", r"(?=\s)", r"(?![a-b])", "$", "^", r"\Z", r"\z", r"\A"])))
            else:
                items.append(draw(st.sampled_from(_ATOMS)) + draw(st.sampled_from(_QUANTS)))
        alts.append("".join(items))
    return "|".join(alts)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(pattern=_patterns(), text=st.lists(st.sampled_from(list("aabbAB  \n\t'sS1中é\u0301K\u212a.")), max_size=14).map("".join))
def test_arbitrary_patterns_equal_regex(pattern, text):
    try:
        regex.compile(pattern)
    except regex.error:
        assume(False)
    try:
        compiled = {e: _core.Pattern(pattern, e) for e in ENGINES}
    except _core.UnsupportedPattern:
        # Refused only for the documented reasons (empty matches, nullable loops, possessive groups).
        assume(False)
        return
    expected = _spans(pattern, text)
    for engine, p in compiled.items():
        assert p.spans(text) == expected, (engine, pattern, text)


@pytest.mark.parametrize("pattern", [
    r"(?!\S)^[^\r\n\p{L}\p{N}]|(?:(?!\S))(?!\S)(?:a)",  # found by the test above in CI
    r"(?!\S)^ ", r"(?=\s)^ |a", r"(?![a-b])^ ",
])
@pytest.mark.parametrize("text", [" ", "a ", "  ", "b", ""])
def test_lookahead_before_start_anchor(pattern, text):
    # A lookahead is decided when the first character is read; the `^` behind it must still know
    # that the search started at position 0 (the lazy DFA once shared that state with others).
    for engine in ENGINES:
        assert _core.Pattern(pattern, engine).spans(text) == _spans(pattern, text), engine


def test_case_insensitive_letters_match_what_regex_matches():
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    # Every character that any ASCII letter matches case-insensitively, and some that none do.
    candidates = "".join(sorted(set(regex.findall(r"(?i)[a-z]", everything)))) + everything[:0x3000:7]
    assert _core.Pattern("(?i)[a-z]", "vm").spans(everything) == _spans("(?i)[a-z]", everything)
    everything = candidates
    for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        for pattern in (f"(?i:{letter})", f"(?i)[{letter}]", f"(?i:[^{letter}])"):
            assert _core.Pattern(pattern, "vm").spans(everything) == _spans(pattern, everything), pattern


@pytest.mark.parametrize("pattern", [
    r"\w+", r"\bfoo", r"(?<=a)b", r"(?<!a)b", r"(a)\1", r"(?>ab|a)c", r"(?:ab)++", r"a*", r"(?:a?)*b", r"$",
    r"\p{Han}+", r"(?s:.)", r"(?x) a", r"a(?i)b", r"(?i:é)", r"(?i)\p{Lu}", r"[[:alpha:]]", r"[a&&b]",
    patterns.NAMED["kimi_k2"], r"a{1001}", r"(", r"a{2,1}", "\\",
])
def test_outside_the_subset_is_refused(pattern):
    with pytest.raises(_core.UnsupportedPattern):
        _core.Pattern(pattern)
    assert issubclass(_core.UnsupportedPattern, ValueError)


def test_refused_patterns_fall_back_to_regex_with_the_same_ids():
    enc = tiktoken.get_encoding("cl100k_base")
    text = "Hello world, 中文字 and ｋｉｍｉ's test 123 \n\n x  "
    for pattern in [r"\w+|\W", r"(?<=\s)\S+|\S+|\s+", patterns.NAMED["kimi_k2"]]:
        tok = tokenforge.Tokenizer.from_ranks(enc._mergeable_ranks, pattern=pattern)
        assert not tok._splits_natively
        expected = [i for m in regex.finditer(pattern, text) for i in enc._core_bpe.encode_single_piece(m.group().encode())]
        assert tok.encode(text) == expected


# ----------------------------------------------------------------------------------------------
# Linear time, counted in work units (thread steps and program steps), never in seconds

@pytest.mark.parametrize("pattern, make", [
    (r"(a|aa)+b", lambda n: "a" * n + "c"),          # exponential for a backtracking engine
    (r"(?:a|aa)+$|a", lambda n: "a" * n + "c"),
    (r"a*b|a", lambda n: "a" * n),                     # quadratic for a VM restarted at each piece
    (r"\s+(?!\S)|\s", lambda n: " " * n + "x"),
    (patterns.LLAMA3, lambda n: " " * n),
    (patterns.LLAMA3, lambda n: "a" * n),
    (patterns.TEKKEN, lambda n: "aB" * (n // 2)),
    (patterns.QWEN3_5, lambda n: "\u0301" * n),
    (patterns.DEEPSEEK_V3[2], lambda n: "!" * n),
])
@pytest.mark.parametrize("engine", ["dfa", "vm"])
def test_work_grows_linearly(pattern, make, engine):
    p = _core.Pattern(pattern, engine)
    small, large = p.work(make(2000)), p.work(make(16000))
    assert large <= 8 * small * 1.25 + 20000, (small, large)
    assert p.spans(make(24)) == _spans(pattern, make(24))  # `regex` itself is exponential on some
    assert p.spans(make(3000)) == _core.Pattern(pattern, "backward").spans(make(3000))


def test_redos_pattern_from_a_file_encodes_quickly():
    ranks = tiktoken.get_encoding("cl100k_base")._mergeable_ranks
    tok = tokenforge.Tokenizer.from_ranks(ranks, pattern=r"(a|aa)+b|\s+|[^a\s]+")
    assert tok._splits_natively and tok._native_pattern < 0
    assert tok.encode("a" * 36 + "c") == tok.encode("c")  # the a's match nothing and are dropped
    assert tok.encode("a" * 200000 + "b")


# ----------------------------------------------------------------------------------------------
# Id for id against tiktoken with the same pattern

_SINGLE_FOR_TIKTOKEN = {**SINGLE, "kimi_k2": patterns.KIMI_K2}


@pytest.mark.parametrize("name", sorted(_SINGLE_FOR_TIKTOKEN))
def test_ids_equal_tiktoken_with_the_same_pattern(name, corpus_texts):
    from conftest import MULTILINGUAL

    pattern = _SINGLE_FOR_TIKTOKEN[name]
    ranks = tiktoken.get_encoding("cl100k_base")._mergeable_ranks
    ours = tokenforge.Encoding(name, pat_str=pattern if name != "kimi_k2" else patterns.NAMED[name],
                               mergeable_ranks=ranks, special_tokens={})
    theirs = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    text = MULTILINGUAL + "".join(t[:40000] for t in corpus_texts.values())
    assert ours.encode_ordinary(text) == theirs.encode_ordinary(text)
    assert ours.encode_ordinary_batch([text[:1000], text[1000:3000]]) == theirs.encode_ordinary_batch([text[:1000], text[1000:3000]])
    assert ours.encode_to_numpy(text[:5000]).tolist() == theirs.encode_ordinary(text[:5000])
