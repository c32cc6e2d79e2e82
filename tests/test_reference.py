"""The native core against the pure-Python reference (the oracle), on small random vocabularies."""

import contextlib
import random

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge import Tokenizer, _core, reference


def random_ranks(seed: int, num_merges: int, alphabet: bytes = b"ab c") -> dict[bytes, int]:
    """A vocabulary made by real BPE training on random text over a tiny alphabet."""
    rng = random.Random(seed)
    words = {}
    for _ in range(200):
        w = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        words[w] = words.get(w, 0) + rng.randint(1, 5)
    ranks = {bytes([i]): i for i in range(256)}
    for a, b in reference.train(words, num_merges):
        ranks[a + b] = len(ranks)
    return ranks


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 50), text=st.text(alphabet=st.sampled_from(list("ab c\n")), max_size=300))
def test_native_bpe_equals_reference(seed, text):
    ranks = random_ranks(seed, 40)
    tok = Tokenizer.from_ranks(ranks, pattern="gpt2")
    assert tok.encode_ordinary(text) == reference.encode(text, ranks, tok.pattern)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 50), n=st.integers(129, 600))
def test_long_pieces_use_the_same_merges(seed, n):
    # Pieces longer than 128 bytes take the heap path in cpp/bpe.cc; it must agree with the scan.
    ranks = random_ranks(seed, 60, alphabet=b"ab")
    rng = random.Random(seed)
    piece = bytes(rng.choice(b"ab") for _ in range(n))
    tok = Tokenizer.from_ranks(ranks, pattern=r"[ab]+")  # a custom pattern: one piece
    assert tok.encode_ordinary(piece.decode()) == [ranks[p] for p in reference.bpe_piece(ranks, piece)]


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 50), text=st.text(alphabet=st.sampled_from(list("abc ")), max_size=400))
def test_pair_merge_rule_equals_reference(seed, text):
    ranks = random_ranks(seed, 50, alphabet=b"abc ")
    merges = reference.recover_merges(ranks)
    tok = Tokenizer.from_vocab_merges({i: b for b, i in ranks.items()}, merges, pattern="gpt2")
    table = {m: r for r, m in enumerate(merges)}
    expected = [ranks[p] for piece in reference.split(text, tok.pattern)
                for p in reference.bpe_piece_with_merges(table, piece.encode())]
    assert tok.encode_ordinary(text) == expected


# Whole characters (cpp/bpe.cc): the merge loops start a 2- or 3-byte character as its token
# where no merge joining part of it to a neighbour can come first. Vocabularies trained on bytes
# of such characters are full of those joining tokens, at every rank (a letter's last byte with
# the next letter's first, a space with a first byte), so the bounds are tested at every rank.
_MULTIBYTE = "аДжΩé中ー한 b"


def random_multibyte_ranks(seed: int, num_merges: int, alphabet: str = _MULTIBYTE) -> dict[bytes, int]:
    rng = random.Random(seed)
    words = {}
    for _ in range(200):
        w = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))).encode()
        words[w] = words.get(w, 0) + rng.randint(1, 5)
    ranks = {bytes([i]): i for i in range(256)}
    for a, b in reference.train(words, num_merges):
        ranks[a + b] = len(ranks)
    return ranks


def random_substring_ranks(seed: int, count: int) -> dict[bytes, int]:
    """Byte substrings of random multi-byte text, cut anywhere (across characters too), in random
    rank order: joining tokens that rank below a character's own merges, longer tokens that rank
    below the character, tokens ranked below their parts."""
    rng = random.Random(seed)
    text = "".join(rng.choice(_MULTIBYTE) for _ in range(300)).encode()
    pieces = list(dict.fromkeys(text[i:i + rng.randint(2, 6)] for i in (rng.randrange(len(text) - 1)
                                                                        for _ in range(count))))
    rng.shuffle(pieces)
    ranks = {bytes([i]): i for i in range(256)}
    for piece in pieces:
        ranks.setdefault(piece, len(ranks))
    return ranks


@settings(max_examples=500, deadline=None)
@given(trained=st.booleans(), seed=st.integers(0, 1000), size=st.integers(5, 400),
       text=st.text(alphabet=st.sampled_from(list(_MULTIBYTE + "\n")), max_size=120))
def test_whole_characters_equal_reference(trained, seed, size, text):
    ranks = random_multibyte_ranks(seed, min(size, 150)) if trained else random_substring_ranks(seed, size)
    # Pieces of every length: words (the scan, up to 40 bytes) and whole lines (the heap).
    for pattern in (r" ?[^ \n]+|\s+", r"[^\n]+|\n"):
        tok = Tokenizer.from_ranks(ranks, pattern=pattern)
        assert tok.encode_ordinary(text) == reference.encode(text, ranks, pattern)


