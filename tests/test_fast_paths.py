"""The encoder's fast paths against the slow ones they shortcut: the scanners' ASCII paths (word
runs classified 16 bytes at a time with SSE2, and 64-byte blocks with SSE2 or AVX-512BW; digits,
punctuation and whitespace) against `regex`, and the special-token search's skip to a possible
first byte (memchr, or 16 bytes at a time) against a leftmost-longest reference.

Words of every length cross the 16-byte blocks at every alignment, and end at the text's end or
just before a non-ASCII letter or mark (where the fast path must hand over to the full scanner).
"""

import os
import random
import subprocess
import sys

import pytest
import regex
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import Tokenizer, _core, patterns, reference

_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SEPARATORS = [" ", "  ", "\n", "'s", "'LL", ".", ", ", "1", "123 ", "é", "É", "\u0301", "ǅ", "中", "ʰ",
               "\u00a0", "@", "[", "`", "{", "\x7f", "\x00", "’", "—", "😀", "ſ", "-", "\t", "/", "\r\n", "//",
               "...", "\n\n    ", "    ", "'", "12345", "\x1c", "\x0b", " (", ")\n", " 1", "٣", "²", " \u3000",
               "\n\u00a0", "!\u2014", ".\r", ":/\n/", " \n "]


def _ascii_heavy_text():
    word = st.text(alphabet=st.sampled_from(_WORD_CHARS), max_size=40)
    piece = st.tuples(word, st.sampled_from(_SEPARATORS)).map("".join)
    return st.tuples(st.text(alphabet=st.sampled_from(" \n.1\t/"), max_size=15), st.lists(piece, max_size=12),
                     word).map(lambda t: t[0] + "".join(t[1]) + t[2])


@settings(max_examples=400, deadline=None)
@given(text=_ascii_heavy_text(), name=st.sampled_from(["cl100k", "o200k", "gpt2"]))
def test_ascii_word_runs_equal_regex(text, name):
    pattern = patterns.NAMED[name]
    expected = [m.span() for m in regex.finditer(pattern, text)]
    assert _core.Pattern(pattern).spans(text) == expected


