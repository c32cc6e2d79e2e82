"""A golden test per Hugging Face component: the component built in `tokenizers`, its tokenizer.json
saved, loaded by tokenforge, and ids and decoded text compared with tokenizers' on real
multilingual text (the shared corpora, the test corpus's multilingual sample, edge cases)."""

from __future__ import annotations

import collections
import json
import pickle

import pytest

import tokenforge

hf = pytest.importorskip("tokenizers")
from tokenizers import AddedToken, Regex  # noqa: E402
from tokenizers import decoders as D  # noqa: E402
from tokenizers import models as M  # noqa: E402
from tokenizers import normalizers as N  # noqa: E402
from tokenizers import pre_tokenizers as P  # noqa: E402
from tokenizers import processors as PP  # noqa: E402

EDGES = ["", " ", "  two  spaces  ", "\tTab\nnew line\r\n", "ÄÖÜ äöü ß Größe", "日本語のテキスト", "😀 emoji 👍🏽", "e\u0301",
         "don't STOP", "1234567 and 3.14", "<s> special </s> [MASK]", "ﬁ①２"]


@pytest.fixture(scope="module")
def lines(corpus_texts):
    text = corpus_texts["multilingual"] + corpus_texts["taylorswift"][:15_000] + corpus_texts["stdlib"][:5_000]
    return [l for l in text.splitlines() if l.strip()][:400] + EDGES


@pytest.fixture(scope="module")
def gpt2(shared_dir):
    vocab = json.loads((shared_dir / "vocab" / "gpt2_vocab.json").read_text(encoding="utf-8"))
    merges = [tuple(l.split(" ")) for l in (shared_dir / "vocab" / "gpt2_merges.txt").read_text(encoding="utf-8").splitlines()
              if l and not l.startswith("#")]
    return vocab, merges


@pytest.fixture(scope="module")
def words(lines):
    counts = collections.Counter(w for l in lines for w in l.lower().split())
    return [w for w, _ in counts.most_common(400)], sorted(set("".join(counts)))


def _byte_level(gpt2, **model):
    vocab, merges = gpt2
    t = hf.Tokenizer(M.BPE(dict(vocab), list(merges), **model))
    t.pre_tokenizer = P.ByteLevel(add_prefix_space=False)
    t.decoder = D.ByteLevel()
    return t


def _wordpiece(words):
    ws, chars = words
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "<s>": 4, "</s>": 5}
    for w in ws:
        vocab.setdefault(w, len(vocab))
    for c in chars:
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    return vocab


def _metaspace_vocab(words):
    ws, chars = words
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"<0x{b:02X}>": 3 + b for b in range(256)}}
    for w in ws:
        for p in ("\u2581" + w, w):
            vocab.setdefault(p, len(vocab))
    for c in chars + ["\u2581"]:
        vocab.setdefault(c, len(vocab))
    return vocab


