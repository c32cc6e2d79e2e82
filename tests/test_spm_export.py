"""sentencepiece models written as tokenizer.json: BPE models as transformers' LlamaConverter writes
them, compared id for id with sentencepiece through Hugging Face `tokenizers`; and the refusals
for what tokenizers cannot reproduce (unigram ties, BPE normalizers, score ties between pieces)."""

from __future__ import annotations

import io
import json

import pytest

import tokenforge
from tokenforge import SentencePieceTokenizer
from tokenforge.spm import files
from tokenforge.spm.model_file import BYTE, CONTROL, NORMAL, UNIGRAM, UNKNOWN, USER_DEFINED, ModelFile, Piece

spm = pytest.importorskip("sentencepiece")
hf = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def lines(corpus_texts) -> list[str]:
    t = corpus_texts
    return (t["shakespeare"][:60_000] + t["stdlib"][:40_000] + t["multilingual"] * 5).splitlines()


def _train(lines, **options) -> bytes:
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, vocab_size=1200, minloglevel=2,
                                   character_coverage=0.995, **options)
    return out.getvalue()


@pytest.mark.parametrize("dummy_prefix", [True, False])
def test_bpe_model_exports_id_exact(tmp_path, lines, corpus_texts, dummy_prefix):
    data = _train(lines, model_type="bpe", byte_fallback=True, normalization_rule_name="identity",
                  remove_extra_whitespaces=False, add_dummy_prefix=dummy_prefix, split_digits=True)
    sp = spm.SentencePieceProcessor(model_proto=data)
    tok = SentencePieceTokenizer.from_bytes(data)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = corpus_texts["taylorswift"][:30_000].splitlines() + corpus_texts["multilingual"].splitlines()
    texts += ["", " ", "  two  spaces  ", "\ttab", "x" + " " * 17 + "y", "日本語 ß 😀", "1234567890"]
    for text, got, want in zip(texts, theirs.encode_batch(texts, add_special_tokens=False), sp.encode(texts)):
        assert got.ids == want, text
    # decoding back through the file's decoder gives sentencepiece's text
    ids = sp.encode(texts[:200])
    assert [theirs.decode(i) for i in ids] == sp.decode(ids)


def test_bpe_refusals(tmp_path, lines):
    for options, words in (({"normalization_rule_name": "nmt_nfkc", "remove_extra_whitespaces": False}, "normalizer"),
                           ({"normalization_rule_name": "identity", "remove_extra_whitespaces": True}, "extra whitespace"),
                           ({"normalization_rule_name": "identity", "remove_extra_whitespaces": False,
                             "byte_fallback": False}, "byte fallback")):
        options = {"byte_fallback": True, **options}
        tok = SentencePieceTokenizer.from_bytes(_train(lines, model_type="bpe", **options))
        with pytest.raises(ValueError, match=words):
            tok.save(tmp_path / "tokenizer.json", format="huggingface")
        assert not (tmp_path / "tokenizer.json").exists()