@settings(max_examples=100, deadline=None)
@given(text=_ascii_heavy_text(), name=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_ascii_word_runs_ids_equal_tiktoken(text, name):
    assert tokenforge.get_encoding(name).encode_ordinary(text) == tiktoken.get_encoding(name).encode_ordinary(text)


def _leftmost_longest(text: str, specials: dict[str, int]):
    """(start, token) of the first special token in text, the longest of those starting there."""
    best = None
    for tok in specials:
        at = text.find(tok)
        if at >= 0 and (best is None or at < best[0] or (at == best[0] and len(tok) > len(best[1]))):
            best = (at, tok)
    return best


def _reference_encode(tok: Tokenizer, text: str, specials: dict[str, int]) -> list[int]:
    out = []
    while (found := _leftmost_longest(text, specials)) is not None:
        at, special = found
        out += tok.encode_ordinary(text[:at]) + [specials[special]]
        text = text[at + len(special):]
    return out + tok.encode_ordinary(text)


_RANKS = {bytes([i]): i for i in range(256)}
# Special-token sets with one first byte (memchr), two to four (compared 16 bytes at a time), and
# more (the byte table).
_SPECIAL_SETS = [
    ["<|a|>", "<|ab|>", "<x"],
    ["<|a|>", "[b]", "{c}", "[bb"],
    ["<|a|>", "[b]", "{c}", "ab", "é!", "z"],
]


@settings(max_examples=300, deadline=None)
@given(which=st.integers(0, len(_SPECIAL_SETS) - 1),
       text=st.lists(st.sampled_from(["<", "|", "a", "b", "|>", "[", "]", "{", "}", "x", "c", "z", "é", "!", " ",
                                      "hello world, ", "<|a|>", "<|ab|>", "[b]"]), max_size=60).map("".join))
def test_special_search_equals_leftmost_longest(which, text):
    specials = {s: 1000 + k for k, s in enumerate(_SPECIAL_SETS[which])}
    tok = Tokenizer.from_ranks(_RANKS, pattern="cl100k", special_tokens=specials)
    assert tok.encode(text, allowed_special="all") == _reference_encode(tok, text, specials)
    found = _leftmost_longest(text, specials)
    if found is None:
        assert tok.encode(text) == tok.encode_ordinary(text)
    else:
        try:
            tok.encode(text)
        except ValueError as e:
            assert repr(found[1]) in str(e)
        else:
            raise AssertionError("a disallowed special token was not found")


# The hot tier of the per-thread piece cache keeps pieces of up to 16 bytes with up to three ids,
# tagged with a 16-bit epoch that changes whenever the thread switches to another model (1, 2, ...,
# 65535, then the tier and its victim entries are cleared and it starts again at 1). Words of
# Cyrillic and accented Latin text are often three tokens. One encoding leaves its entries at some
# epoch E, in the hot tier and (tens of thousands of distinct words) among the victims; then the
# thread switches between two other models on a one-character text until the epoch comes round to
# E again, now with the other encoding: without the clearing it would read the first encoding's ids.
def test_hot_tier_three_ids_across_model_switches():
    text = ("Режим списку: у майбутньому виведенні може бути більше стовпчиків. "
            "Überprüfung der Änderungen für Vollständigkeit. Ελληνικά γράμματα " + _many_words(60_000, seed=1))
    names = ("cl100k_base", "o200k_base")
    a, b = (tokenforge.get_encoding(n) for n in names)
    expected_a, expected_b = (tiktoken.get_encoding(n).encode_ordinary(text) for n in names)
    assert expected_a != expected_b
    assert any(len(tiktoken.get_encoding(names[0]).encode_ordinary(w)) == 3 for w in text.split())
    assert a.encode_ordinary(text) == expected_a  # epoch E
    fillers = (tokenforge.get_encoding("r50k_base"), tokenforge.get_encoding("p50k_base"))
    for switch in range(1, 65535):                # E + 1 .. E + 65534
        fillers[switch % 2].encode_ordinary("q")
    assert b.encode_ordinary(text) == expected_b  # E + 65535, which is E again
    assert a.encode_ordinary(text) == expected_a


def _many_words(count: int, seed: int) -> str:
    """count words of 2-12 letters, mostly distinct (more than the hot tier holds without two sharing
    an entry), each twice, in a seeded order."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnoprstuvwyzäöüéД") for _ in range(rng.randint(2, 12)))
             for _ in range(count)]
    words += words
    rng.shuffle(words)
    return " ".join(words)


# The hot tier is direct-mapped; the entries it evicts move to the victim entries, and swap back
# when their piece comes again. Tens of thousands of distinct words, encoded twice by each of two
# encodings taking turns (the victims of one must never answer the other): ids equal to tiktoken's.
def test_hot_tier_victims_equal_tiktoken():
    text = _many_words(80_000, seed=2)
    names = ("cl100k_base", "o200k_base")
    ours = [tokenforge.get_encoding(n) for n in names]
    expected = [tiktoken.get_encoding(n).encode_ordinary(text) for n in names]
    for _ in range(2):
        for enc, ids in zip(ours, expected):
            assert enc.encode_ordinary(text) == ids
            assert enc.encode_ordinary(text) == ids


# A hot entry holds a fourth id in the top bytes of the other three when all four are below 2^24
# (Korean words are often four tokens). Words of 1-4 tokens, encoded from the merge loops, then
# from the hot tier, then again after the victims have moved them around; and a vocabulary whose
# four-id pieces hold ids at and above 2^24, which must not be packed.
def test_hot_tier_four_ids_equal_tiktoken():
    words = ("필터로만 섹션을 비트맵 섹션의 텍스트가 섹션은 podręcznika uruchomić 에 표시되지 않은 현재 파일을 "
             "나열합니다 Ελληνικά переконфігурування Überprüfung").split()
    names = ("cl100k_base", "o200k_base")
    for name in names:  # (six Korean words of four ids in both encodings, 16 bytes at most with the space)
        assert sum(len(tiktoken.get_encoding(name).encode_ordinary(" " + w)) == 4 for w in words[:6]) == 6
    text = " ".join(words) + " " + _many_words(60_000, seed=3) + " " + " ".join(words)
    for name in names:
        expected = tiktoken.get_encoding(name).encode_ordinary(text)
        for _ in range(3):
            assert tokenforge.get_encoding(name).encode_ordinary(text) == expected


@pytest.mark.parametrize("big", [2**24 - 1, 2**24, 2**31])
def test_hot_tier_four_large_ids_equal_reference(big):
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({b"ab": big, b"cd": big + 1, b"ef": 300})
    tok = Tokenizer.from_ranks(ranks, pattern=r"\S+|\s+")
    text = "abcdefab efcdabcd abgh"  # pieces of four ids holding big and big + 1
    expected = reference.encode(text, ranks, r"\S+|\s+")
    assert [len(reference.encode(p, ranks, r"\S+")) for p in text.split()] == [4, 4, 3]
    for _ in range(3):
        assert tok.encode_ordinary(text) == expected


# The rank rule's merges of two tokens below rank 512 come from a direct table built at load
# (BytePairModel::low_pairs_), the others from the token tables. Vocabularies that mix both: single
# bytes at ranks above 512 as well as below, tokens of up to 20 bytes (past the 16-byte keys) among
# the low ranks, against the reference.
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), text=st.text(alphabet="abc d", max_size=120))
def test_low_rank_pairs_equal_reference(seed, text):
    rng = random.Random(seed)
    ids = [i if i < 700 else i + 70_000 for i in rng.sample(range(800), 800)]  # (ids past 16 bits too)
    ranks = {bytes([b]): ids[b] for b in range(256)}
    tokens: set[str] = set()
    while len(tokens) < 300:
        tokens.add("".join(rng.choice("abcd") for _ in range(rng.choice([2, 2, 3, 4, 6, 9, 15, 16, 17, 20]))))
    by_length = sorted(tokens, key=lambda t: (-len(t), t))  # the longest tokens take the lowest free ids
    for token, i in zip(by_length, sorted(ids[256:])):
        ranks[token.encode()] = i
    assert any(i < 512 and len(t) > 16 for t, i in ranks.items())
    assert any(i >= 512 and len(t) == 1 for t, i in ranks.items())
    # Joined pairs of low ids whose token's id needs more than 16 bits (the table leaves them to
    # the token table), in every example.
    low = sorted((t for t, i in ranks.items() if i < 512 and set(t) <= set(b"abcd")), key=lambda t: (len(t), t))
    joins = [x + y for x in low[:12] for y in low[:12] if x + y not in ranks and 2 < len(x + y) <= 16]
    for k, joined in enumerate(dict.fromkeys(joins[:20])):
        ranks[joined] = 80_000 + k
    assert len(joins) >= 20
    tok = Tokenizer.from_ranks(ranks, pattern=r"\S+|\s+")
    assert tok.encode_ordinary(text) == reference.encode(text, ranks, r"\S+|\s+")


# The pairs rule's table of the same pairs (BytePairModel::low_merges_): merges lists over ids
# shuffled across 512, with repeated pairs (the first listed wins, as in Hugging Face tokenizers).
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), text=st.text(alphabet="abc d", max_size=120))
def test_low_rank_merges_list_equal_reference(seed, text):
    rng = random.Random(seed)
    pool, merges = [b"a", b"b", b"c", b"d"], []
    while len(merges) < 500:
        if merges and rng.random() < 0.05:
            merges.append(rng.choice(merges[:20]))  # an early pair again, later: its first rank holds
            continue
        a, b = rng.choice(pool), rng.choice(pool[-40:])
        if len(a + b) <= 20:
            merges.append((a, b))
            if a + b not in pool:
                pool.append(a + b)
    tokens = [bytes([i]) for i in range(256)] + [t for t in pool if len(t) > 1]
    # Sparse ids: some bytes above 512, and ids past 16 bits (the table leaves those to the pair table).
    ids = [i if i < 600 else i + 70_000 for i in rng.sample(range(len(tokens) + 300), len(tokens))]
    vocab = dict(zip(ids, tokens))
    assert any(i >= 512 and len(t) == 1 for i, t in vocab.items()) and any(i < 512 and len(t) > 2 for i, t in vocab.items())
    id_of = {t: i for i, t in vocab.items()}
    assert any(id_of[a] < 512 and id_of[b] < 512 and id_of[a + b] > 0xFFFF for a, b in merges)
    table: dict[tuple[bytes, bytes], int] = {}
    for r, m in enumerate(merges):
        table.setdefault(m, r)
    tok = Tokenizer.from_vocab_merges(vocab, merges, pattern=r"\S+|\s+")
    ranks = {t: i for i, t in vocab.items()}
    expected = [ranks[p] for piece in reference.split(text, r"\S+|\s+")
                for p in reference.bpe_piece_with_merges(table, piece.encode())]
    assert tok.encode_ordinary(text) == expected


# The same table for merges ranked past 16 bits: every pair of two bytes is merged first (65,536
# merges), then pairs of two tokens below id 512 whose ranks need 17 bits.
def test_low_rank_merges_ranked_past_16_bits_equal_reference():
    late = [(b"a", b"b"), (b"ab", b"c"), (b"c", b"d"), (b"ab", b"cd"), (b"d", b"a")]
    merges = [(bytes([x]), bytes([y])) for x in range(256) for y in range(256)
              if not (bytes([x]) + bytes([y])).isalpha() or not set(bytes([x, y])) <= set(b"abcd")]
    merges += [(b"\x00\x00", bytes([z])) for z in range(40)] + late  # (padding, then the late pairs)
    tokens = [bytes([i]) for i in range(256)] + list(dict.fromkeys(a + b for a, b in merges))
    vocab = {i: t for i, t in enumerate(tokens)}
    id_of = {t: i for i, t in vocab.items()}
    ranks = {m: r for r, m in enumerate(merges)}
    assert all(ranks[m] > 0xFFFF and id_of[m[0]] < 512 and id_of[m[1]] < 512 for m in late[:1] + late[2:3] + late[4:])
    tok = Tokenizer.from_vocab_merges(vocab, merges, pattern=r"\S+|\s+")
    for text in ["abcd", "abcdab cdab dabc", "cdcdab ba", "\x00\x00\x05abcd"]:
        expected = [id_of[p] for piece in reference.split(text, r"\S+|\s+")
                    for p in reference.bpe_piece_with_merges(ranks, piece.encode())]
        assert tok.encode_ordinary(text) == expected


# Two- and three-byte characters are decoded inline by the scanners (every script of the BMP);
# the rest through the general decoder. Both against `regex`, at every mix of widths.
@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("aZ1 \n'.é\u0301ДжΩ中ー\u3000\u00a0٣²😀\U00020000ǅʰ-")), max_size=60),
       name=st.sampled_from(["cl100k", "o200k", "gpt2"]))
def test_multibyte_scanning_equals_regex(text, name):
    pattern = patterns.NAMED[name]
    assert _core.Pattern(pattern).spans(text) == [m.span() for m in regex.finditer(pattern, text)]


# The named patterns' pieces (GPT-2, cl100k, o200k) are found 64 bytes at a time from bit masks of
# the bytes' classes (cpp/block_scan.h), over ASCII; they hand over to the byte-at-a-time paths
# before non-ASCII bytes and possible contractions, and near the end of the text. Long texts of
# every ASCII class (and a few bytes that stop a block) against `regex`, for each pattern and for
# ids.
_BLOCK_FRAGMENTS = ["a", "bc", "Word", "camelCase", "HTTPServer", "ABC", "x", "Zz", "1", "22", "333", "4444",
                    "12345678", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n", "\n ", "\n    ", " \t ",
                    "\x0b", "\x0c", ".", ",", "...", "!", "/", "//", "*/", "-", "--", "(", ")", "[", "{", "}",
                    "'", "'s", "'T", "'ll", "'Ve", "'x", "\"", "@", "#", "$", "_", "\x1c", "\x1f", "\x00",
                    "\x7f", "=", "==", "<", ">", "é", "中文", "Ω", "\u00a0", "\u2019", "²", "😀", ".\n/", "/!",
                    ".\n/!x", "a/\nb", "x\n/\n/y"]


# Two-byte letters whose class a range test of their bytes decides (Latin-1, Cyrillic U+0400..045F,
# and where case does not matter U+0100..024F and U+0460..047F) stay in the block path; every
# other byte >= 0x80 stops it. Their neighbours: the symbols among them (× ÷), the cases o200k
# tells apart (and the alternating U+0460.. it leaves to the scanners), Latin Extended letters
# (cl100k: letters; o200k: Extended-A's alternating cases in the blocks, Extended-B's left to the
# scanners, and the code points where Extended-A's alternation changes phase), a modifier letter,
# a combining mark, a no-break space, two-byte digits, and `'ſ` (a contraction when case is
# ignored: ſ folds to s).
_TWO_BYTE_FRAGMENTS = ["Д", "ж", "Привет", "мир", "ЁЖИК", "ёлка", "Ѣѣ", "ѢѣѤ", "Ѡ", "×", "÷", "2×3", "a÷b",
                       "Ä", "ß", "ÿ", "Ö", "ÀÖØÞßàöøÿ", "ÉcOLE", "éTÉ", "āŁłǅ", "ǄǅǆDž", "Ɏɏ", "ʰ", "ʼ",
                       "Łódź", "İzmir", "ıI", "ğüşöç", "ŻÓŁW", "žluťoučký", "ķĸĹ", "ňŉŊ", "ŷŸŹ", "žſ", "ĀāĮįİı",
                       "ĲĳĶķ", "ŀŁ", "ƀ", "Ā", "e\u0301", "\u0301", "\u00a0", "٣٤", "'ſ", "'ſt", "'Ж", "'é", "яЯ",
                       "Яя", "ЯЯя",
                       "ИмяФайла", "x", "Word", " ", "  ", "\n", "\r\n", ".", ",", "'", "'s", "1", "22",
                       "333", "/", "-", "(", ")", "\t", "中", "😀", "—", "«", "»", "№"]


# Three-byte letters whose class a range test of their bytes decides (CJK ideographs U+4E00..9FFF,
# Hangul syllables U+AC00..D77F, kana U+3041..30FF but for the marks, symbols and punctuation
# among them) stay in the block path too. Their neighbours: the kana that are not letters (゙ ゚ ゛ ゜
# ゠ ・, unassigned U+3040 and U+3097), the code points just outside the ranges (U+4DFF, U+A000,
# U+ABFF, U+D7A3..D7A4, U+D7B0), CJK punctuation, full-width forms, and cased letters right
# beside them (o200k leaves those words to the scanners: a letter without case joins a word of
# either case).
_THREE_BYTE_FRAGMENTS = ["中", "中文", "一", "\u9fff", "\u4e02", "\u4dff", "\ua000", "\uabff", "가", "한국어", "\ud7a3",
                         "\ud7a4", "\ud7b0", "\ud7ff", "ぁ", "ひらがな", "カタカナ", "ゔ", "ゕ", "\u3040", "\u3097", "\u3099",
                         "\u309a", "\u309b", "\u309c", "ゝゞゟ", "\u30a0", "ァ", "ヺ", "\u30fb", "ー", "ヽヾヿ", "。", "、", "「",
                         "」", "（", "）", "Ａ", "ａ", "１", "\u3000", "々", "〇", "a", "B", "Word", "é", "É", "Ж", "ж",
                         "x中", "中x", "X한", "한X", "aB", "ab中cD", "1", "22", " ", "  ", "\n", ".", ",", "'", "'s",
                         "'S", "/", "-", "\t", "😀", "ǅ", "ʰ"]


# Runs of them longer than a block (the scanners skip such runs 64 bytes at a time), broken by
# what ends or interrupts them.
_LONG_RUN_FRAGMENTS = ["各マニュアルページには短い要約文が含まれています", "标准匹配规则允许匹配手册页名称和手册页描述中的单词边界",
                       "명령어를사용하여파일을복사합니다", "中" * 30, "が" * 25, "힣" * 22, "\u4e00\u9fff" * 12, "。", "、",
                       "\u30fb", "\u309b", "々", "\u3040", "Ａ", "a", "Ab", "XY", "é", "1", " ", "\n", "'s", "-"]


# Punctuation of two and three bytes the blocks know (block_scan.h, add_punctuation: one O
# character of several bytes) and the no-break space (one S character), with their neighbours in
# the same ranges that are whitespace, letters, digits or format characters, and what a word, a
# space, a contraction or a line end does beside them.
_PUNCTUATION_FRAGMENTS = ["“", "”", "‘", "’", "—", "–", "…", "•", "«", "»", "¡", "¿", "©", "°", "±", "×", "÷", "‰", "‹",
                          "›", "‾", "\u2010", "\u2027", "\u2028", "\u2029", "\u202f", "\u200b", "\u200f", "\u2030",
                          "\u203e", "\u203f", "\u00a0", "\u00ad", "ª", "²", "µ", "º", "¼", "don’t", "“Hello,”", " — ",
                          "…\n", "’s", "’S", "«\u00a0", "\u00a0»", "mot\u00a0:", "\u00a0\u00a0", " \u00a0", "\u00a0 ",
                          "\n\u00a0", "\u00a0\n", "\u00a0\u2019", "word", "Word", "a", "B", " ", "  ", "\n", "\r\n",
                          "\t", ".", ",", "(", ")", "'", "'s", "s", "t", "1", "22", "/", "-", "é", "Ж", "中", "😀"]


_FRAGMENT_SETS = {"ascii": _BLOCK_FRAGMENTS, "two-byte": _TWO_BYTE_FRAGMENTS, "three-byte": _THREE_BYTE_FRAGMENTS,
                  "long-runs": _LONG_RUN_FRAGMENTS, "punctuation": _PUNCTUATION_FRAGMENTS}


def _fragment_text(kind):
    return st.lists(st.sampled_from(_FRAGMENT_SETS[kind]), min_size=20, max_size=160).map("".join)


@pytest.mark.parametrize("kind", _FRAGMENT_SETS)
@settings(max_examples=700, deadline=None)
@given(data=st.data(), name=st.sampled_from(["gpt2", "cl100k", "o200k"]))
def test_block_scan_equals_regex(kind, data, name):
    text = data.draw(_fragment_text(kind))
    pattern = patterns.NAMED[name]
    assert _core.Pattern(pattern).spans(text) == [m.span() for m in regex.finditer(pattern, text)]


@pytest.mark.parametrize("kind", _FRAGMENT_SETS)
@settings(max_examples=150, deadline=None)
@given(data=st.data(), name=st.sampled_from(["r50k_base", "cl100k_base", "o200k_base"]))
def test_block_scan_ids_equal_tiktoken(kind, data, name):
    text = data.draw(_fragment_text(kind))
    assert tokenforge.get_encoding(name).encode_ordinary(text) == tiktoken.get_encoding(name).encode_ordinary(text)


def _cpu_has_avx512bw() -> bool | None:
    """Whether the processor reports AVX-512F and AVX-512BW (Linux's /proc/cpuinfo), None elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        return None
    return None if flags is None else {"avx512f", "avx512bw"} <= set(flags)


def test_block_isa_follows_the_environment():
    # The blocks are classified with AVX-512BW where the processor has it, unless the environment
    # turns it off (the subprocess test below); with it or without, every result is the same.
    if os.environ.get("TOKENFORGE_DISABLE_AVX512") == "1":
        assert _core.block_isa() == "sse2"
        return
    has = _cpu_has_avx512bw()
    if has is None:
        pytest.skip("no /proc/cpuinfo flags to compare with")
    assert _core.block_isa() == ("avx512bw" if has else "sse2")


def test_sse2_blocks_equal_regex_where_avx512_runs():
    # This machine's default may be AVX-512BW; the SSE2 classification every x86-64 has is checked
    # by the same tests in a process that turns AVX-512 off.
    env = dict(os.environ, TOKENFORGE_DISABLE_AVX512="1")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                          "block_scan or ascii_word_runs or block_isa"], env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


def test_block_scan_every_latin_extended_a_letter_equals_regex():
    # o200k's blocks decide the case of U+0100..U+017F from the parity of the second byte, in
    # phases (block_scan.h); every code point beside small letters, capitals, spaces and itself.
    chars = [chr(o) for o in range(0x100, 0x180)]
    text = "".join(f"{c}a {c}A a{c} A{c}a {c}{c}A x{c}{c} " for c in chars) * 2
    for name in ("cl100k", "o200k"):
        pattern = patterns.NAMED[name]
        assert _core.Pattern(pattern).spans(text) == [m.span() for m in regex.finditer(pattern, text)], name


def test_block_scan_every_punctuation_neighbour_equals_regex():
    # The blocks take the punctuation of U+00A1..U+00BF, × ÷, U+2010..U+2027 and U+2030..U+203E as
    # one O character, and the no-break space U+00A0 as one S (block_scan.h); every code point of
    # those ranges and around them, beside letters, spaces, no-break spaces, other punctuation,
    # line ends and itself.
    chars = [chr(o) for o in [*range(0xA0, 0xC0), 0xD7, 0xF7, *range(0x2000, 0x2070)]]
    text = "".join(f"{c}a {c}A a{c}b {c}{c}x ({c}y {c}(z .{c}\n{c}\n x{c} 1{c}2 \u00a0{c}a {c}\u00a0b  {c} \t{c}\t"
                   for c in chars) * 2
    for name in ("gpt2", "cl100k", "o200k"):
        pattern = patterns.NAMED[name]
        assert _core.Pattern(pattern).spans(text) == [m.span() for m in regex.finditer(pattern, text)], name


def test_block_scan_on_real_text(corpus_texts):
    for name in ("gpt2", "cl100k", "o200k"):
        splitter = _core.Pattern(patterns.NAMED[name])
        for kind in ("stdlib", "tinystories", "multilingual"):
            text = corpus_texts[kind][:400_000]
            assert splitter.spans(text) == [m.span() for m in regex.finditer(patterns.NAMED[name], text)], (name, kind)


# The piece cache keeps merged pieces in three tiers by size: the hot tier (up to 16 bytes and 3
# ids), the big tier (up to 30 bytes and 6 ids, sets of 4) and the long tier (up to 96 bytes and
# 36 ids: rules of '-' or '=', indentation, long words of other scripts, CJK runs with many ids;
# below, at its bounds: 96 and 97 bytes, and 12 and 13 CJK letters with 36 and 37 ids in cl100k).
# Each piece below is encoded several times, the later times from the cache, between pieces of
# the other tiers, and alternately by two encodings (entries carry their model): every time equal
# to tiktoken.
_LONG_PIECES = ["-" * 31, "=" * 64, " " + "+" * 70, "#" + "-" * 127, "-" * 129, " " * 40 + "x", "\t" * 33,
                " переконфігурування", " ідентифікаційний", " Donaudampfschifffahrtsgesellschaft",
                "指定した場合は既定の設定を使用します", "请参阅手册页以获取更多信息和示例", " ünverständlichkeiten",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", " Ελληνικάγράμματαπολύμακριά", "😀😃😄😁😆", "١٢٣",
                " переконфігуруванняпереконфігуруванняпереконфігуруванняпереконфігурування",
                "请参阅手册页以获取更多信息和示例如果指定了多个选项则按顺序处理每一个选项并输出结果", "鬱" * 42,
                "#" + "-" * 95, "-" * 97, "鬱" * 12, "鬱" * 13]


@settings(max_examples=150, deadline=None)
@given(picks=st.lists(st.sampled_from(_LONG_PIECES + [" the", " Überprüfung", " списку", ".\n"]), min_size=1,
                      max_size=30))
def test_piece_cache_tiers_equal_tiktoken(picks):
    text = "".join(picks)
    for name in ("cl100k_base", "o200k_base", "cl100k_base"):
        expected = tiktoken.get_encoding(name).encode_ordinary(text)
        ours = tokenforge.get_encoding(name)
        assert ours.encode_ordinary(text) == expected
        assert ours.encode_ordinary(text) == expected  # from the cache


# Byte cuts (cpp/bpe.cc, encode_byte_cut): a piece of more than 40 bytes is cut between bytes that
# no token holds side by side. Letters whose UTF-8 has such pairs (鬱 is E9 AC B1: in cl100k no
# token holds any two of them in a row, in o200k none holds AC B1) run together into long pieces
# with letters whose bytes do join; every time equal to tiktoken, the second time from the cache.
_CUT_LETTERS = list("鬱龘𪚥ꙮㄅ鬼中äЖqz")


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(_CUT_LETTERS), min_size=14, max_size=200),
       name=st.sampled_from(["r50k_base", "cl100k_base", "o200k_base"]))