def _case(gpt2, words, name):
    """The tokenizers tokenizer of case `name`."""
    if name.startswith("normalizer:"):
        t = _byte_level(gpt2)
        t.normalizer = {
            "NFC": N.NFC(), "NFD": N.NFD(), "NFKC": N.NFKC(), "NFKD": N.NFKD(), "Lowercase": N.Lowercase(),
            "Strip": N.Strip(left=True, right=False), "StripAccents": N.Sequence([N.NFD(), N.StripAccents()]),
            "Replace": N.Sequence([N.Replace("  ", " "), N.Replace(Regex(r"\d+"), "#")]), "Prepend": N.Prepend("_"),
            "BertNormalizer": N.BertNormalizer(strip_accents=True), "ByteLevel": N.ByteLevel(),
        }[name.split(":")[1]]
        if name.endswith("ByteLevel"):
            t.pre_tokenizer = P.Split(Regex(r"\S+|\s+"), "isolated")
        return t
    if name.startswith("split:"):
        behavior, invert = name.split(":")[1], name.endswith("invert")
        t = _byte_level(gpt2)
        t.pre_tokenizer = P.Sequence([P.Split(Regex(r"\s+|\d"), behavior.replace("_invert", ""), invert=invert),
                                      P.ByteLevel(use_regex=False)])
        return t
    if name == "deepseek_v3":
        t = _byte_level(gpt2)
        t.pre_tokenizer = P.Sequence([
            P.Split(Regex(r"\p{N}{1,3}"), "isolated"),
            P.Split(Regex(r"[一-龥\u3040-ゟ゠-ヿ]+"), "isolated"),
            P.Split(Regex(r"[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"), "isolated"),
            P.ByteLevel(add_prefix_space=False, use_regex=False)])
        return t
    if name.startswith("byte_level:"):
        opt = name.split(":")[1]
        t = _byte_level(gpt2, ignore_merges=opt == "ignore_merges")
        if opt == "no_regex":
            t.pre_tokenizer = P.ByteLevel(add_prefix_space=False, use_regex=False)
        elif opt == "prefix_space":
            t.pre_tokenizer = P.ByteLevel(add_prefix_space=True)
        elif opt == "empty_merges":
            t = hf.Tokenizer(M.BPE(dict(gpt2[0]), []))
            t.pre_tokenizer, t.decoder = P.ByteLevel(add_prefix_space=False), D.ByteLevel()
        return t
    if name.startswith("pre:"):
        t = hf.Tokenizer(M.WordLevel(_wordpiece(words), unk_token="[UNK]"))
        t.normalizer = N.Lowercase()
        t.pre_tokenizer = {
            "Whitespace": P.Whitespace(), "WhitespaceSplit": P.WhitespaceSplit(), "BertPreTokenizer": P.BertPreTokenizer(),
            "Digits": P.Sequence([P.WhitespaceSplit(), P.Digits(individual_digits=True)]),
            "Digits_runs": P.Sequence([P.WhitespaceSplit(), P.Digits(individual_digits=False)]),
            "Punctuation": P.Sequence([P.WhitespaceSplit(), P.Punctuation("merged_with_previous")]),
            "CharDelimiterSplit": P.CharDelimiterSplit("e"),
        }[name.split(":")[1]]
        return t
    if name.startswith("metaspace:"):
        _, scheme, split = name.split(":")
        t = hf.Tokenizer(M.BPE(_metaspace_vocab(words), [], unk_token="<unk>", byte_fallback=True))
        t.pre_tokenizer = P.Metaspace(prepend_scheme=scheme, split=split == "split")
        t.decoder = D.Metaspace(prepend_scheme=scheme, split=split == "split")
        t.add_special_tokens(["<s>", "</s>"])
        return t
    if name == "wordpiece_bert":
        t = hf.Tokenizer(M.WordPiece(_wordpiece(words), unk_token="[UNK]"))
        t.normalizer, t.pre_tokenizer, t.decoder = N.BertNormalizer(), P.BertPreTokenizer(), D.WordPiece()
        t.post_processor = PP.BertProcessing(("[SEP]", 2), ("[CLS]", 1))
        t.add_special_tokens(["[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        return t
    if name == "roberta":
        t = _byte_level(gpt2)
        t.add_special_tokens(["<s>", "</s>"])
        t.post_processor = PP.RobertaProcessing(("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")))
        return t
    if name == "template_sequence":
        t = _byte_level(gpt2)
        t.add_special_tokens(["<|begin|>"])
        t.post_processor = PP.Sequence([PP.ByteLevel(trim_offsets=False), PP.TemplateProcessing(
            single="<|begin|> $A", pair="<|begin|> $A <|begin|>:1 $B:1", special_tokens=[("<|begin|>", t.token_to_id("<|begin|>"))])])
        return t
    if name == "added_flags":
        t = _byte_level(gpt2)
        t.normalizer = N.NFKC()
        t.add_tokens([AddedToken("  ", normalized=True), AddedToken("Swift", single_word=True),
                      AddedToken("ß", lstrip=True, rstrip=True, normalized=False)])
        t.add_special_tokens([AddedToken("[MASK]", lstrip=True)])
        return t
    if name.startswith("bpe:"):
        opt = name.split(":")[1]
        vocab = _wordpiece(words)
        if opt == "prefix":
            t = hf.Tokenizer(M.BPE(vocab, [], unk_token="[UNK]", continuing_subword_prefix="##", fuse_unk=True))
            t.decoder = D.Sequence([D.WordPiece(cleanup=False), D.Strip(" ", 1, 0)])
        elif opt == "suffix":
            suffixed = dict(vocab)
            for c in words[1]:
                suffixed.setdefault(c + "</w>", len(suffixed))
            t = hf.Tokenizer(M.BPE(suffixed, [], unk_token="[UNK]", end_of_word_suffix="</w>"))
            t.decoder = D.BPEDecoder()
        else:  # llama 2 style: byte fallback, fuse_unk, a normalizer that does Metaspace's work
            t = hf.Tokenizer(M.BPE(_metaspace_vocab(words), [], unk_token="<unk>", byte_fallback=True, fuse_unk=True))
            t.normalizer = N.Sequence([N.Prepend("\u2581"), N.Replace(" ", "\u2581")])
            t.decoder = D.Sequence([D.Replace("\u2581", " "), D.ByteFallback(), D.Fuse(), D.Strip(" ", 1, 0)])
            return t
        t.pre_tokenizer = P.Whitespace()
        return t
    if name.startswith("unigram:"):
        scheme = name.split(":")[1]
        vocab = _metaspace_vocab(words)
        pieces = [("<unk>", 0.0)] + [(p, -1.0 - k / 100) for k, p in enumerate(v for v in vocab if not v.startswith("<"))]
        t = hf.Tokenizer(M.Unigram(pieces, unk_id=0, byte_fallback=False))
        t.pre_tokenizer, t.decoder = P.Metaspace(prepend_scheme=scheme), D.Metaspace(prepend_scheme=scheme)
        return t
    if name == "ctc":
        t = hf.Tokenizer(M.WordLevel(_wordpiece(words), unk_token="[UNK]"))
        t.pre_tokenizer = P.Split(Regex("."), "isolated")
        t.decoder = D.CTC(pad_token="[MASK]", word_delimiter_token=" ")
        return t
    raise KeyError(name)


CASES = (
    [f"normalizer:{n}" for n in ("NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "Replace", "Prepend",
                                 "BertNormalizer", "ByteLevel")]
    + [f"split:{b}" for b in ("removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous", "isolated_invert",
                              "removed_invert")]
    + ["deepseek_v3"]
    + [f"byte_level:{o}" for o in ("regex", "no_regex", "prefix_space", "ignore_merges", "empty_merges")]
    + [f"pre:{p}" for p in ("Whitespace", "WhitespaceSplit", "BertPreTokenizer", "Digits", "Digits_runs", "Punctuation",
                            "CharDelimiterSplit")]
    + [f"metaspace:{s}:{x}" for s in ("always", "first", "never") for x in ("split", "whole")]
    + ["wordpiece_bert", "roberta", "template_sequence", "added_flags", "bpe:prefix", "bpe:suffix", "bpe:byte_fallback",
       "unigram:always", "unigram:first", "unigram:never", "ctc"]
)


@pytest.mark.parametrize("name", CASES)
def test_component_matches_tokenizers(tmp_path, gpt2, words, lines, name):
    ref = _case(gpt2, words, name)
    ref.save(str(tmp_path / "tokenizer.json"))
    tok = tokenforge.load(tmp_path / "tokenizer.json")
    texts = lines + ["a<s>b </s> [MASK]x", " Swift Swifty  ß  end"]
    want = [ref.encode(t).ids for t in texts]
    assert [tok.encode(t) for t in texts] == want
    assert tok.encode_batch(texts) == want
    assert [tok.decode(ids) for ids in want] == [ref.decode(ids) for ids in want]
    assert [tok.decode(ids, skip_special_tokens=False) for ids in want] == [ref.decode(ids, skip_special_tokens=False) for ids in want]
    # tokenforge's own file and pickle keep every stage
    tok.save(tmp_path / "own.json")
    back = tokenforge.load(tmp_path / "own.json")
    again_pickled = pickle.loads(pickle.dumps(tok))
    if "dropout" not in name:
        assert [back.encode(t) for t in texts] == want and [again_pickled.encode(t) for t in texts] == want
        assert [back.decode(ids) for ids in want] == [ref.decode(ids) for ids in want]
    # and written back: tokenizers reads tokenforge's file with the same ids
    if "dropout" not in name:
        tok.save(tmp_path / "again" / "tokenizer.json" if False else tmp_path / "again.json", format="huggingface")
        again = hf.Tokenizer.from_file(str(tmp_path / "again.json"))
        assert [again.encode(t).ids for t in texts] == want


def test_byte_level_offsets_match_tokenizers(tmp_path, gpt2, lines):
    ref = _byte_level(gpt2)
    ref.save(str(tmp_path / "tokenizer.json"))
    tok = tokenforge.load(tmp_path / "tokenizer.json")
    for text in lines:
        ids, offsets = tok.encode_with_offsets(text)
        enc = ref.encode(text)
        assert ids == enc.ids
        # tokenizers trims nothing here (no ByteLevel post-processor): its offsets are the same spans
        assert offsets == [tuple(o) for o in enc.offsets], text


def test_unsupported_component_is_a_value_error_naming_its_path(tmp_path, gpt2):
    t = _byte_level(gpt2)
    t.pre_tokenizer = P.Sequence([P.UnicodeScripts(), P.ByteLevel(use_regex=False)])
    t.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match=r"tokenizer\.json: pre_tokenizer\.pretokenizers\[0\]: pre-tokenizer 'UnicodeScripts' is not supported"):
        tokenforge.load(tmp_path / "tokenizer.json")