def _model(pieces, model_type=UNIGRAM) -> ModelFile:
    base = [Piece("<unk>", 0.0, UNKNOWN), Piece("<s>", 0.0, CONTROL)]
    base += [Piece(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
    return ModelFile(pieces=base + [Piece(p, s, NORMAL) for p, s in pieces], model_type=model_type, byte_fallback=True,
                     add_dummy_prefix=True, remove_extra_whitespaces=False)


def test_bpe_score_ties_are_checked_by_running_both_rules():
    # '▁▁' and '▁▁▁' share a score: a run of four is [▁▁▁, ▁] in sentencepiece (leftmost) but
    # [▁▁, ▁▁] in HF when ('▁', '▁') ranks first; the writer runs both rules and refuses.
    m = _model([("\u2581", -1.0), ("a", -1.0), ("\u2581\u2581", -9.0), ("\u2581\u2581\u2581", -9.0)], model_type=2)
    with pytest.raises(ValueError, match="run of 4"):
        files._check_bpe_ties(m, files.bpe_merges(m))
    # with every shorter run a piece, as in Mistral's models, both rules agree
    m = _model([("\u2581", -1.0), ("\u2581\u2581", -9.0), ("\u2581" * 4, -9.0), ("\u2581" * 8, -9.0)], model_type=2)
    files._check_bpe_ties(m, files.bpe_merges(m))
    m = _model([("\u2581", -1.0), ("ab", -3.0), ("cd", -3.0), ("a", -1), ("b", -1), ("c", -1), ("d", -1)], model_type=2)
    with pytest.raises(ValueError, match="share the score"):
        files._check_bpe_ties(m, files.bpe_merges(m))


def test_user_defined_pieces_with_a_dummy_prefix_are_refused(tmp_path):
    """sentencepiece: "[REF] b" is ▁ [REF] ▁b; tokenizers splits at an added token first, then
    prefixes each part. Without a dummy prefix the two agree."""
    pieces = [("\u2581", -1.0), ("a", -1.0), ("b", -1.0), ("\u2581b", -2.0)]
    m = _model(pieces, model_type=2)
    m.pieces.append(Piece("[REF]", 0.0, USER_DEFINED))
    tok = SentencePieceTokenizer(m)
    with pytest.raises(ValueError, match="user-defined"):
        tok.save(tmp_path / "tokenizer.json", format="huggingface")
    m.add_dummy_prefix = False
    tok = SentencePieceTokenizer(m)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ("a[REF]b", "[REF] b", " a b[REF]", "ab"):
        assert theirs.encode(text, add_special_tokens=False).ids == tok.encode(text), text


def test_user_defined_pieces_of_spaces_export(tmp_path):
    # Gemma's user-defined pieces for runs of spaces are spelled '▁▁' ...: sentencepiece finds them
    # in the normalized text, so tokenizers must too (a normalized added token).
    pieces = [("\u2581", -1.0), ("a", -1.0), ("b", -1.0), ("\u2581b", -2.0)]
    m = _model(pieces, model_type=2)
    m.add_dummy_prefix = False
    m.pieces += [Piece("\u2581\u2581", 0.0, USER_DEFINED), Piece("\u2581\u2581\u2581", 0.0, USER_DEFINED),
                 Piece("\n\n", 0.0, USER_DEFINED)]
    tok = SentencePieceTokenizer(m)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ("a  b", "a   b", "a    b\n\n\nb", " ", "  ", "b     a", "a\u2581\u2581b"):
        assert theirs.encode(text, add_special_tokens=False).ids == tok.encode(text), text


def test_bpe_merges_follow_scores():
    m = _model([("a", -1.0), ("b", -1.0), ("c", -1.0), ("ab", -2.0), ("abc", -3.0), ("bc", -5.0)], model_type=2)
    assert files.bpe_merges(m) == [["a", "b"], ["a", "bc"], ["ab", "c"], ["b", "c"]]  # by score, then piece


def test_unigram_ties_are_found_and_refused(tmp_path):
    m = _model([("\u2581", -2.0), ("-", -3.0), ("--", -5.0), ("x", -4.0)])
    assert files.unigram_tie(m) == ("---", ["-", "--"])
    tok = SentencePieceTokenizer(m)
    with pytest.raises(ValueError, match="equal score"):
        tok.save(tmp_path / "tokenizer.json", format="huggingface")
    assert not (tmp_path / "tokenizer.json").exists()
    # a '--' that never beats '-' + '-' makes every run unambiguous
    m = _model([("\u2581", -2.0), ("-", -1.0), ("--", -5.0), ("x", -4.0)])
    assert files.unigram_tie(m) is None
    tok = SentencePieceTokenizer(m)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for text in ("x---x", "--- x", "x ▁-", "xx  x", "", " "):
        assert theirs.encode(text, add_special_tokens=False).ids == tok.encode(text), text
    assert json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))["pre_tokenizer"]["split"] is False
    # allow_ties writes what transformers' converters write
    tied = SentencePieceTokenizer(_model([("\u2581", -2.0), ("-", -3.0), ("--", -5.0)]))
    files.save_hf(tied, tmp_path / "ties.json", allow_ties=True)
    assert tokenforge.load(tmp_path / "ties.json").encode("x --") == tied.encode("x --")


def test_unigram_pieces_with_inner_spaces_export(tmp_path):
    """sentencepiece segments the whole text: a piece may hold '▁' inside (ai21's '▁in▁the'), which
    Metaspace(split=true) would never let tokenizers use."""
    m = _model([("\u2581", -2.0), ("i", -4.0), ("n", -4.0), ("t", -4.0), ("h", -4.0), ("e", -4.0),
                ("\u2581in\u2581the", -3.0)])
    tok = SentencePieceTokenizer(m)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert theirs.encode("in the", add_special_tokens=False).ids == tok.encode("in the") == [264]
