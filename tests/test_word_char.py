"""Word- and character-level tokenizers, post-processing, padded numpy batches, training from files
and iterables, tokenforge's file for every model, and the modules' documentation examples."""

import doctest
import importlib
import json
import pickle

import numpy as np
import pytest

import tokenforge as tf
from tokenforge import models, post_processors


def test_word_level_training_rules():
    text = "the cat sat on the mat the end"
    tok = tf.WordTokenizer.train([text], min_frequency=1)
    assert tok.id_to_token(4) == "the"  # most frequent first, after the 4 special tokens
    assert [tok.id_to_token(i) for i in range(5, 10)] == ["cat", "end", "mat", "on", "sat"]  # ties: text order
    assert tok.encode("the dog sat") == [4, 1, 9]
    assert tok.decode(tok.encode("the dog sat")) == "the <unk> sat"  # documented: unknown word shows as <unk>
    capped = tf.WordTokenizer.train([text], vocab_size=6)
    assert capped.vocab_size == 6 and capped.encode("cat") == [5]
    frequent = tf.WordTokenizer.train([text], min_frequency=2)
    assert frequent.encode("the cat") == [4, 1]


def test_word_level_equals_hf(corpus_texts):
    from tokenizers import Tokenizer
    from tokenizers import models as hm
    from tokenizers import pre_tokenizers as hp

    tok = tf.WordTokenizer.train([corpus_texts["shakespeare"]], vocab_size=5000)
    hf = Tokenizer(hm.WordLevel(tok.vocab, unk_token="<unk>"))
    hf.pre_tokenizer = hp.Whitespace()
    for name, text in corpus_texts.items():
        assert tok.encode(text) == hf.encode(text).ids, name


def test_char_level_round_trip_and_unk():
    tok = tf.CharTokenizer.train(["hello world\n"], min_frequency=1)
    text = "hello\n  world "
    assert tok.decode(tok.encode(text)) == text  # exact: spaces and newlines are characters
    assert tok.decode(tok.encode("hallo")) == "h<unk>llo"
    assert tok.encode("") == [] and tok.decode([]) == ""
    assert tok.id_to_token(4) == "l"  # most frequent first
    capped = tf.CharTokenizer.train(["aaab"], vocab_size=5)
    assert capped.encode("ab") == [4, 1]