def test_long_pieces_cut_between_bytes_equal_tiktoken(text, name):
    expected = tiktoken.get_encoding(name).encode_ordinary(text)
    ours = tokenforge.get_encoding(name)
    assert ours.encode_ordinary(text) == expected
    assert ours.encode_ordinary(text) == expected
    assert ours.encode_to_numpy(text).tolist() == expected


def test_a_million_letters_cut_between_bytes_equal_tiktoken():
    for name in ("cl100k_base", "o200k_base"):
        text = "鬱" * 1_000_000
        assert tokenforge.get_encoding(name).encode_ordinary(text) == tiktoken.get_encoding(name).encode_ordinary(text)


# Pieces of 16,384 bytes or more are merged with merge_long's radix queue (MergeQueue in cpp/bpe.cc):
# runs of one character or of a short pattern (each rank's pairs in one sorted run), and random
# letters (many ranks at once), against tiktoken.
@settings(max_examples=30, deadline=None)
@given(unit=st.sampled_from(["a", " ", "ab", "=", "\t", "0", "abc", "xyz", "ä"]), n=st.integers(16384, 40000),
       seed=st.integers(0, 100), name=st.sampled_from(["r50k_base", "cl100k_base", "o200k_base"]))
def test_very_long_pieces_equal_tiktoken(unit, n, seed, name):
    rng = random.Random(seed)
    repeated = (unit * n)[:n]
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
    for text in (repeated, letters, repeated[: n // 2] + letters[n // 2:]):
        assert tokenforge.get_encoding(name).encode_ordinary(text) == tiktoken.get_encoding(name).encode_ordinary(text)


# Whole characters (cpp/bpe.cc): a character starts the merge loops as its token only where no
# token joining part of it to the neighbouring byte ranks below its own merges. The real
# vocabularies have many such tokens (cl100k: b" \xd0", a space and the first byte of most
# Cyrillic letters, at rank 1301), so text of several scripts next to spaces, punctuation, digits,
# marks and each other, against tiktoken; and raw pieces with stray bytes around characters.
_WHOLE_CHARACTER_TEXT = list(" \n.,!?1-'пÑривет мирДЖЁёіїґ中文日本語のテキストー한국어텍스트ΩλάéüßçØ€™😀\u0301\u00a0")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(_WHOLE_CHARACTER_TEXT), max_size=80),
       name=st.sampled_from(["r50k_base", "cl100k_base", "o200k_base"]))
def test_whole_characters_equal_tiktoken(text, name):
    assert tokenforge.get_encoding(name).encode_ordinary(text) == tiktoken.get_encoding(name).encode_ordinary(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(_WHOLE_CHARACTER_TEXT), max_size=20), stray=st.binary(max_size=4),
       name=st.sampled_from(["cl100k_base", "o200k_base"]))
def test_whole_characters_among_stray_bytes_equal_tiktoken(text, stray, name):
    ours = tokenforge.get_encoding(name)._engine
    theirs = tiktoken.get_encoding(name)._core_bpe
    for piece in (stray + text.encode(), text.encode() + stray, stray + text.encode() + stray):
        if piece:
            assert ours.encode_pieces([piece]) == theirs.encode_single_piece(piece)
