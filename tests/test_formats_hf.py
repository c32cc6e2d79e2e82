"""Hugging Face tokenizer.json both ways: files built by the `tokenizers` package itself (GPT-2 from
../shared/vocab, Llama-3-style ones trained here), identical ids to `tokenizers` on real text, and an
error naming the JSON path for every component tokenforge does not reproduce."""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import patterns
from tokenforge import formats
from tokenforge.formats import huggingface
from tokenforge.formats._common import UnsupportedComponent

hf = pytest.importorskip("tokenizers")
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

LLAMA3 = huggingface.LLAMA3
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>"]
EDGE = ["", "a  \n  ", "x \n\n  y   \n", "1234567", " \t\n", "a" * 300, "ab" * 200, "\u00a0\u00a0x", "'S'LL'Re",
        "🇩🇪🇯🇵", "\r\n\r\n", "Hello\u2003World\u3000!", "ﬁne ① ２０２４ Ⅻ ½ ℌ", "e\u0301 a\u0308\u0301 \u212b",
        "<|end_of_text|>\u0338", "<|begin_of_text|>hi<|end_of_text|>", "x<|end_of_text|><|end_of_text|>y"]


def samples(corpus_texts, limit=150_000):
    return [t[:limit] for t in corpus_texts.values()] + EDGE


def assert_same_ids(tok, hf_tok, texts, *, specials=True):
    for text in texts:
        expected = hf_tok.encode(text, add_special_tokens=False).ids
        got = tok.encode(text, allowed_special="all") if specials else tok.encode_ordinary(text)
        if expected != got:
            i = next((i for i, (x, y) in enumerate(zip(expected, got)) if x != y), min(len(expected), len(got)))
            pytest.fail(f"first difference at token {i} of {text[:40]!r}...: tokenizers {expected[i:i + 5]}, "
                        f"tokenforge {got[i:i + 5]} ({tok.decode(got[max(0, i - 3):i + 3])!r})")


def write(tmp_path, obj, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------
# Files made by `tokenizers`


@pytest.fixture(scope="module")
def gpt2_json(shared_dir):
    """GPT-2 as Hugging Face ships it: ByteLevel pre-tokenizer, post-processor and decoder, and
    <|endoftext|> both in the vocab and as a `normalized` added token."""
    bpe = models.BPE.from_file(str(shared_dir / "vocab" / "gpt2_vocab.json"), str(shared_dir / "vocab" / "gpt2_merges.txt"))
    t = hf.Tokenizer(bpe)
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens(["<|endoftext|>"])
    obj = json.loads(t.to_str())
    obj["added_tokens"][0]["normalized"] = True
    return obj


@pytest.fixture(scope="module")
def small_json(gpt2_json):
    """GPT-2 cut to its bytes and first 300 merges, <|endoftext|> an added token outside the vocab."""
    obj = copy.deepcopy(gpt2_json)
    obj["model"]["vocab"] = {s: i for s, i in obj["model"]["vocab"].items() if i < 556}
    obj["model"]["merges"] = obj["model"]["merges"][:300]
    obj["added_tokens"][0].update(id=556, normalized=False)
    return obj


def train_llama_style(text, *, normalizer=True, pattern=LLAMA3, vocab_size=2500, behavior="isolated"):
    t = hf.Tokenizer(models.BPE(ignore_merges=True))
    if normalizer:
        t.normalizer = normalizers.NFKC()
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior=behavior),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=SPECIALS, show_progress=False)
    t.train_from_iterator([text[i:i + 5000] for i in range(0, len(text), 5000)], trainer)
    t.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                                     special_tokens=[("<|begin_of_text|>", t.token_to_id("<|begin_of_text|>"))])
    return t


@pytest.fixture(scope="module")
def training_text(corpus_texts):
    return corpus_texts["taylorswift"][:120_000] + corpus_texts["multilingual"] + corpus_texts["stdlib"][:60_000]


@pytest.fixture(scope="module")
def llama_style(training_text):
    return train_llama_style(training_text)


def test_gpt2_style_import(tmp_path, gpt2_json, corpus_texts):
    path = write(tmp_path, gpt2_json)
    tok = tokenforge.load(path)
    ref = hf.Tokenizer.from_file(str(path))
    assert tok.pattern == patterns.GPT2_ORIGINAL and tok.special_tokens == {"<|endoftext|>": 50256}
    assert tok.normalizer is None and tok.n_vocab == 50257
    assert_same_ids(tok, ref, samples(corpus_texts))
    # and the same tokenizer as tiktoken's gpt2 (whose ids are ranks)
    enc = tokenforge.get_encoding("gpt2")
    assert tok.vocab == enc.vocab and tok.merges == enc.merges
    text = corpus_texts["shakespeare"][:100_000]
    assert tok.encode_ordinary(text) == enc.encode_ordinary(text)
    assert tok.decode(tok.encode_ordinary(text)) == text