# Hand-made vocabularies, one per bound: each time a character's token exists, but a merge with a
# lower rank takes part of its bytes first, so it must start as bytes.
_BOUND_CASES = [
    # its own merges: "中" (e4 b8 ad) ranks 256, but its bytes reach it only through e4 b8 at 258,
    # and a space joins its first byte at 257 (a trained vocabulary ranks a token after its parts)
    ({"中": 256, b" \xe4": 257, b"\xe4\xb8": 258}, [" 中", "中中"]),
    # the byte before it: a space and the first byte of "а" (d0 b0)
    ({b" \xd0": 256, "а": 257}, [" а", "аа", " аb"]),
    # the byte after it: the last byte of "а" and "b"
    ({b"\xb0b": 256, "а": 257}, ["аb", "аа", "bаb"]),
    # the last two bytes of "中" (its first merge) and "b"
    ({b"\xb8\xad": 256, b"\xb8\xadb": 257, "中": 258}, ["中b", "中中b"]),
    # a longer token holding it: started whole, "а" would join "b" (as "аb", 256) before "bb" (280)
    ({"аb": 256, "bb": 280, "а": 300}, ["аbb", "bаbb"]),
]


@pytest.mark.parametrize("tokens, texts", _BOUND_CASES)
def test_whole_characters_respect_each_bound(tokens, texts):
    ranks = {bytes([i]): i for i in range(256)}
    ranks.update({t.encode() if isinstance(t, str) else t: r for t, r in tokens.items()})
    tok = Tokenizer.from_ranks(ranks, pattern=r"[^\n]+")
    for text in texts:
        assert tok.encode_ordinary(text) == reference.encode(text, ranks, r"[^\n]+"), text


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 60), data=st.binary(max_size=40), text=st.text(alphabet=st.sampled_from(list(_MULTIBYTE)),
                                                                         max_size=30))
def test_whole_characters_among_stray_bytes_equal_reference(seed, data, text):
    # Raw pieces: characters next to bytes that valid UTF-8 never puts there (a stray continuation
    # byte after a character, a first byte before one).
    ranks = random_multibyte_ranks(seed, 120)
    engine = Tokenizer.from_ranks(ranks, pattern=r"[^\n]+")._engine
    for piece in (data + text.encode(), text.encode() + data, data[: len(data) // 2] + text.encode() + data):
        if piece:
            expected = [ranks[piece]] if piece in ranks else [ranks[p] for p in reference.bpe_piece(ranks, piece)]
            assert engine.encode_pieces([piece]) == expected


def test_minbpe_golden_example():
    # Wikipedia's "aaabdaaabac". Step 2 is a tie between (aa, a) and (a, b), both twice; the
    # lexicographically greater pair, (aa, a), wins.
    merges = reference.train({b"aaabdaaabac": 1}, 3)
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    ids = list(b"aaabdaaabac")
    stats = reference.get_stats(ids)
    assert stats[(97, 97)] == 4
    assert reference.merge([1, 2, 3, 1, 2], (1, 2), 4) == [4, 3, 4]


# Whole characters under the pairs rule (merges lists, tokenizer.json): the same bounds over the
# listed merges. Trained lists rank a merge after the merges of its parts; random lists do not
# (a space joined to a first byte, a character's token joined to a neighbour, before the merges
# that make the character).
def random_multibyte_merges(seed: int, count: int) -> list[tuple[bytes, bytes]]:
    """Substrings of random multi-byte text cut anywhere, each made by a merge of two tokens, the
    merges in random order (a merge may come before those that make its parts, as a tokenizer.json
    may list them)."""
    rng = random.Random(seed)
    text = "".join(rng.choice(_MULTIBYTE) for _ in range(300)).encode()
    candidates = {text[i:i + rng.randint(2, 6)] for i in (rng.randrange(len(text) - 1) for _ in range(count))}
    vocab, merges = {bytes([b]) for b in range(256)}, []
    for token in sorted(candidates, key=len):  # shorter first: a token's parts are in before it
        splits = [(token[:k], token[k:]) for k in range(1, len(token)) if token[:k] in vocab and token[k:] in vocab]
        if splits:
            merges.append(rng.choice(splits))
            vocab.add(token)
    rng.shuffle(merges)
    return merges


@settings(max_examples=400, deadline=None)
@given(trained=st.booleans(), seed=st.integers(0, 1000), size=st.integers(5, 300),
       text=st.text(alphabet=st.sampled_from(list(_MULTIBYTE + "\n")), max_size=120))
def test_whole_characters_of_merges_lists_equal_reference(trained, seed, size, text):
    if trained:
        ranks = random_multibyte_ranks(seed, min(size, 150))
        merges = reference.recover_merges(ranks)
    else:
        merges = random_multibyte_merges(seed, size)
        ranks = {bytes([i]): i for i in range(256)}
        for a, b in merges:
            ranks.setdefault(a + b, len(ranks))
    table = {m: r for r, m in enumerate(merges)}
    for pattern in (r" ?[^ \n]+|\s+", r"[^\n]+|\n"):
        tok = Tokenizer.from_vocab_merges({i: b for b, i in ranks.items()}, merges, pattern=pattern)
        expected = [ranks[p] for piece in reference.split(text, pattern)
                    for p in reference.bpe_piece_with_merges(table, piece.encode())]
        assert tok.encode_ordinary(text) == expected


# Cuts (cpp/bpe.cc, encode_cut): a piece is cut between two whole 3-byte characters that no token
# holds side by side, and each stretch between cuts is merged alone from its bytes (never looked up
# whole: a stretch may be a token its own bytes do not merge into). Vocabularies trained on words
# of mostly 3-byte letters (their characters start whole; some pairs of letters are tokens, most
# are not, so pieces are cut), with a few tokens of random substrings on top (joining tokens,
# tokens ranked below their parts); both merge rules; each text twice (the second time from the
# piece cache and the hot tier's stretch entries).
_RUNS = "中文日本語のテキスト한국" * 3 + "ーаé b"


def random_run_ranks(seed: int, num_merges: int, extra: int) -> tuple[dict[bytes, int], list[tuple[bytes, bytes]]]:
    """A vocabulary trained on runs of _RUNS with `extra` random substrings ranked after it (mostly
    tokens no merge reaches), and the trained merges."""
    ranks = random_multibyte_ranks(seed, num_merges, _RUNS)
    merges = reference.recover_merges(ranks)
    rng = random.Random(seed)
    text = "".join(rng.choice(_RUNS) for _ in range(100)).encode()
    for _ in range(extra):
        i = rng.randrange(len(text) - 1)
        ranks.setdefault(text[i:i + rng.randint(2, 9)], len(ranks))
    return ranks, merges


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 1000), size=st.integers(20, 200), extra=st.integers(0, 6), pairs=st.booleans(),
       text=st.text(alphabet=st.sampled_from(list(_RUNS + "\n")), max_size=150))
