"""The native core against the pure-Python reference (the oracle), on small random vocabularies."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenforge import Tokenizer, reference


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


def test_minbpe_golden_example():
    # Wikipedia's "aaabdaaabac". Step 2 is a tie between (aa, a) and (a, b), both twice; the
    # lexicographically greater pair, (aa, a), wins.
    merges = reference.train({b"aaabdaaabac": 1}, 3)
    assert merges == [(b"a", b"a"), (b"aa", b"a"), (b"aaa", b"b")]
    ids = list(b"aaabdaaabac")
    stats = reference.get_stats(ids)
    assert stats[(97, 97)] == 4
    assert reference.merge([1, 2, 3, 1, 2], (1, 2), 4) == [4, 3, 4]