def test_llama3_style_import(tmp_path, llama_style, corpus_texts):
    path = write(tmp_path, llama_style.to_str())
    # the whole file, its TemplateProcessing included: tokenizers' encode(text) with add_special_tokens
    whole = tokenforge.load(path)
    for text in samples(corpus_texts)[:50]:
        assert whole.encode(text) == llama_style.encode(text).ids
    tok = tokenforge.load(path, ignore={"post_processor"})
    assert tok.normalizer == "NFKC" and tok.pattern == LLAMA3 and tok._state()["ignore_merges"] is True
    assert tok.special_tokens == {s: i for i, s in enumerate(SPECIALS)}
    assert_same_ids(tok, llama_style, samples(corpus_texts))
    # NFKC really is applied (else the test above could pass on text it does not change)
    assert tok.encode_ordinary("ﬁ①") == tok.encode_ordinary("fi1")


def test_llama3_real_shape(tmp_path, llama_style, corpus_texts):
    # Llama 3's own file: added tokens numbered after model.vocab (not in it), and a post-processor
    # Sequence[ByteLevel, TemplateProcessing]
    obj = json.loads(llama_style.to_str())
    vocab = obj["model"]["vocab"]
    n = len(vocab) - len(SPECIALS)
    obj["model"]["vocab"] = {s: i - len(SPECIALS) for s, i in vocab.items() if s not in SPECIALS}
    for k, t in enumerate(obj["added_tokens"]):
        t["id"] = n + k
    template = obj["post_processor"]
    template["special_tokens"]["<|begin_of_text|>"]["ids"] = [n]
    obj["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}, template]}
    path = write(tmp_path, obj)
    ref = hf.Tokenizer.from_file(str(path))
    assert ref.encode("hi").ids[0] == n and ref.token_to_id("<|end_of_text|>") == n + 1
    whole = tokenforge.load(path)
    assert whole.encode("hi") == ref.encode("hi").ids and whole.encode("hi")[0] == n
    tok = tokenforge.load(path, ignore={"post_processor"})
    assert tok.special_tokens == {s: n + k for k, s in enumerate(SPECIALS)}
    assert_same_ids(tok, ref, samples(corpus_texts, 50_000))


TEXT_ALPHABET = st.sampled_from(list("aAbé \n\t'sS1234.,-_") + ["ﬁ", "①", "２", "e\u0301", "\u0338", "日本", "😀", "\u00a0",
                                                                    "\r\n", "'ll", "<|end_of_text|>", "<|begin_of_text|>"])


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT_ALPHABET, max_size=30).map("".join))
def test_llama3_style_property(llama_loaded, text):
    tok, ref = llama_loaded
    assert tok.encode(text, allowed_special="all") == ref.encode(text, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def llama_loaded(tmp_path_factory, llama_style):
    path = write(tmp_path_factory.mktemp("llama"), llama_style.to_str())
    return tokenforge.load(path, ignore={"post_processor"}), llama_style


def test_ignored_components_load(tmp_path, small_json, corpus_texts):
    obj = copy.deepcopy(small_json)
    obj["decoder"] = None
    obj["truncation"] = {"direction": "Right", "max_length": 512, "strategy": "LongestFirst", "stride": 0}
    obj["padding"] = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
                      "pad_type_id": 0, "pad_token": "!"}
    obj["truncation"]["max_length"] = 40
    # truncation and padding are read and applied, as tokenizers applies them
    full = tokenforge.load(write(tmp_path, obj), ignore=["decoder"])
    theirs = hf.Tokenizer.from_str(json.dumps(obj))
    assert full.truncation == theirs.truncation and full.padding == theirs.padding
    lines = corpus_texts["multilingual"].splitlines()
    assert full.encode_batch(lines, allowed_special="all") == [e.ids for e in theirs.encode_batch(lines)]
    tok = tokenforge.load(write(tmp_path, obj), ignore=["decoder", "truncation", "padding"])
    assert tok.truncation is None and tok.padding is None
    obj["truncation"] = obj["padding"] = None
    assert_same_ids(tok, hf.Tokenizer.from_str(json.dumps(obj)), [corpus_texts["multilingual"]])