def test_cut_pieces_equal_reference(seed, size, extra, pairs, text):
    ranks, merges = random_run_ranks(seed, size, extra)
    for pattern in (r" ?[^ \n]+|\s+", r"[^\n]+|\n"):
        if pairs:
            table = {m: r for r, m in enumerate(merges)}
            tok = Tokenizer.from_vocab_merges({i: b for b, i in ranks.items()}, merges, pattern=pattern)
            expected = [ranks[p] for piece in reference.split(text, pattern)
                        for p in reference.bpe_piece_with_merges(table, piece.encode())]
        else:
            tok = Tokenizer.from_ranks(ranks, pattern=pattern)
            expected = reference.encode(text, ranks, pattern)
        assert tok.encode_ordinary(text) == expected
        assert tok.encode_ordinary(text) == expected


def test_a_stretch_that_is_a_token_is_merged_not_looked_up():
    # "文日本" is a token its bytes never merge into (no token joins two of its letters), so inside
    # "中文日本" (cut after 中: no token holds 中文) it is three tokens, and alone it is one (the
    # rank rule's whole-piece shortcut): in either order, neither answer is taken for the other.
    ranks = {bytes([i]): i for i in range(256)}
    for ch in "中文日本":
        ranks[ch.encode()[:2]] = len(ranks)
        ranks[ch.encode()] = len(ranks)
    ranks["文日本".encode()] = len(ranks)
    tok = Tokenizer.from_ranks(ranks, pattern=r"[^\n]+|\n")
    ids = {ch: ranks[ch.encode()] for ch in "中文日本"}
    for texts in (["文日本", "中文日本"], ["中文日本", "文日本"]):
        for text in texts * 2:
            expected = reference.encode(text, ranks, r"[^\n]+|\n")
            assert expected == ([ranks["文日本".encode()]] if text == "文日本" else [ids[c] for c in text])
            assert tok.encode_ordinary(text) == expected


# Byte cuts (cpp/bpe.cc, encode_byte_cut): a piece of more than 40 bytes is cut between two bytes
# no merge can join (side by side in no token; with merge rules, at no rule's junction), and each
# stretch between cuts is merged alone. Vocabularies trained on words of "abc", with a few tokens
# holding "d" on top (under merge rules no merge reaches them: their byte pairs are not joined
# there, but they still count as side by side in a token); long pieces over "abcde" ("e" is in no
# token: a cut on each side of it); both merge rules; each text twice (the second time through
# the piece cache and the hot tier's stretch entries).
@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 1000), extra=st.integers(0, 8), pairs=st.booleans(),
       text=st.text(alphabet=st.sampled_from(list("abcde")), min_size=41, max_size=400))
