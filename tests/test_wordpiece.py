"""WordPiece: HF parity on real text, the native trie walk against the Python reference, training
with the WordPiece score (native trainer against the reference), BERT vocab.txt, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge as tf
from tokenforge import models, normalizers

hf = pytest.importorskip("tokenizers")
from tokenizers import Tokenizer, decoders  # noqa: E402
from tokenizers import models as hm  # noqa: E402
from tokenizers import normalizers as hn  # noqa: E402
from tokenizers import pre_tokenizers as hp  # noqa: E402
from tokenizers import trainers  # noqa: E402

BERT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def hf_wordpiece(vocab, *, lowercase=True, strip_accents=None):
    t = Tokenizer(hm.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    t.normalizer = hn.BertNormalizer(lowercase=lowercase, strip_accents=strip_accents)
    t.pre_tokenizer = hp.BertPreTokenizer()
    t.decoder = decoders.WordPiece()
    return t


@pytest.fixture(scope="module")
def training_text(corpus_texts):
    return corpus_texts["shakespeare"][:400_000] + corpus_texts["multilingual"] + corpus_texts["stdlib"][:200_000]


@pytest.fixture(scope="module")
def hf_vocab(training_text):
    """A realistic WordPiece vocabulary (HF's trainer), with many ## pieces and multilingual text."""
    t = Tokenizer(hm.WordPiece(unk_token="[UNK]"))
    t.normalizer = hn.BertNormalizer(lowercase=False)
    t.pre_tokenizer = hp.BertPreTokenizer()
    t.train_from_iterator([training_text], trainers.WordPieceTrainer(vocab_size=4000, special_tokens=BERT, show_progress=False))
    return t.get_vocab()



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

def test_golden_unaffable():
    wp = models.WordPiece({"[UNK]": 0, "un": 1, "##aff": 2, "##able": 3, "aff": 4, "##a": 5})
    assert wp.encode_words(["unaffable"]) == [1, 2, 3]
    assert wp.encode_words(["affable"]) == [4, 3]
    assert wp.encode_words(["unaffablex"]) == [0]  # no piece for "x": the whole word is [UNK]
    assert wp.encode_words(["xunaffable"]) == [0]
    assert wp.encode_words([]) == []


@pytest.mark.parametrize("lowercase,strip_accents", [(True, None), (False, None), (False, True)])
def test_parity_with_hf_on_corpora(corpus_texts, hf_vocab, lowercase, strip_accents):
    ours = tf.WordPieceTokenizer(models.WordPiece(hf_vocab),
                                 normalizer=normalizers.BertNormalizer(lowercase=lowercase, strip_accents=strip_accents))
    theirs = hf_wordpiece(hf_vocab, lowercase=lowercase, strip_accents=strip_accents)
    texts = dict(corpus_texts, stdlib_non_ascii=non_ascii_stdlib_lines())
    for name, text in texts.items():
        expected = theirs.encode(text).ids
        assert ours.encode(text) == expected, name
        # and line by line, through the batch path
        lines = text.splitlines()[:3000]
        assert ours.encode_batch(lines) == [e.ids for e in theirs.encode_batch(lines)], name


def test_parity_with_hf_own_trained_vocab(corpus_texts, training_text):
    ours = tf.WordPieceTokenizer.train([training_text], vocab_size=3000)
    theirs = hf_wordpiece(ours.vocab)
    for name, text in corpus_texts.items():
        assert ours.encode(text) == theirs.encode(text).ids, name


def test_decode_matches_hf(corpus_texts, hf_vocab):
    ours = tf.WordPieceTokenizer(models.WordPiece(hf_vocab), normalizer=normalizers.BertNormalizer(lowercase=False))
    theirs = hf_wordpiece(hf_vocab, lowercase=False)
    for line in corpus_texts["shakespeare"].splitlines()[:2000] + corpus_texts["multilingual"].splitlines():
        ids = ours.encode(line)
        assert ours.decode(ids) == theirs.decode(ids), line


def test_max_input_chars_per_word():
    vocab = {"[UNK]": 0, "a": 1, "##a": 2}
    tok = tf.WordPieceTokenizer(models.WordPiece(vocab), normalizer=None)
    assert tok.encode("a" * 100) == [1] + [2] * 99
    assert tok.encode("a" * 101) == [0]
    assert tok.encode("é" * 101) == [0]  # characters, not bytes
    short = tf.WordPieceTokenizer(models.WordPiece(vocab, max_input_chars_per_word=3), normalizer=None)
    assert short.encode("aaa aaaa") == [1, 2, 2, 0]


def test_bad_input():
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "h": 4, "##i": 5, "hi": 6, "[": 7, "]": 8, "unk": 9}
    tok = tf.WordPieceTokenizer(models.WordPiece(vocab))
    assert tok.encode("") == []
    assert tok.encode(" \t\n\u3000 ") == []
    assert tok.encode("hi ☃ hi") == [6, 1, 6]  # unknown character: that word is [UNK]
    assert tok.decode(tok.encode("hi ☃ hi")) == "hi [UNK] hi"  # documented loss: the word itself
    # A special token typed in the text is text (BERT's pre-tokenizer splits the brackets).
    assert tok.encode("[UNK]") == [7, 9, 8]
    # Without the pre-tokenizer, a literal "[UNK]" word is not matched as the special token.
    raw = tf.WordPieceTokenizer(models.WordPiece(vocab), normalizer=None, pre_tokenizer="whitespace_split")
    assert raw.encode("[UNK]") == [1]
    assert raw.encode("hi\ud800") == [1]  # a lone surrogate becomes U+FFFD, unknown
    with pytest.raises(TypeError):
        tok.encode(b"hi")
    with pytest.raises(ValueError, match="unknown token"):
        models.WordPiece({"a": 0})


