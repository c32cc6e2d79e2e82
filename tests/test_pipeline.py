"""The one Tokenizer: every family answers the same methods; stages compose; the regressions of the
issue that asked for it (each test names the bug it pins)."""

from __future__ import annotations

import io

import pytest

import tokenforge
from tokenforge import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, post_processors

hf = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")
spm = pytest.importorskip("sentencepiece")

BYTES = {bytes([i]): i for i in range(256)}


def _families(corpus_texts):
    text = corpus_texts["shakespeare"][:30_000].splitlines()
    return {
        "byte_bpe": tokenforge.get_encoding("gpt2"),
        "char_bpe": tokenforge.CharBPETokenizer.train(text, vocab_size=400),
        "wordpiece": tokenforge.WordPieceTokenizer.train(text, vocab_size=400),
        "word": tokenforge.WordTokenizer.train(text),
        "char": tokenforge.CharTokenizer.train(text),
        "unigram": tokenforge.train_unigram(text, 300),
        "bpe": Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2, "<unk>": 3}, [("a", "b")], unk_token="<unk>"),
                         pre_tokenizer=pre_tokenizers.Whitespace()),
    }


def test_every_family_is_the_one_tokenizer_with_the_same_methods(corpus_texts, tmp_path):
    for name, tok in _families(corpus_texts).items():
        assert isinstance(tok, Tokenizer), name
        text = "to be or not to be"
        ids = tok.encode(text)
        assert tok.encode_ordinary(text) == tok.encode(text, add_special_tokens=False)
        assert tok.encode_batch([text, text]) == [ids, ids]
        assert tok.encode_to_numpy(text).tolist() == ids
        assert isinstance(tok.decode(ids), str) and tok.n_vocab > max(ids)
        for i in ids:
            assert tok.token_to_id(tok.id_to_token(i)) == i, (name, i)
        tok.save(tmp_path / f"{name}.json")
        assert tokenforge.load(tmp_path / f"{name}.json").encode(text) == ids, name


def test_old_names_are_constructors_of_the_one_tokenizer():
    for cls in (tokenforge.PipelineTokenizer, tokenforge.CharBPETokenizer, tokenforge.WordPieceTokenizer,
                tokenforge.WordTokenizer, tokenforge.CharTokenizer, tokenforge.SentencePieceTokenizer, tokenforge.Encoding):
        assert issubclass(cls, Tokenizer)
        extra = {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_") and not isinstance(v, classmethod)}
        # instance methods beyond the Tokenizer's: only sentencepiece's own API (kept for compatibility)
        assert extra <= {"encode", "normalize", "piece_to_id", "id_to_piece", "get_score", "encode_as_pieces", "nbest",
                         "to_model_bytes", "save_model", "save_vocab_merges"}, (cls, extra)


# ---- regressions ---------------------------------------------------------------------------------


def test_empty_merge_list_gives_single_bytes_as_tokenizers(tmp_path):
    """tokenizer.json with "merges": [] used to switch to tiktoken's rank rule."""
    vocab = {tokenforge.formats._common.to_chars(bytes([i])): i for i in range(256)}
    vocab["Ġt"] = 256
    vocab["he"] = 257
    t = hf.Tokenizer(hf.models.BPE(vocab, []))
    t.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = hf.decoders.ByteLevel()
    t.save(str(tmp_path / "tokenizer.json"))
    tok = tokenforge.load(tmp_path / "tokenizer.json")
    for text in ["the the", " the", "hello there"]:
        assert tok.encode(text) == t.encode(text).ids
        assert 256 not in tok.encode(text) and 257 not in tok.encode(text)
    # and tokenforge's own constructor says the same: an explicit empty list is no merges
    own = Tokenizer.from_vocab_merges({i: b for b, i in BYTES.items()} | {256: b" t"}, [], pattern="gpt2")
    assert own.encode(" t") == [32, 116]


@pytest.mark.parametrize("pattern", [r"^ab|ab$|a|b|.", r"(?m)^a|b$|.|\n", r"\Aab|.|\n"])
def test_anchors_between_allowed_special_tokens_as_tiktoken(pattern):
    """`^` in a custom pattern matched only at the very start before a special token, but at every
    stretch after one; tiktoken sees each stretch between allowed special tokens as a whole text."""
    ranks = BYTES | {b"ab": 256}
    ref = tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={"<s>": 300})
    tok = Tokenizer.from_ranks(ranks, pattern=pattern, special_tokens={"<s>": 300})
    for text in ["ab<s>ab", "ab<s>abab<s>ab", "xab<s>ab\nab<s>", "<s>ab<s><s>abab", "abab"]:
        assert tok.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all"), text
        assert tok.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=()), text