@pytest.mark.parametrize("normalizer", [False, True])
@pytest.mark.parametrize("pattern,behavior", [
    (LLAMA3, "isolated"),
    (patterns.O200K, "isolated"),
    (r"\p{L}+|\p{N}", "isolated"),          # leaves gaps: HF keeps them as pieces
    (huggingface.CL100K_HF, "isolated"),    # today's cl100k, written for Oniguruma
])
def test_trained_variants(tmp_path, training_text, corpus_texts, normalizer, pattern, behavior):
    t = train_llama_style(training_text[:60_000], normalizer=normalizer, pattern=pattern, vocab_size=800)
    tok = tokenforge.load(write(tmp_path, t.to_str()), ignore=["post_processor"])
    assert tok.normalizer == ("NFKC" if normalizer else None)
    if pattern == huggingface.CL100K_HF:
        assert tok.pattern == patterns.CL100K  # the native cl100k scanner runs it
    assert_same_ids(tok, t, samples(corpus_texts, 40_000))


def test_split_removed_inverted(tmp_path, training_text, corpus_texts):
    # Removed + invert keeps only the matches: tiktoken's rule, text between matches is dropped.
    t = train_llama_style(training_text[:60_000], normalizer=False, pattern=r"\p{L}+|\p{N}", vocab_size=600)
    obj = json.loads(t.to_str())
    obj["pre_tokenizer"]["pretokenizers"][0].update(behavior="Removed", invert=True)
    t = hf.Tokenizer.from_str(json.dumps(obj))
    tok = tokenforge.load(write(tmp_path, obj), ignore={"post_processor"})
    assert tok.pattern == r"\p{L}+|\p{N}"
    assert tok.encode_ordinary("ab, 12") == tok.encode_ordinary("ab12")
    assert_same_ids(tok, t, samples(corpus_texts, 40_000))


# --------------------------------------------------------------------------------------------------
# Export


def exported(tmp_path, tok):
    path = tmp_path / "out" / "tokenizer.json"
    tok.save(path, format="huggingface")
    return path, hf.Tokenizer.from_file(str(path))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
def test_export_tiktoken_encodings(tmp_path, name, corpus_texts):
    enc = tokenforge.get_encoding(name)
    path, ref = exported(tmp_path, enc)
    assert_same_ids(enc, ref, samples(corpus_texts, 100_000))
    back = tokenforge.load(path)
    assert back.vocab == enc.vocab and back.special_tokens == enc.special_tokens
    text = corpus_texts["stdlib"][:100_000]
    assert back.encode_ordinary(text) == enc.encode_ordinary(text)


def test_export_custom_pattern_and_normalizer(tmp_path, corpus_texts):
    enc = tokenforge.get_encoding("r50k_base")
    for pattern in [r"\p{L}+|\p{N}", huggingface.isolated(r"\p{L}+|\p{N}"), LLAMA3]:
        tok = tokenforge.Tokenizer(pattern=pattern, mergeable_ranks=enc._mergeable_ranks,
                                   special_tokens={"<|endoftext|>": 50256}, normalizer="NFKC")
        path, ref = exported(tmp_path, tok)
        split = json.loads(path.read_text())["pre_tokenizer"]["pretokenizers"][0]
        assert (split["behavior"], split["invert"]) == (("Removed", True) if pattern == r"\p{L}+|\p{N}" else ("Isolated", False))
        assert_same_ids(tok, ref, samples(corpus_texts, 30_000))
        assert tokenforge.load(path).pattern == pattern


def test_export_roundtrip_of_import(tmp_path, llama_style, corpus_texts):
    tok = tokenforge.load(write(tmp_path, llama_style.to_str()), ignore={"post_processor"})
    path, ref = exported(tmp_path, tok)
    assert_same_ids(tok, ref, samples(corpus_texts, 60_000))
    back = tokenforge.load(path)
    assert back._state() == {**tok._state(), "name": back.name}


