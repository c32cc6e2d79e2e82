"""Character-level BPE: golden merges by hand, HF parity on real text (HF's and our own merges),
the tutorials' separate `</eow>` form, native against the reference, markers typed in the text,
vocab.json + merges.txt, bad input."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge as tf
from tokenforge import _core, models

pytest.importorskip("tokenizers")
from tokenizers import Tokenizer  # noqa: E402
from tokenizers import models as hm  # noqa: E402
from tokenizers import pre_tokenizers as hp  # noqa: E402
from tokenizers import trainers  # noqa: E402

SENNRICH = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


def hf_from_files(d, suffix="</w>"):
    t = Tokenizer(hm.BPE.from_file(str(d / "vocab.json"), str(d / "merges.txt"), unk_token="<unk>", end_of_word_suffix=suffix))
    t.pre_tokenizer = hp.Whitespace()
    return t



def non_ascii_stdlib_lines() -> str:
    """Every non-ASCII line of the standard library's test suite (CJK encodings' samples, Unicode
    tests, 800 distinct characters): more multilingual text than the shared sample."""
    import pathlib
    import sysconfig

    root = pathlib.Path(sysconfig.get_paths()["stdlib"]) / "test"
    lines = []
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".txt") and path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            lines += [line for line in text.splitlines(keepends=True) if not line.isascii()]
    return "".join(lines)

def test_golden_merges_separate_marker():
    # Pair counts worked by hand: (e,s) (s,t) (t,</w>) 9 each -> the smallest pair first, then the
    # new pairs (es,t) 9, (est,</w>) 9; then (l,o) 7 and (lo,w) 7.
    m = models.CharBPE.train_from_counts(SENNRICH, vocab_size=100, attach_markers=False)
    assert m.merges[:5] == [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w")]
    assert [m.id_to_token(i) for i in m.encode_words(["lowest"])] == ["low", "est</w>"]


def test_golden_merges_attached_marker():
    # Initial symbols: l o w</w> | l o w e r</w> | n e w e s t</w> | w i d e s t</w>.
    # (e,s) 9 and (s,t</w>) 9 tie -> (e,s); then (es,t</w>) 9; (l,o) 7; then (e,w) (n,e) (w,est</w>)
    # tie at 6 -> (e,w).
    m = models.CharBPE.train_from_counts(SENNRICH, vocab_size=100)
    assert m.merges[:4] == [("e", "s"), ("es", "t</w>"), ("l", "o"), ("e", "w")]
    assert m.token_to_id("w</w>") is not None and m.token_to_id("</w>") is None
    assert [m.vocab[t] for t in ("<pad>", "<unk>", "<bos>", "<eos>")] == [0, 1, 2, 3]


def test_tutorial_separate_eow_matches_the_tutorial_encoder():
    # The tutorial (seeds/000): symbols = chars + ('</eow>',), repeatedly merge the best-ranked pair.
    text = "Once upon a time there was a little cat . The cat was there . " * 20 + "upon the time"
    tok = tf.CharBPETokenizer.train([text], vocab_size=60, end_of_word="</eow>", attach_markers=False,
                                    pre_tokenizer="whitespace_split")
    ranks = {p: r for r, p in enumerate(tok.model.merges)}

    def tutorial_word(word):
        symbols = tuple(word) + ("</eow>",)
        while True:
            pairs = {(symbols[i], symbols[i + 1]) for i in range(len(symbols) - 1)} & ranks.keys()
            if not pairs:
                return symbols
            best = min(pairs, key=ranks.get)
            out, i = [], 0
            while i < len(symbols):
                if i < len(symbols) - 1 and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            symbols = tuple(out)

    for sentence in ["Once upon a time there was a cat", "the the the", "there was time", "upon"]:
        expected = [t for w in sentence.split() for t in tutorial_word(w)]
        assert tok.tokenize(sentence) == expected
        assert tok.decode(tok.encode(sentence)) == sentence


@pytest.fixture(scope="module")
def training_text(corpus_texts):
    return corpus_texts["shakespeare"][:400_000] + corpus_texts["multilingual"] + corpus_texts["stdlib"][:200_000]


def test_parity_with_hf_trained_merges(corpus_texts, training_text, tmp_path):
    hb = Tokenizer(hm.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    hb.pre_tokenizer = hp.Whitespace()
    hb.train_from_iterator([training_text], trainers.BpeTrainer(vocab_size=4000, end_of_word_suffix="</w>",
                                                                special_tokens=["<pad>", "<unk>", "<bos>", "<eos>"],
                                                                show_progress=False))
    hb.model.save(str(tmp_path))
    ours = tf.CharBPETokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    texts = dict(corpus_texts, stdlib_non_ascii=non_ascii_stdlib_lines())
    for name, text in texts.items():
        assert ours.encode(text) == hb.encode(text).ids, name
        lines = text.splitlines()[:3000]
        assert ours.encode_batch(lines) == [e.ids for e in hb.encode_batch(lines)], name


def test_parity_with_hf_own_merges(corpus_texts, training_text, tmp_path):
    ours = tf.CharBPETokenizer.train([training_text], vocab_size=3000)
    ours.save_vocab_merges(tmp_path)
    theirs = hf_from_files(tmp_path)
    assert theirs.get_vocab() == ours.vocab
    for name, text in corpus_texts.items():
        assert ours.encode(text) == theirs.encode(text).ids, name
    # and the files read back into tokenforge give the same tokenizer
    back = tf.CharBPETokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert back.model.merges == ours.model.merges
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == ours.vocab


def test_parity_with_hf_custom_suffix(tmp_path):
    text = "the quick brown fox jumps over the lazy dog " * 50 + "quickly jumping foxes"
    ours = tf.CharBPETokenizer.train([text], vocab_size=80, end_of_word="</eow>")
    ours.save_vocab_merges(tmp_path)
    theirs = hf_from_files(tmp_path, suffix="</eow>")
    probe = "the quickest foxes jump over lazy dogs, quickly! zebra"
    assert ours.encode(probe) == theirs.encode(probe).ids


def test_start_of_word_marker():
    text = "low lower lowest newer newest " * 10
    for attach in (True, False):
        tok = tf.CharBPETokenizer.train([text], vocab_size=60, start_of_word="<w>", end_of_word=None, attach_markers=attach)
        assert tok.decode(tok.encode("lowest newer low")) == "lowest newer low"
        assert all(t.startswith("<w>") for t in [tok.tokenize(w)[0] for w in ("low", "newer")])
        both = tf.CharBPETokenizer.train([text], vocab_size=60, start_of_word="<w>", attach_markers=attach)
        assert both.decode(both.encode("lowest newer low")) == "lowest newer low"


@st.composite
def counts_and_words(draw):
    alphabet = "abcd<>/w"
    counts = draw(st.dictionaries(st.text(alphabet, min_size=1, max_size=7), st.integers(1, 30), min_size=1, max_size=12))
    words = draw(st.lists(st.text(alphabet + "z", min_size=1, max_size=15), max_size=10))
    return counts, words


@settings(max_examples=200, deadline=None)
@given(counts_and_words(), st.integers(10, 60), st.booleans(), st.sampled_from([None, "<w>"]))
def test_native_equals_reference(cw, vocab_size, attach, start):
    counts, words = cw
    kwargs = dict(vocab_size=vocab_size, attach_markers=attach, start_of_word=start)
    m = models.CharBPE.train_from_counts(counts, **kwargs)
    ref = models.CharBPE.train_from_counts(counts, native=False, **kwargs)
    assert m.merges == ref.merges and m.vocab == ref.vocab  # the trainers
    assert m.encode_words(words) == m.encode_words_reference(words)  # the merge loops
    # Markers typed in the text: never inside a learned token except as the marker itself.
    for t in m.vocab:
        if t not in m.special_tokens:
            body = t[: -len("</w>")] if t.endswith("</w>") else t
            body = body[len(start):] if start and body.startswith(start) else body
            assert "</w>" not in body and (start is None or start not in body)


def test_markers_and_special_tokens_typed_in_the_text():
    text = "a</w>b </w> <unk> <pad></w>"
    tok = tf.CharBPETokenizer.train([text * 30], vocab_size=200, pre_tokenizer="whitespace_split")
    ids = tok.encode(text)
    assert tok.model.unk_id not in ids and tok.token_to_id("<pad>") not in ids
    assert tok.decode(ids) == text  # exact: the literal markers are characters
    only_markers = "</w></w> </w>"
    assert tok.decode(tok.encode(only_markers)) == only_markers


def test_bad_input():
    tok = tf.CharBPETokenizer.train(["hello world"], vocab_size=30)
    assert tok.encode("") == [] and tok.encode("   \n\t ") == [] and tok.decode([]) == ""
    ids = tok.encode("hello ωorld")
    unk = tok.model.unk_id
    assert ids.count(unk) == 1
    assert tok.decode(ids) == "hello <unk>orld"  # documented: the unknown character shows as <unk>
    # an unknown last character also hides the end-of-word marker (as in HF): the space is lost
    assert tok.decode(tok.encode("hellω world")) == "hell<unk>world"
    assert tok.encode("hello\ud800") == tok.encode("hello\ufffd")
    strict = tf.CharBPETokenizer.train(["hello world"], vocab_size=30, unk_token=None)
    with pytest.raises(ValueError, match="'ω' is not in the vocabulary"):
        strict.encode("ωmega")
    with pytest.raises(ValueError, match="'ω'"):
        strict.encode_batch(["hello", "ωmega"])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        models.CharBPE({"a": 0, "<unk>": 1}, [("a", "b")])
    with pytest.raises(TypeError):
        tok.encode(None)
    with pytest.raises(tf.UnknownTokenError):
        tok.decode([10**6])


def test_long_word_without_pre_tokenizer():
    tok = tf.CharBPETokenizer.train(["ab" * 50], vocab_size=20, pre_tokenizer=None)
    text = "ab" * 200_000
    ids = tok.encode(text)  # one 400,000-character word: the heap merge loop, O(n log n)
    assert tok.decode(ids) == text
    assert len(ids) < len(text) // 4
    small = "ab" * 300 + "a"
    assert tok.encode(small) == tok.encode_reference(small)


def test_save_load_and_files(tmp_path):
    tok = tf.CharBPETokenizer.train(["the cat sat on the mat"] * 5, vocab_size=40, end_of_word="</eow>",
                                    normalizer=tf.normalizers.Lowercase(), post_processor=tf.post_processors.bos_eos())
    tok.save(tmp_path / "t.json")
    back = tf.load(tmp_path / "t.json")
    assert type(back) is tf.CharBPETokenizer and back.model.end_of_word == "</eow>"
    assert back.encode("The Cat") == tok.encode("The Cat")
    assert back.encode("The Cat")[0] == tok.token_to_id("<bos>")
    assert back.decode(back.encode("The Cat")) == "the cat"  # documented: the normalizer lowercased
    obj = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert obj["format"] == "tokenforge" and obj["model"] == "char_bpe" and obj["normalizer"] == {"type": "Lowercase"}
    obj["merges"][0] = ["zz", "qq"]
    (tmp_path / "bad.json").write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json"):
        tf.load(tmp_path / "bad.json")


@pytest.fixture(scope="module")
def small_tokenizers(corpus_texts):
    text = corpus_texts["shakespeare"][:100_000] + corpus_texts["multilingual"]
    return [
        tf.CharBPETokenizer.train([text], vocab_size=600),
        tf.CharBPETokenizer.train([text], vocab_size=600, attach_markers=False, end_of_word="</eow>", start_of_word="<w>",
                                  pre_tokenizer="bert"),
        tf.WordPieceTokenizer.train([text], vocab_size=600),
        tf.WordPieceTokenizer.train([text], vocab_size=600, normalizer=None, pre_tokenizer="whitespace_split"),
    ]


@settings(max_examples=150, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=80) | st.text("abcdeé ,.!\n\t'", max_size=80))
def test_pipeline_native_equals_reference(small_tokenizers, text):
    # native splitter + native model == regex splitter + Python model, through encode and the batch
    for tok in small_tokenizers:
        expected = tok.encode_reference(text)
        assert tok.encode(text) == expected
        assert tok.encode_batch([text, text]) == [expected, expected]


TUTORIAL_004 = [
    "The model’s performance improved slightly after fine-tuning on domain-specific data.",
    "A lightweight transformer can often outperform larger models when properly optimized.",
    "Experimental results show that scaling depth contributes more to coherence than width.",
    "Future work could explore hybrid architectures combining attention with retrieval mechanisms.",
]


def test_tutorial_004_start_and_end_markers():
    # seeds/004: words split on ' ', symbols <|sos|> + characters + <|eos|>, 15 merges, each the most
    # frequent pair at its step (the tutorial breaks ties by first occurrence, tokenforge by text).
    sos, eos = "<|sos|>", "<|eos|>"
    splits = {}
    for doc in TUTORIAL_004:
        for word in doc.split(" "):
            key = (sos, *word, eos)
            splits[key] = splits.get(key, 0) + 1
    alphabet = {s for w in splits for s in w}
    tok = tf.CharBPETokenizer.train(TUTORIAL_004, vocab_size=4 + len(alphabet) + 15, start_of_word=sos, end_of_word=eos,
                                    attach_markers=False, pre_tokenizer="whitespace_split")
    assert len(tok.model.merges) == 15 and tok.model.merges[0] == ("e", "r")  # 8 times: the tutorial's first merge too
    for first, second in tok.model.merges:  # replay with the tutorial's own get_pairs / merge_pair
        pairs = {}
        for word, freq in splits.items():
            for p in zip(word, word[1:]):
                pairs[p] = pairs.get(p, 0) + freq
        assert pairs[(first, second)] == max(pairs.values())
        new = {}
        for word, freq in splits.items():
            out, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and (word[i], word[i + 1]) == (first, second):
                    out.append(first + second)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            new[tuple(out)] = freq
        splits = new
    assert tok.decode(tok.encode(TUTORIAL_004[0])) == TUTORIAL_004[0]


def test_parity_with_hf_many_unknown_characters(corpus_texts, tmp_path):
    # Merges from English only, then multilingual text and code: thousands of <unk>, same ids as HF,
    # with a normalizer stage on both sides.
    from tokenizers import normalizers as hn

    ours = tf.CharBPETokenizer.train([corpus_texts["shakespeare"][:300_000]], vocab_size=1500,
                                     normalizer=[tf.normalizers.NFKC(), tf.normalizers.Lowercase()])
    ours.save_vocab_merges(tmp_path)
    theirs = hf_from_files(tmp_path)
    theirs.normalizer = hn.Sequence([hn.NFKC(), hn.Lowercase()])
    for name in ("multilingual", "stdlib"):
        text = corpus_texts[name][:300_000]
        ids = ours.encode(text)
        assert ids.count(ours.model.unk_id) > 100, name
        assert ids == theirs.encode(text).ids, name


def test_native_vocabulary_check_and_lazy_id_table():
    # vocab_checked: what vocab_by_id accepts, without the reversed dict (made on first use)
    assert _core.vocab_checked({"a": 0, "b": 1})
    assert not _core.vocab_checked({"a": 0, "b": 0})  # an id twice (dense ids: the bit table)
    assert _core.vocab_checked({"a": 0, "b": 2**32 - 2})  # a huge id: sorted, no bit per id below it
    assert not _core.vocab_checked({"a": 2**32 - 2, "b": 2**32 - 2})
    for bad in ({"a": 2**32 - 1}, {"a": -1}, {"": 0}, {"a": True}, {"a": 1.0}, {1: 0}):
        assert not _core.vocab_checked(bad), bad
    m = models.CharBPE({"<unk>": 0, "a": 1, "b": 2, "ab": 3}, [("a", "b")], end_of_word=None, unk_token="<unk>")
    assert "_by_id" not in vars(m)  # not made by loading
    assert [m.id_to_token(i) for i in range(5)] == ["<unk>", "a", "b", "ab", None]
    with pytest.raises(ValueError, match="same id"):
        models.CharBPE({"<unk>": 0, "a": 1, "b": 1}, [], end_of_word=None, unk_token="<unk>")


def test_text_merges_read_natively():
    vocab = {"a": 0, "b": 1, "ab": 2, "é": 3, "éab": 4}
    rules = _core.text_bpe_merges(["a b", ["é", "ab"]], vocab)
    assert list(memoryview(rules).cast("I")) == [0, 1, 2, 3, 2, 4]
    assert _core.text_bpe_merges(["a b", "a b"], vocab) is not None  # hf_stages: the first rank is kept
    assert _core.text_bpe_merges(["a b", "a b"], vocab, unique=True) is None  # hf_families names it
    for bad in (["a  b"], ["a b c"], [" ab"], ["ab"], ["a x"], [["a"]], [["a", ""]], [3]):
        assert _core.text_bpe_merges(bad, vocab) is None, bad


def test_a_model_made_from_a_files_merges_equals_one_made_from_pairs():
    # CharBPE.from_text_merges (the merges looked up in the native model's own table of tokens)
    # against the model made from (left, right) pairs, and None where the Python reader must name
    # the problem
    vocab = {"[UNK]": 0, "a": 1, "b": 2, "é": 3, "ab": 4, "éab": 5, "ab</w>": 6, "b</w>": 7}
    merges = ["a b", ["é", "ab"], "a b</w>"]
    made = models.CharBPE.from_text_merges(vocab, merges, end_of_word="</w>", unk_token="[UNK]", special_tokens=[],
                                           drop_unknown=True)
    plain = models.CharBPE(vocab, [("a", "b"), ("é", "ab"), ("a", "b</w>")], end_of_word="</w>", unk_token="[UNK]",
                           special_tokens=[])
    assert made.merges == plain.merges
    words = ["ab", "éab", "ba", "éabab", "x", "b"]
    assert made.encode_words(words) == plain.encode_words(words) == [i for w in words for i in plain.encode_word_reference(w)]
    assert made.encode_words(["éab"]) == [3, 6]  # é + ab</w>: the rule ('a', 'b</w>') first
    for bad in (["a b", "a b"], ["a x"], ["a  b"], [["a"]], [3]):
        assert models.CharBPE.from_text_merges(vocab, bad, end_of_word="</w>", unk_token="[UNK]", special_tokens=[],
                                               drop_unknown=True) is None, bad