def test_train_from_files_and_iterables(tmp_path):
    (tmp_path / "a.txt").write_text("low lower lowest\n" * 50, encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(b"newer newest \xff\n" * 50)  # invalid UTF-8: replaced, not fatal
    from_files = tf.CharBPETokenizer.train(files=[tmp_path / "a.txt", str(tmp_path / "b.txt")], vocab_size=50)
    lines = (tmp_path / "a.txt").read_text().splitlines(keepends=True) + ["newer newest \ufffd\n"] * 50
    from_iter = tf.CharBPETokenizer.train((line for line in lines), vocab_size=50)
    assert from_files.vocab == from_iter.vocab and from_files.model.merges == from_iter.model.merges
    with open(tmp_path / "a.txt", encoding="utf-8") as fh:
        assert tf.WordTokenizer.train(fh).encode("lowest") == [6]
    with pytest.raises(TypeError):
        tf.CharBPETokenizer.train("a single string is not a list of texts")


def test_templates_and_padded_batches():
    tok = tf.WordTokenizer.train(["a b c d e"], post_processor=post_processors.bos_eos())
    bos, eos, pad = tok.token_to_id("<bos>"), tok.token_to_id("<eos>"), tok.token_to_id("<pad>")
    a, b, c = tok.token_to_id("a"), tok.token_to_id("b"), tok.token_to_id("c")
    assert tok.encode("a b") == [bos, a, b, eos]
    assert tok.encode("a b", add_special_tokens=False) == [a, b]
    assert tok.decode(tok.encode("a b")) == "a b"
    assert tok.decode(tok.encode("a b"), skip_special_tokens=False) == "<bos> a b <eos>"
    assert tok.encode_batch(["a", "a b c"]) == [[bos, a, eos], [bos, a, b, c, eos]]

    ids, mask = tok.encode_batch(["a", "a b c"], padding=True)
    assert ids.dtype == np.int64 and mask.dtype == np.int64
    assert ids.tolist() == [[bos, a, eos, pad, pad], [bos, a, b, c, eos]]
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    batch = tok.encode_batch(["a", "a b c"], padding="max_length", truncation=True, max_length=4)
    assert batch.ids.tolist() == [[bos, a, eos, pad], [bos, a, b, eos]]  # the template survives truncation
    assert batch.attention_mask.tolist() == [[1, 1, 1, 0], [1, 1, 1, 1]]
    assert tok.decode(batch.ids[0]) == "a"
    with pytest.raises(ValueError, match="truncation"):
        tok.encode_batch(["a b c"], padding=True, max_length=3)
    with pytest.raises(ValueError, match="max_length"):
        tok.encode_batch(["a"], truncation=True)
    with pytest.raises(ValueError, match="template"):
        tok.encode_batch(["a"], truncation=True, max_length=1)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tf.WordTokenizer(tok.model, post_processor=post_processors.cls_sep())


def test_wordpiece_cls_sep_batch():
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s"])}
    tok = tf.WordPieceTokenizer(models.WordPiece(vocab), post_processor=post_processors.cls_sep())
    ids, mask = tok.encode_batch(["Hello worlds", "hello"], padding="longest")
    assert ids.tolist() == [[2, 5, 6, 7, 3], [2, 5, 3, 0, 0]]
    assert tok.decode(ids[0]) == "hello worlds" and tok.decode(ids[1]) == "hello"


@pytest.mark.parametrize("make", [
    lambda: tf.CharBPETokenizer.train(["Hello world, hello tokens"] * 3, vocab_size=40, start_of_word="<w>"),
    lambda: tf.WordPieceTokenizer.train(["Hello world, hello tokens"] * 3, vocab_size=40),
    lambda: tf.WordTokenizer.train(["Hello world, hello tokens"], normalizer=tf.normalizers.Lowercase(),
                                   post_processor=post_processors.bos_eos()),
    lambda: tf.CharTokenizer.train(["Hello world"], normalizer=[tf.normalizers.NFKC(), tf.normalizers.CollapseWhitespace()]),
], ids=["char_bpe", "wordpiece", "word", "char"])
def test_save_load_every_model(tmp_path, make):
    tok = make()
    tok.save(tmp_path / "tok.json")
    obj = json.loads((tmp_path / "tok.json").read_text(encoding="utf-8"))
    assert obj["format"] == "tokenforge" and obj["version"] == 1 and obj["model"] == tok.model.kind
    back = tf.load(tmp_path / "tok.json")
    assert type(back) is type(tok) and back.vocab == tok.vocab
    assert back.normalizer == tok.normalizer and back.pre_tokenizer == tok.pre_tokenizer
    for text in ["Hello tokens", "hello  world\n", "", "zzz ÿ", "Hello, world"]:
        assert back.encode(text) == tok.encode(text)
        assert back.decode(back.encode(text)) == tok.decode(tok.encode(text))
    assert pickle.loads(pickle.dumps(tok)).encode("Hello world") == tok.encode("Hello world")
    with pytest.raises(TypeError, match="overrides"):
        tf.load(tmp_path / "tok.json", name="x")
    obj["model"] = "nope"
    (tmp_path / "bad.json").write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown model"):
        tf.load(tmp_path / "bad.json")


def test_byte_level_files_still_load(tmp_path):
    enc = tf.Tokenizer.from_ranks({bytes([i]): i for i in range(256)} | {b"ab": 256}, pattern="gpt2")
    enc.save(tmp_path / "b.json")
    assert tf.load(tmp_path / "b.json").encode("abc") == [256, 99]


@pytest.mark.parametrize("module", ["normalizers", "pre_tokenizers", "post_processors", "pipeline", "decoders", "pre_tokenizers.split",
                                    "pre_tokenizers.byte_level", "pre_tokenizers.words", "models.bpe", "models.byte_bpe", "models.wordpiece",
                                    "models.char_bpe", "models.word", "models.char"])
def test_documentation_examples(module):
    m = importlib.import_module(f"tokenforge.{module}")
    result = doctest.testmod(m, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_lone_surrogates_in_training_and_encoding():
    for cls in (tf.WordTokenizer, tf.CharBPETokenizer, tf.WordPieceTokenizer, tf.CharTokenizer):
        tok = cls.train(["a\ud800 b", "x\udfff"])
        assert tok.encode("a\ud800 b") == tok.encode("a\ufffd b")
        assert tok.encode_batch(["a\ud800 b"]) == [tok.encode("a\ufffd b")]
        assert tok.model.unk_id not in tok.encode("a\ud800 b")  # U+FFFD was learned from the training text