def test_export_refuses_what_oniguruma_reads_differently(tmp_path):
    # tokenizers' Oniguruma reads "$" as the end of any line, Python's regex as the end of the text
    import regex

    split = pre_tokenizers.Split(Regex("a$"), behavior="isolated")
    assert [p for p, _ in split.pre_tokenize_str("a\nb")] == ["a", "\nb"]
    assert regex.search("a$", "a\nb") is None
    gpt2 = tokenforge.get_encoding("gpt2")
    for pattern in [r"\p{L}+$|\s|.", r"^\s+|\S+|\s", r"\p{N}{1,3}+|\D+"]:
        tok = tokenforge.Tokenizer(pattern=pattern, mergeable_ranks=gpt2._mergeable_ranks)
        with pytest.raises(ValueError, match="cannot write the split pattern .* for tokenizers"):
            tok.save(tmp_path / "tokenizer.json", format="huggingface")
    assert not (tmp_path / "tokenizer.json").exists()


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base"])
def test_transformers_fast_tokenizer(tmp_path, corpus_texts, name):
    transformers = pytest.importorskip("transformers")
    enc = tokenforge.get_encoding(name)
    path, _ = exported(tmp_path, enc)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    for text in samples(corpus_texts, 50_000):
        assert fast.encode(text, add_special_tokens=False) == enc.encode(text, allowed_special="all")
    assert fast.decode(enc.encode("héllo wörld <|endoftext|>", allowed_special="all")) == "héllo wörld <|endoftext|>"


# --------------------------------------------------------------------------------------------------
# What is not supported: an error naming the JSON path, never a different tokenizer


def _set(obj, path, value):
    *parents, last = path
    for p in parents:
        obj = obj[p]
    obj[last] = value