def test_byte_cut_pieces_equal_reference(seed, extra, pairs, text):
    ranks = random_ranks(seed, 40, alphabet=b"abc")
    merges = reference.recover_merges(ranks)
    rng = random.Random(seed)
    for _ in range(extra):
        ranks.setdefault(bytes(rng.choice(b"abcd") for _ in range(rng.randint(2, 5))), len(ranks))
    pattern = r"[^\n]+|\n"
    if pairs:
        table = {m: r for r, m in enumerate(merges)}
        tok = Tokenizer.from_vocab_merges({i: b for b, i in ranks.items()}, merges, pattern=pattern)
        expected = [ranks[p] for p in reference.bpe_piece_with_merges(table, text.encode())]
    else:
        tok = Tokenizer.from_ranks(ranks, pattern=pattern)
        expected = reference.encode(text, ranks, pattern)
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_ordinary(text) == expected


# merge_long's queue (cpp/bpe.cc): pieces of 16,384 bytes or more are merged with sorted runs taken
# from a radix heap's buckets (MergeQueue), shorter ones with a 4-ary heap. Here the radix queue
# takes every piece of more than 40 bytes, so that the reference can check it on pieces it merges
# quickly: trained vocabularies (each merge makes pairs ranked after its own: the runs) and the
# same tokens in shuffled ranks, or the merges shuffled (pairs ranked before the merge that made
# them: the side heap), over a few letters, so pieces merge many times at every rank.
@contextlib.contextmanager
def radix_queue_for_long_pieces():
    previous = _core._set_radix_heap_min(41)
    try:
        yield
    finally:
        _core._set_radix_heap_min(previous)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 1000), shuffled=st.booleans(), pairs=st.booleans(), n=st.integers(41, 700))
def test_radix_queue_merges_equal_reference(seed, shuffled, pairs, n):
    ranks = random_ranks(seed, 60, alphabet=b"abc")
    rng = random.Random(seed)
    piece = bytes(rng.choice(b"abc") for _ in range(n)) if seed % 3 else (b"ab" * n)[:n]
    merges = reference.recover_merges(ranks)
    if shuffled and not pairs:
        multi = [b for b in ranks if len(b) > 1]
        order = list(range(256, 256 + len(multi)))
        rng.shuffle(order)
        ranks = {**{bytes([i]): i for i in range(256)}, **dict(zip(multi, order))}
    if shuffled and pairs:
        rng.shuffle(merges)
    pattern = r"[abc]+"  # one piece
    if pairs:
        table = {m: r for r, m in enumerate(merges)}
        tok = Tokenizer.from_vocab_merges({i: b for b, i in ranks.items()}, merges, pattern=pattern)
        expected = [ranks[p] for p in reference.bpe_piece_with_merges(table, piece)]
    else:
        tok = Tokenizer.from_ranks(ranks, pattern=pattern)
        expected = reference.encode(piece.decode(), ranks, pattern)
    with radix_queue_for_long_pieces():
        assert tok.encode_ordinary(piece.decode()) == expected


# The constructor takes merge rules as id triples, and nothing makes a rule's merged token hold
# its two parts' bytes. Whole characters and cuts read a part's bytes from its token, so with such
# a rule (here: 中 + 文 and 中 + "a" merge into a token "zz") the native core must merge by ids
# alone, as Hugging Face tokenizers would: a cut between 中 and 文, or after 中, would miss them.
def _merge_by_ids(ids, rules):
    ranks = {(left, right): (rank, merged) for rank, (left, right, merged) in reversed(list(enumerate(rules)))}
    while True:
        found = [(ranks[pair][0], i) for i, pair in enumerate(zip(ids, ids[1:])) if pair in ranks]
        if not found:
            return ids
        _, i = min(found)
        ids = ids[:i] + [ranks[ids[i], ids[i + 1]][1]] + ids[i + 2:]


def test_merges_whose_token_is_not_their_bytes_are_merged_by_ids():
    tokens = [(b, bytes([b])) for b in range(256)]
    rules = []
    for ch in "中文":
        b = ch.encode()
        tokens += [(len(tokens), b[:2]), (len(tokens) + 1, b)]
        rules += [(b[0], b[1], len(tokens) - 2), (len(tokens) - 2, b[2], len(tokens) - 1)]
    zhong, wen = tokens[257][0], tokens[259][0]
    tokens.append((len(tokens), b"zz"))
    rules += [(zhong, wen, len(tokens) - 1), (zhong, ord("a"), len(tokens) - 1)]
    encoder = _core.Encoder(tokens, rules, False, r"[^\n]+|\n", [])
    for text in ("中文中a" * 8, "中文" * 20, "中a" * 30, "文中文中a中" * 5):
        expected = _merge_by_ids(list(text.encode()), rules)
        assert encoder.encode(text, b"") == expected
        assert encoder.encode(text, b"") == expected
        assert len(expected) < len(text)  # (the "zz" merges happened)