def test_encoding_name_as_pattern_resolves_and_nonsense_is_an_error():
    """pattern="cl100k_base" was used as a regex (encode returned [])."""
    enc = tokenforge.get_encoding("cl100k_base")
    tok = Tokenizer.from_ranks(enc._mergeable_ranks, pattern="cl100k_base")
    assert tok.pattern == enc.pattern and tok.encode("hello world") == enc.encode("hello world")
    with pytest.raises(ValueError, match="unknown pattern name 'cl100k_bas'.*cl100k_base"):
        Tokenizer.from_ranks(BYTES, pattern="cl100k_bas")
    with pytest.raises(ValueError, match="does not compile"):
        Tokenizer.from_ranks(BYTES, pattern="(unclosed")
    with pytest.raises(ValueError, match="unknown pattern name"):
        pre_tokenizers.Regex("gpt-5")


def test_from_vocab_merges_takes_a_list_of_special_tokens():
    """from_vocab_merges(..., special_tokens=[...]) was refused while train_bpe takes a list."""
    vocab = {i: b for b, i in BYTES.items()} | {256: b"ab"}
    tok = Tokenizer.from_vocab_merges(vocab, [(b"a", b"b")], special_tokens=["<|endoftext|>", "<|pad|>"])
    assert tok.special_tokens == {"<|endoftext|>": 257, "<|pad|>": 258}
    assert tok.encode("ab<|pad|>", allowed_special="all") == [256, 258]
    with pytest.raises(TypeError, match="not a single str"):
        Tokenizer.from_vocab_merges(vocab, [], special_tokens="<|endoftext|>")


def _spm_model(lines, **options) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, minloglevel=2, num_threads=2,
                                   character_coverage=0.9995, **options)
    return out.getvalue()


def test_sentencepiece_bpe_decode_keeps_leading_spaces(corpus_texts):
    """SentencePiece BPE decode dropped the leading space of some lines (models that keep extra
    whitespace, as Mistral's: a line starting with a space piece then a word)."""
    text = (corpus_texts["multilingual"] * 3 + corpus_texts["shakespeare"][:60_000]).splitlines()
    data = _spm_model(text, vocab_size=800, model_type="bpe", byte_fallback=True, remove_extra_whitespaces=False,
                      normalization_rule_name="identity")
    sp = spm.SentencePieceProcessor(model_proto=data)
    tok = tokenforge.SentencePieceTokenizer.from_bytes(data)
    lines = text[:2000] + ["  two leading", " one", "   ", "x  ", "😀 start", " 😀 start", "\t tab"]
    for line in lines:
        ids = sp.encode(line)
        assert tok.encode(line) == ids, line
        assert tok.decode(ids) == sp.decode(ids), line
        assert tok.decode([sp.bos_id(), *ids]) == sp.decode([sp.bos_id(), *ids]), line


def test_unigram_saved_as_tokenizer_json_reads_the_same_in_tokenizers_and_back(corpus_texts, tmp_path):
    """A unigram tokenizer saved as tokenizer.json wrote a Metaspace that tokenizers read differently
    and tokenforge refused: whole documents (several lines, leading spaces) must agree."""
    text = (corpus_texts["multilingual"] * 3 + corpus_texts["shakespeare"][:80_000]).splitlines()
    tok = tokenforge.SentencePieceTokenizer.from_bytes(_spm_model(text, vocab_size=1000, model_type="unigram",
                                                                  normalization_rule_name="identity"))
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    ref = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    back = tokenforge.load(tmp_path / "tokenizer.json")
    docs = ["\n".join(text[k:k + 7]) for k in range(0, 1400, 7)] + ["  lead", "a  b", " ", ""]
    for doc in docs:
        assert ref.encode(doc).ids == tok.encode(doc), doc
        assert back.encode(doc) == tok.encode(doc), doc