@st.composite
def vocab_and_words(draw):
    alphabet = "abcdé"
    pieces = draw(st.sets(st.text(alphabet, min_size=1, max_size=4), min_size=1, max_size=25))
    cont = draw(st.sets(st.text(alphabet, min_size=1, max_size=4), max_size=25))
    tokens = ["[UNK]"] + sorted(pieces) + sorted("##" + c for c in cont)
    words = draw(st.lists(st.text(alphabet + "#", min_size=0, max_size=12), max_size=20))
    return {t: i for i, t in enumerate(tokens)}, words, 10


@st.composite
def long_vocab_and_words(draw):
    """Tokens past 8 bytes sharing long prefixes, with NUL characters (the native trie is built
    from the sorted keys, comparing their first 8 bytes as one zero-padded integer first)."""
    alphabet = "a\x00bé"
    stems = draw(st.lists(st.text(alphabet, min_size=6, max_size=10), min_size=1, max_size=4))
    pieces = draw(st.sets(st.tuples(st.sampled_from(stems), st.text(alphabet, max_size=4)), min_size=1, max_size=30))
    tokens = ["[UNK]"] + sorted({s + t for s, t in pieces}) + sorted({"##" + t for _, t in pieces if t})
    words = draw(st.lists(st.tuples(st.sampled_from(stems), st.text(alphabet, max_size=14)).map("".join), max_size=20))
    return {t: i for i, t in enumerate(tokens)}, words, 40


@settings(max_examples=600, deadline=None)
@given(st.one_of(vocab_and_words(), long_vocab_and_words()))
def test_native_equals_reference(vw):
    vocab, words, max_chars = vw
    wp = models.WordPiece(vocab, max_input_chars_per_word=max_chars)
    assert wp.encode_words(words) == wp.encode_words_reference(words)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text("abcd#", min_size=1, max_size=8), st.integers(1, 20), max_size=15), st.integers(5, 40))
def test_trainer_native_equals_reference(counts, vocab_size):
    a = models.WordPiece.train_from_counts(counts, vocab_size=vocab_size)
    b = models.WordPiece.train_from_counts(counts, vocab_size=vocab_size, native=False)
    assert a.vocab == b.vocab


def test_training_uses_the_wordpiece_score():
    # pairs: (h,##u) 10 times; (x,##y) 3 times but x and ##y occur nowhere else: score 3/(3*3) = 1/3
    # beats 10/(10*30) = 1/30 (## u appears in "uu" words too), although the count is lower.
    counts = {"hu": 10, "xy": 3, "uuu": 10}
    wp = models.WordPiece.train_from_counts(counts, vocab_size=len(BERT) + 5 + 1)
    assert wp.id_to_token(len(BERT) + 5) == "xy"  # the first (and only) merge
    # The plain count would have chosen ##u##u (20) or hu (10).


def test_vocab_txt_round_trip(tmp_path, hf_vocab):
    wp = models.WordPiece(hf_vocab)
    wp.save_vocab_file(tmp_path / "vocab.txt")
    back = tf.WordPieceTokenizer.from_vocab_file(tmp_path / "vocab.txt", lowercase=False)
    assert back.vocab == hf_vocab
    # HF reads the same file to the same ids
    theirs = Tokenizer(hm.WordPiece.from_file(str(tmp_path / "vocab.txt"), unk_token="[UNK]"))
    theirs.normalizer = hn.BertNormalizer(lowercase=False)
    theirs.pre_tokenizer = hp.BertPreTokenizer()
    text = "Größe naïve unbelievable 東京 ¿Qué?"
    assert back.encode(text) == theirs.encode(text).ids


def test_vocab_txt_errors(tmp_path):
    (tmp_path / "v.txt").write_text("[UNK]\r\nhello\r\n##s\r\n", encoding="utf-8")
    assert models.WordPiece.from_vocab_file(tmp_path / "v.txt").vocab == {"[UNK]": 0, "hello": 1, "##s": 2}
    (tmp_path / "v.txt").write_text("[UNK]\n\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: empty"):
        models.WordPiece.from_vocab_file(tmp_path / "v.txt")
    (tmp_path / "v.txt").write_text("[UNK]\na\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 3"):
        models.WordPiece.from_vocab_file(tmp_path / "v.txt")


def test_save_load(tmp_path, hf_vocab):
    tok = tf.WordPieceTokenizer(models.WordPiece(hf_vocab), post_processor=tf.post_processors.cls_sep())
    tok.save(tmp_path / "wp.json")
    back = tf.load(tmp_path / "wp.json")
    assert type(back) is tf.WordPieceTokenizer
    text = "Hello, World! Straße 東京"
    assert back.encode(text) == tok.encode(text)
    assert back.encode(text)[0] == hf_vocab["[CLS]"] and back.encode(text)[-1] == hf_vocab["[SEP]"]