UNSUPPORTED = [
    # (what to change in a GPT-2-style file, expected JSON path in the message, words of the message)
    ((["model", "something_new"], 1), "model.something_new", "unknown field"),
    ((["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}),
     "pre_tokenizer.pretokenizers[0].pattern", "is possessive to Python's regex but a repetition to Oniguruma"),
    ((["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "[^\\s]+|\\s+$|\\s"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}),
     "pre_tokenizer.pretokenizers[0].pattern", "'$' anchors at every line to Oniguruma"),
    ((["truncation"], {"direction": "Right", "max_length": 512, "strategy": "LongestFirst", "stride": -1}),
     "truncation", "non-negative int"),
    ((["added_tokens", 0, "id"], 5), "model.vocab['&']", "id 5 is the added token '<|endoftext|>'"),
    ((["something"], 1), "something", "unknown field"),
]

# Components the reader of common shapes refuses and the general reader (formats/hf_stages.py) reads:
# each changed file loads, with tokenizers' ids and decoding wherever tokenizers itself loads the file.
NOW_READ = [
    ((["model", "type"], "WordPiece"), "model.type", "'WordPiece' is not supported"),
    ((["model", "dropout"], 0.1), "model.dropout", "dropout"),
    ((["model", "continuing_subword_prefix"], "##"), "model.continuing_subword_prefix", "'##' is not supported"),
    ((["model", "end_of_word_suffix"], "</w>"), "model.end_of_word_suffix", "'</w>' is not supported"),
    ((["model", "byte_fallback"], True), "model.byte_fallback", "byte fallback"),
    ((["normalizer"], {"type": "Lowercase"}), "normalizer", "'Lowercase' is not supported"),
    ((["normalizer"], {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip", "strip_left": True, "strip_right": True}]}),
     "normalizer.normalizers[1]", "'Strip' is not supported"),
    ((["pre_tokenizer"], {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}),
     "pre_tokenizer", "'Metaspace' is not supported"),
    ((["pre_tokenizer"], None), "pre_tokenizer", "not a byte-level BPE"),
    ((["pre_tokenizer", "add_prefix_space"], True), "pre_tokenizer.add_prefix_space", "true is not supported"),
    ((["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "MergedWithPrevious", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}),
     "pre_tokenizer.pretokenizers[0]", "behavior 'MergedWithPrevious'"),
    ((["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}),
     "pre_tokenizer.pretokenizers[1].use_regex", "must be false"),
    ((["decoder"], {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}),
     "decoder", "'Metaspace' is not supported"),
    ((["decoder"], None), "decoder", "ignore={'decoder'}"),
    ((["post_processor"], {"type": "BertProcessing", "sep": ["[SEP]", 1], "cls": ["[CLS]", 0]}),
     "post_processor", "'BertProcessing' is not supported"),
    ((["added_tokens", 0, "lstrip"], True), "added_tokens[0].lstrip", "true is not supported"),
]


@pytest.mark.parametrize("change,where,words", NOW_READ, ids=[u[1] + ":" + u[2][:20] for u in NOW_READ])
def test_components_read_as_tokenizers_reads_them(tmp_path, small_json, corpus_texts, change, where, words):
    obj = copy.deepcopy(small_json)
    _set(obj, *change)
    path = write(tmp_path, obj)
    lines = (corpus_texts["multilingual"] + corpus_texts["shakespeare"][:5000]).splitlines() + ["  two  spaces <|endoftext|> x"]
    try:
        ref = hf.Tokenizer.from_file(str(path))
        want = [ref.encode(line).ids for line in lines]
    except BaseException as e:  # tokenizers refuses or panics on the file (pyo3's PanicException)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        ref = None
    if ref is None:
        try:
            tokenforge.load(path).encode_batch(lines)
        except ValueError as e:
            assert str(e).startswith(str(path))
        return
    tok = tokenforge.load(path)
    if change[0] == ["model", "dropout"]:  # random by design: ids differ between calls, the text does not
        assert [tok.decode(tok.encode(line)) for line in lines] == [ref.decode(ref.encode(line).ids) for line in lines]
        return
    assert [tok.encode(line) for line in lines] == want
    assert [tok.decode(ids) for ids in want] == [ref.decode(ids) for ids in want]


@pytest.mark.parametrize("change,where,words", UNSUPPORTED, ids=[u[1] + ":" + u[2][:20] for u in UNSUPPORTED])
def test_unsupported_component_names_its_path(tmp_path, small_json, change, where, words):
    obj = copy.deepcopy(small_json)
    _set(obj, *change)
    path = write(tmp_path, obj)
    with pytest.raises(ValueError) as e:
        tokenforge.load(path)
    assert str(e.value).startswith(f"{path}: {where}: "), str(e.value)
    assert words in str(e.value)


@pytest.mark.parametrize("change,where,words", NOW_READ, ids=[u[1] + ":" + u[2][:20] for u in NOW_READ])
def test_refused_component_is_unsupported_component(tmp_path, small_json, change, where, words):
    # the reader of common shapes says "not mine" by type; formats/__init__.py then tries hf_stages
    obj = copy.deepcopy(small_json)
    _set(obj, *change)
    path = write(tmp_path, obj)
    reader = formats.hf_families if formats.hf_families.handles(obj) else huggingface
    with pytest.raises(UnsupportedComponent) as e:
        reader.load(path, obj)
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith(f"{path}: {where}: ") and words in str(e.value)


@pytest.mark.parametrize("entry", ["Ġ t Ġt", 5, "not supported here"])
def test_broken_file_is_refused_without_fallback(tmp_path, small_json, monkeypatch, entry):
    # a malformed merges entry is the file's fault: a plain ValueError with its reason, and no other
    # reader is tried (the last entry reads like a feature refusal, which matching messages mistook)
    obj = copy.deepcopy(small_json)
    obj["model"]["merges"][0] = entry
    path = write(tmp_path, obj)
    with pytest.raises(ValueError) as e:
        huggingface.load(path, obj)
    assert not isinstance(e.value, UnsupportedComponent)
    assert str(e.value) == f"{path}: model.merges[0]: expected 'left right' or [left, right], got {entry!r}"

    def not_called(*args, **kwargs):
        raise AssertionError("a broken file was sent on to hf_stages")
    monkeypatch.setattr(formats.hf_stages, "load", not_called)
    with pytest.raises(ValueError) as e2:
        tokenforge.load(path)
    assert type(e2.value) is ValueError and str(e2.value) == str(e.value)


def test_normalized_added_token_with_normalizer(tmp_path, small_json, corpus_texts):
    # tokenizers matches a `normalized` added token in the normalized text, by its normalized form
    obj = copy.deepcopy(small_json)
    obj["normalizer"] = {"type": "NFKC"}
    obj["added_tokens"][0]["normalized"] = True
    obj["added_tokens"][0]["content"] = "①"  # NFKC: "1"
    path = write(tmp_path, obj)
    ref = hf.Tokenizer.from_file(str(path))
    tok = tokenforge.load(path)
    for text in ["a 1 b ① c", "11", corpus_texts["multilingual"]]:
        assert tok.encode(text) == ref.encode(text).ids
    obj["added_tokens"][0]["normalized"] = False
    assert tokenforge.load(write(tmp_path, obj)).normalizer == "NFKC"


@pytest.mark.parametrize("forms,result", [
    (["NFC"], "NFC"), (["NFD", "NFKC"], "NFKC"), (["NFKC", "NFD"], "NFKD"), (["NFC", "NFD"], "NFD"), ([], None),
])
def test_normalizer_sequence(tmp_path, small_json, corpus_texts, forms, result):
    obj = copy.deepcopy(small_json)
    obj["normalizer"] = {"type": "Sequence", "normalizers": [{"type": f} for f in forms]}
    path = write(tmp_path, obj)
    tok = tokenforge.load(path)
    assert tok.normalizer == result
    assert_same_ids(tok, hf.Tokenizer.from_file(str(path)), [corpus_texts["multilingual"]] + EDGE)


def test_ignore_is_checked(tmp_path, small_json):
    with pytest.raises(ValueError, match="ignore= may name"):
        tokenforge.load(write(tmp_path, small_json), ignore={"model"})


def test_added_token_numbering(tmp_path, small_json):
    # tokenizers ignores the id of an added token that is not in model.vocab and numbers it itself
    obj = copy.deepcopy(small_json)
    obj["added_tokens"][0]["id"] = 600
    assert hf.Tokenizer.from_str(json.dumps(obj)).token_to_id("<|endoftext|>") == 556
    with pytest.raises(ValueError, match=r"added_tokens\[0\]\.id: 600, but tokenizers numbers '<\|endoftext\|>' 556"):
        tokenforge.load(write(tmp_path, obj))


def test_special_token_reachable_by_ignore_merges(tmp_path, small_json):
    # with ignore_merges, tokenizers looks a whole piece up in model.vocab, added tokens included
    obj = copy.deepcopy(small_json)
    obj["model"]["ignore_merges"] = True
    obj["model"]["vocab"]["hello"] = 556
    obj["added_tokens"][0]["content"] = "hello"
    obj["normalizer"] = {"type": "NFKC"}
    ref = hf.Tokenizer.from_str(json.dumps(obj))
    assert ref.encode("ｈｅｌｌｏ").ids == [556]  # made from text, not from the added token's text
    tok = tokenforge.load(write(tmp_path, obj))
    for text in ["ｈｅｌｌｏ", "hello", "say hello there ｈｅｌｌｏ"]:
        assert tok.encode(text) == ref.encode(text).ids


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZé\u4e2d\u0301 \t\r\n'’1٣.,!?/-_\u00a0\u2028😀sStTdD")), max_size=40))
def test_total_patterns_leave_no_gaps(text):
    # Each pattern read as written (not wrapped in isolated()) must give Isolated's pieces: every
    # character starts a match, so there is no text between matches to keep.
    import regex

    for pattern in huggingface._TOTAL:
        wrapped = huggingface.isolated(pattern)
        assert [m.group() for m in regex.finditer(pattern, text)] == \
            [m.group() for m in regex.finditer(wrapped, text)], (pattern, text)


def test_total_patterns_leave_no_gaps_on_real_text(corpus_texts):
    import regex

    text = "".join(samples(corpus_texts, 20_000))
    for pattern in huggingface._TOTAL:
        pieces = [m.group() for m in regex.finditer(pattern, text)]
        assert "".join(pieces) == text, pattern
        assert pieces == [m.group() for m in regex.finditer(huggingface.isolated(pattern), text)]


def test_a_qwen2_split_runs_on_the_native_engine(tmp_path, corpus_texts):
    enc = tokenforge.get_encoding("cl100k_base")
    tok = tokenforge.Tokenizer(pattern=patterns.QWEN2, mergeable_ranks=enc._mergeable_ranks,
                               special_tokens={"<|endoftext|>": 100257})
    path, _ = exported(tmp_path, tok)
    obj = json.loads(path.read_text())
    obj["pre_tokenizer"]["pretokenizers"][0].update(behavior="Isolated", invert=False)  # (as Qwen's files have it)
    path.write_text(json.dumps(obj))
    back = tokenforge.load(path)
    # the generic reader too (files the byte-level reader refuses: a component it does not take)
    staged = formats.hf_stages.load(path, obj)
    for t in (back, staged):
        assert t._engine_splits and t._matcher is None  # (not the `regex` module's finditer)
    for text in samples(corpus_texts, 30_000):
        assert back.encode_ordinary(text) == tok.encode_ordinary(text) == staged.encode_ordinary(text)


@pytest.mark.parametrize("in_a_merge", [False, True])
def test_tokens_outside_the_byte_alphabet(tmp_path, small_json, corpus_texts, in_a_merge):
    # A vocabulary entry spelled outside GPT-2's alphabet (Command-R has 1,403) is never made by the
    # merges: tokenizers only decodes it (its UTF-8). The byte-level model keeps such entries as
    # decode-only tokens; a merge naming one (it can never fire) sends the file to the generic
    # model. Either way: tokenizers' ids and texts.
    from tokenforge.models import BPE, ByteBPE

    obj = copy.deepcopy(small_json)
    obj["model"]["vocab"].update({"<|endoftext|>": 556, "🎉": 557, "日本": 558, "Ġ🎉": 559})
    if in_a_merge:
        obj["model"]["vocab"]["🎉Ġ"] = 560
        obj["model"]["merges"].append(["🎉", "Ġ"])
    tok = tokenforge.load(write(tmp_path, obj))
    reference = hf.Tokenizer.from_str(json.dumps(obj))
    assert isinstance(tok.model, BPE if in_a_merge else ByteBPE)
    assert_same_ids(tok, reference, samples(corpus_texts, 20_000) + ["🎉 日本 Ġ🎉"])
    for ids in ([557], [558, 40, 559], [559, 557, 558] + tok.encode("the 🎉"), list(range(556, 561 if in_a_merge else 560))):
        assert tok.decode(ids) == reference.decode(ids)
    assert tok.token_to_id("Ġ🎉") == 559 and tok.id_to_token(558) == "日本" and tok.n_vocab == reference.get_vocab_size()


def test_decode_only_tokens_are_checked():
    from tokenforge.models import ByteBPE

    ranks = {bytes([b]): b for b in range(256)}
    assert ByteBPE(ranks, [], decode_only={300: "🎉"}).token_bytes(300) == "🎉".encode()
    with pytest.raises(ValueError, match="id 65 of a mergeable token"):
        ByteBPE(ranks, [], decode_only={65: "🎉"})
    with pytest.raises(ValueError, match="spelled in GPT-2's alphabet"):
        ByteBPE(ranks, [], decode_only={300: "Ġx"})
    with pytest.raises(TypeError):
        ByteBPE(ranks, [], decode_only={"300": "🎉"})


@pytest.fixture(scope="module")
def with_plain_added(small_json):
    """small_json with added tokens that are not special, matched as written (as MPT's runs of
    spaces and Command-R's turn tokens are), overlapping each other and a special one."""
    obj = copy.deepcopy(small_json)
    plain = ["  ", "   ", "    ", "<|turn|>", "<|turn|>x", "xq", "xqz", "\n\n"]
    for k, content in enumerate(plain):
        obj["added_tokens"].append({"id": 557 + k, "content": content, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": False})
    return obj


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([" ", "  ", "x", "q", "z", "a", "<|turn|>", "<|endoftext|>", "\n", "é", "12", "Hello"]),
                max_size=30).map("".join))
def test_added_tokens_that_are_not_special_on_the_engine(tmp_path_factory, with_plain_added, text):
    # They are matched in any text (encode_ordinary too), never disallowed, by the engine in one call
    # (the Python added-token stage before): tokenizers' ids on every path.
    tok, reference = _plain_added_pair(tmp_path_factory, with_plain_added)
    want = reference.encode(text, add_special_tokens=False).ids
    assert tok.encode(text) == want and tok.encode_to_numpy(text).tolist() == want
    assert [list(r) for r in tok.encode_batch([text, text + "  xqz"], num_threads=2)] == \
        [want, reference.encode(text + "  xqz", add_special_tokens=False).ids]
    ordinary = [reference.encode(part, add_special_tokens=False).ids for part in text.split("<|endoftext|>")]
    if len(ordinary) == 1:
        assert tok.encode_ordinary(text) == want == tok.encode_ordinary_batch([text])[0]
        assert tok.count_tokens(text) == len(want)
    assert tok.decode(want) == reference.decode(want)


_PAIRS: dict = {}


def _plain_added_pair(tmp_path_factory, obj):
    if "pair" not in _PAIRS:
        path = write(tmp_path_factory.mktemp("plain_added"), obj)
        tok = tokenforge.load(path)
        assert tok._fast  # the one-call path (the added-token stage in Python before)
        _PAIRS["pair"] = tok, hf.Tokenizer.from_str(json.dumps(obj))
    return _PAIRS["pair"]


# --------------------------------------------------------------------------------------------------
# A Unicode-form normalizer (GPT-NeoX's and Pythia's NFC): text already in the form runs on the
# engine's one-call path (Tokenizer._twin_for), other text on the stage-by-stage path.

def _with_form(small_json, form, normal_tokens=("  ", "   ", "\n\n", "é!", "|||IP|||")):
    obj = copy.deepcopy(small_json)
    obj["normalizer"] = {"type": form}
    for k, content in enumerate(normal_tokens):  # normalized=True, not special (as GPT-NeoX's runs of spaces)
        obj["added_tokens"].append({"id": 557 + k, "content": content, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": True, "special": False})
    obj["added_tokens"].append({"id": 557 + len(normal_tokens), "content": "<|turn|>", "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": False, "special": False})
    return obj


_FORM_PAIRS: dict = {}


def _form_pair(tmp_path_factory, small_json, form):
    if form not in _FORM_PAIRS:
        obj = _with_form(small_json, form)
        tok = tokenforge.load(write(tmp_path_factory.mktemp("form"), obj))
        assert tok._normal_form == form and not tok._fast
        _FORM_PAIRS[form] = tok, hf.Tokenizer.from_str(json.dumps(obj))
    return _FORM_PAIRS[form]


@pytest.mark.parametrize("form", ["NFC", "NFKC"])
@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([" ", "  ", "x", "a", "e", "\u0301", "é", "A\u030a", "\u212b", "ﬁ", "²", "!", "é!",
                                 "<|turn|>", "<|endoftext|>", "|||IP|||", "\n", "Hello"]), max_size=30).map("".join))
def test_a_unicode_form_normalizer_runs_normalized_text_on_the_engine(tmp_path_factory, small_json, form, text):
    import unicodedata

    tok, reference = _form_pair(tmp_path_factory, small_json, form)
    want = reference.encode(text, add_special_tokens=False).ids
    assert tok.encode(text) == want and tok.encode_to_numpy(text).tolist() == want
    other = text + "  é!x"
    assert [list(r) for r in tok.encode_batch([text, other], num_threads=2)] == \
        [want, reference.encode(other, add_special_tokens=False).ids]
    ids, offsets = tok.encode_batch_to_numpy([other, text], num_threads=2)
    assert ids[offsets[1]:offsets[2]].tolist() == want
    if "<|endoftext|>" not in text:
        assert tok.encode_ordinary(text) == want == tok.encode_ordinary_batch([text])[0]
        assert tok.count_tokens(text) == len(want)
    # the one-call path ran exactly when the text was in the form
    assert (tok._twin_for(text) is not None) == unicodedata.is_normalized(form, text)


def test_the_form_twin_only_where_it_is_exact(small_json):
    from tokenforge import normalizers
    from tokenforge.special import AddedToken
    from tokenforge.tokenizer import _twin_form

    from tokenforge.models import ByteBPE

    model = ByteBPE({bytes([b]): b for b in range(256)}, [])
    nfc = normalizers.NFC()

    def form(*tokens):
        return _twin_form(nfc, model, [AddedToken(c, 300 + k, special=s, normalized=n) for k, (c, n, s) in enumerate(tokens)])

    assert form(("  ", True, False), ("<|endoftext|>", False, True)) == "NFC"
    assert form(("<|x", True, False), ("a|>", False, True)) == "NFC"  # (disjoint: no end of one starts the other)
    assert form(("x<|", True, False), ("<|endoftext|>", False, True)) is None  # an end of one starts the other
    assert form(("of", True, False), ("<|endoftext|>", False, True)) is None  # one inside the other
    assert form(("e\u0301", True, False),) is None  # a normalized token not in the form itself
    assert _twin_form(nfc, model, [AddedToken("  ", 300, special=False, normalized=True, lstrip=True)]) is None
    assert _twin_form(normalizers.Lowercase(), model, []) is None


def test_the_form_twin_follows_later_settings(tmp_path, small_json):
    # The twin copies the tokenizer's settings; changing one (truncation, padding) makes it again.
    obj = _with_form(small_json, "NFC")
    obj["post_processor"] = None
    tok = tokenforge.load(write(tmp_path, obj))
    reference = hf.Tokenizer.from_str(json.dumps(obj))
    text = "Hello  world, é! |||IP||| again\n\nand again"
    assert tok.encode(text) == reference.encode(text).ids and tok._twin is not None
    tok.enable_truncation(5)
    reference.enable_truncation(5)
    assert tok.encode(text) == reference.encode(text).ids == tok.encode(text)[:5]
    tok.no_truncation()
    assert len(tok.encode(text)) > 5


def test_overlapping_added_tokens_keep_the_stage_by_stage_path(tmp_path, small_json):
    # "x<|" (normalized) overlaps "<|endoftext|>" (not): tokenizers finds the latter first, in the raw
    # text; one pass over both would take "x<|" (hence no twin for such a file).
    obj = _with_form(small_json, "NFC", normal_tokens=("x<|", "  "))
    tok = tokenforge.load(write(tmp_path, obj))
    reference = hf.Tokenizer.from_str(json.dumps(obj))
    assert tok._normal_form is None
    for text in ("x<|endoftext|>", "ax<|endoftext|>x<|a  b", "x<|turn|>"):
        assert tok.encode(text) == reference.encode(text, add_special_tokens=False).ids