def test_llama3_style_ranks_export_to_tokenizer_json(shared_dir, corpus_texts, tmp_path):
    """Ranks whose tokens are not all merges of lower-ranked tokens (Llama 3's) could not be
    exported (".:.: not a merge of lower-ranked tokens"); the export lists every pair that makes
    a token, as Llama 3's own tokenizer.json does with ignore_merges."""
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(shared_dir / "vocab" / "r50k_base.tiktoken"))
    by_rank = sorted(ranks, key=ranks.get)
    # move some long tokens before their parts: no merge of lower-ranked tokens makes them any more
    moved = [t for t in by_rank if len(t) >= 6][:40]
    order = [t for t in by_rank[:256]] + moved + [t for t in by_rank[256:] if t not in set(moved)]
    ranks = {t: i for i, t in enumerate(order)}
    ref = tiktoken.Encoding("l3", pat_str=tokenforge.patterns.CL100K, mergeable_ranks=ranks, special_tokens={})
    tok = Tokenizer.from_ranks(ranks, pattern="cl100k")
    with pytest.raises(ValueError, match="not a merge of two lower-ranked tokens"):
        tok.merges
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    exported = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    lines = (corpus_texts["taylorswift"][:60_000] + corpus_texts["multilingual"]).splitlines()
    for line in lines:
        assert tok.encode(line) == ref.encode(line), line
        assert exported.encode(line).ids == ref.encode(line), line


# ---- stages -----------------------------------------------------------------------------------


def test_added_tokens_follow_tokenizers_rules():
    model = models.WordLevel({"<unk>": 0, "hello": 1, "world": 2, "[MASK]": 3, "##": 4}, unk_token="<unk>")
    added = [AddedToken("[MASK]", 3, special=True, lstrip=True, rstrip=True), AddedToken("##", 4, special=False, single_word=True)]
    tok = Tokenizer(model, pre_tokenizer=pre_tokenizers.WhitespaceSplit(), added_tokens=added, allowed_special="all")
    ref = hf.Tokenizer(hf.models.WordLevel({"<unk>": 0, "hello": 1, "world": 2, "[MASK]": 3, "##": 4}, unk_token="<unk>"))
    ref.pre_tokenizer = hf.pre_tokenizers.WhitespaceSplit()
    ref.add_special_tokens([hf.AddedToken("[MASK]", lstrip=True, rstrip=True)])
    ref.add_tokens([hf.AddedToken("##", single_word=True)])
    for text in ["hello [MASK] world", "hello[MASK]world", "a ## b", "a##b", "## ##", "hello   [MASK]   "]:
        assert tok.encode(text) == ref.encode(text).ids, text
    # tiktoken's policy still applies to the special ones on request
    with pytest.raises(ValueError, match="disallowed special token"):
        tok.encode("hello [MASK]", allowed_special=set(), disallowed_special="all")
    assert tok.encode("hello[MASK]", allowed_special=set(), disallowed_special=()) == [0]  # text: one unknown word
    assert tok.encode("hello[MASK]") == [1, 3]


def test_stage_descriptions_round_trip():
    stages = [
        normalizers.Sequence([normalizers.NFKC(), normalizers.Prepend("▁"), normalizers.Replace(" ", "▁", literal=True)]),
        pre_tokenizers.Sequence([pre_tokenizers.Split(r"\d", "isolated"), pre_tokenizers.Metaspace(prepend_scheme="first"),
                                 pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(use_regex=False)]),
        post_processors.TemplateProcessing("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1", [("[CLS]", 1), ("[SEP]", 2)]),
        decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]),
    ]
    readers = [normalizers.from_dict, pre_tokenizers.from_dict, post_processors.from_dict, decoders.from_dict]
    for stage, read in zip(stages, readers):
        assert read(stage.to_dict()) == stage
    with pytest.raises(ValueError, match=r"pre_tokenizer\.pretokenizers\[0\]: pre-tokenizer 'UnicodeScripts' is not supported"):
        pre_tokenizers.from_dict({"type": "Sequence", "pretokenizers": [{"type": "UnicodeScripts"}]})
    with pytest.raises(ValueError, match=r"decoder\.content: missing"):
        decoders.from_dict({"type": "Strip", "start": 1})
