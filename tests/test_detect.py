"""`tokenforge.load(path)` by content (formats/detect.py) on small synthetic files written here: each
load failure of real files found in the field has its regression test, with the reference library
as the judge where one exists."""

import base64
import gzip
import io
import json
import os

import pytest

import tokenforge
from conftest import MULTILINGUAL
from tokenforge import patterns
from tokenforge.formats import clip, detect, rank_families

TEXT = MULTILINGUAL + "The quick brown fox. abab ababab aba. <|endoftext|> [INST] hi"
BYTES = {bytes([i]): i for i in range(256)}


def rank_lines(ranks: dict[bytes, int]) -> bytes:
    return b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))


def small_ranks() -> dict[bytes, int]:
    ranks = dict(BYTES)
    for t in (b"ab", b"abab", b"th", b"the", b" the", b"er", b" qu", b"ick"):
        ranks[t] = len(ranks)
    return ranks


# --------------------------------------------------------------------------------------------------
# tiktoken rank files


def test_rank_file_with_an_empty_token_loads_as_tiktoken_reads_it(tmp_path):
    # Whisper's multilingual.tiktoken has a line "= 50256": an empty token that tiktoken accepts.
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = small_ranks()
    path = tmp_path / "multilingual.tiktoken"
    path.write_bytes(rank_lines(ranks) + b"= %d\n" % len(ranks))
    special = {"<|endoftext|>": len(ranks) + 1}
    tok = tokenforge.load(path, pattern="gpt2", special_tokens=special)
    ref = tiktoken.Encoding("ref", pat_str=patterns.GPT2, mergeable_ranks=load_tiktoken_bpe(str(path)),
                            special_tokens=special)
    assert tok.encode(TEXT, allowed_special="all") == ref.encode(TEXT, allowed_special="all")
    assert tok.decode(tok.encode(TEXT, allowed_special="all")) == TEXT


def test_rank_file_named_tokenizer_model_is_not_read_as_protobuf(tmp_path):
    # Meta ships Llama 3/4's tiktoken ranks as "tokenizer.model"; it used to reach the protobuf parser.
    import tiktoken

    path = tmp_path / "tokenizer.model"
    path.write_bytes(rank_lines(small_ranks()))
    with pytest.raises(ValueError, match=r"tokenizer\.model: a tiktoken rank file holds only the ranks.*"
                                         r"pattern='llama3'"):
        tokenforge.load(path)
    tok = tokenforge.load(path, pattern="llama3", special_tokens={"<|begin_of_text|>": 300})
    ref = tiktoken.Encoding("ref", pat_str=rank_families.FAMILY_PATTERNS["llama3"], mergeable_ranks=small_ranks(),
                            special_tokens={"<|begin_of_text|>": 300})
    assert tok.pattern == rank_families.FAMILY_PATTERNS["llama3"]
    assert tok.encode_ordinary(TEXT) == ref.encode_ordinary(TEXT)


def test_known_rank_file_is_recognised_by_content_under_any_name(tmp_path, shared_dir):
    import tiktoken

    path = tmp_path / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # tiktoken's cache names files by URL hash
    path.write_bytes((shared_dir / "vocab" / "cl100k_base.tiktoken").read_bytes())
    tok = tokenforge.load(path)
    ref = tiktoken.get_encoding("cl100k_base")
    assert tok.name == "cl100k_base" and tok.special_tokens == ref._special_tokens
    assert tok.encode(TEXT, allowed_special="all") == ref.encode(TEXT, allowed_special="all")


def test_gzipped_file_is_unpacked_first(tmp_path):
    path = tmp_path / "ranks.gz"
    path.write_bytes(gzip.compress(rank_lines(small_ranks())))
    tok = tokenforge.load(path, pattern="gpt2", special_tokens={})
    assert tok.encode_ordinary("the abab") == [small_ranks()[b"the"], small_ranks()[b" "], small_ranks()[b"abab"]]


def test_family_patterns_compile_and_names_resolve():
    import regex

    for name, pat in rank_families.FAMILY_PATTERNS.items():
        regex.compile(pat)
        resolved = rank_families.resolve_pattern(name)  # a name tokenforge.patterns has is left to it
        assert patterns.NAMED.get(resolved, resolved) == pat, name
    assert rank_families.resolve_pattern("gpt2") == "gpt2"  # tokenforge.patterns' own names are left to it


def test_family_special_tokens_follow_the_family_code():
    # Llama 3: 256 specials after the ranks; the named ones first (llama_models/llama3/tokenizer.py)
    llama3 = rank_families.FAMILIES["llama3"].specials(128000)
    assert len(llama3) == 256 and llama3["<|begin_of_text|>"] == 128000 and llama3["<|eot_id|>"] == 128009
    assert llama3["<|reserved_special_token_245|>"] == 128255
    llama4 = rank_families.FAMILIES["llama4"].specials(200000)
    assert len(llama4) == 2048 and llama4["<|patch|>"] == 200092 and llama4["<|eot|>"] == 200008
    whisper = rank_families.FAMILIES["whisper_multilingual"].specials(50257)
    assert whisper["<|endoftext|>"] == 50257 and whisper["<|notimestamps|>"] == 50363 and len(whisper) == 1608


# --------------------------------------------------------------------------------------------------
# sentencepiece models under any name


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory):
    sentencepiece = pytest.importorskip("sentencepiece")
    text = (MULTILINGUAL * 20).split("\n")
    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(text), model_writer=out, vocab_size=300,
                                             model_type="bpe", character_coverage=1.0)
    return out.getvalue()


@pytest.mark.parametrize("name", ["tokenizer.model.v3", "tokenizer.gemma", "spiece", "weights.bin"])
def test_sentencepiece_model_recognised_whatever_its_name(tmp_path, spm_model, name):
    import sentencepiece

    path = tmp_path / name
    path.write_bytes(spm_model)
    tok = tokenforge.load(path)
    sp = sentencepiece.SentencePieceProcessor(model_proto=spm_model)
    for line in TEXT.split("\n"):
        assert tok.encode(line) == sp.encode(line), line


def test_text_starting_with_a_newline_is_not_taken_for_protobuf(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n[PAD]\n[UNK]\nhello\n##lo\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: empty token"):  # read as BERT's vocab.txt, which names the line
        tokenforge.load(path)


# --------------------------------------------------------------------------------------------------
# tekken


def tekken_json(version="v3", with_specials=False, vocab_size=None, n_special=20):
    ranks = small_ranks()
    vocab = [{"rank": r, "token_bytes": base64.b64encode(t).decode(), "token_str": t.decode("latin-1")}
             for t, r in sorted(ranks.items(), key=lambda kv: kv[1])]
    obj = {"config": {"pattern": rank_families.FAMILY_PATTERNS["qwen"], "num_vocab_tokens": len(vocab),
                      "default_vocab_size": vocab_size or n_special + len(vocab),
                      "default_num_special_tokens": n_special, "version": version},
           "vocab": vocab}
    if with_specials:
        obj["special_tokens"] = [{"rank": 0, "token_str": "<unk>", "is_control": True},
                                 {"rank": 1, "token_str": "<s>", "is_control": True},
                                 {"rank": 2, "token_str": "</s>", "is_control": True}]
    return obj


@pytest.mark.parametrize("version,with_specials,cut", [("v3", False, 0), ("v7", True, 3), ("v13", True, 0)])
def test_tekken_loads_as_mistral_common_reads_it(tmp_path, version, with_specials, cut):
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    n = len(small_ranks())
    obj = tekken_json(version, with_specials, vocab_size=20 + n - cut)
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(obj), encoding="utf-8")
    tok = tokenforge.load(path)
    ref = tekken.Tekkenizer.from_file(path)
    for line in TEXT.split("\n"):
        assert tok.encode_ordinary(line) == ref.encode(line, bos=False, eos=False), line
    assert tok.n_vocab == ref.n_words
    assert tok.special_tokens["<s>"] == ref.bos_id
    # saved as tekken, mistral_common reads the same ids
    out = tmp_path / "again.json"
    tok.save(out, format="tekken")
    again = tekken.Tekkenizer.from_file(out)
    assert again.encode(TEXT, bos=False, eos=False) == ref.encode(TEXT, bos=False, eos=False)
    assert tokenforge.load(out).encode_ordinary(TEXT) == tok.encode_ordinary(TEXT)


def test_tekken_errors_name_the_place(tmp_path):
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(tekken_json("v13")), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tekken\.json: special_tokens: missing, and a 'v13' tekken file must list"):
        tokenforge.load(path)
    obj = tekken_json()
    obj["vocab"][5]["rank"] = 7
    path.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\[5\]\.rank: expected 5"):
        tokenforge.load(path)
    obj = tekken_json(vocab_size=10_000)
    path.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(ValueError, match=r"config\.default_vocab_size: 10000 does not fit"):
        tokenforge.load(path)
    path.write_text(json.dumps(tekken_json()), encoding="utf-8")
    with pytest.raises(ValueError, match=r"takes only name, not pattern"):
        tokenforge.load(path, pattern="gpt2", special_tokens={})


def test_tekken_save_refuses_what_it_cannot_say(tmp_path):
    tok = tokenforge.Tokenizer(pattern="gpt2", mergeable_ranks=small_ranks(), special_tokens={"<s>": 500})
    with pytest.raises(ValueError, match=r"tekken: the special tokens must have the ids 0\.\.k-1"):
        tok.save(tmp_path / "t.json", format="tekken")


# --------------------------------------------------------------------------------------------------
# CLIP's merges


def clip_merges_file(gz: bool) -> bytes:
    merges = ["i n", "t h", "a n", "r e", "a r", "e r", "th e</w>", "in g</w>", "o u", "c a", "ca t</w>", "o n"]
    data = ("\"bpe_simple_vocab_16e6.txt#version: 0.2\n" + "\n".join(merges) + "\n").encode()
    return gzip.compress(data) if gz else data


@pytest.mark.parametrize("gz", [True, False])
def test_clip_merges_are_recognised(tmp_path, gz):
    path = tmp_path / ("bpe.txt.gz" if gz else "bpe.txt")
    path.write_bytes(clip_merges_file(gz))
    assert detect.sniff(path, detect._gunzip(path, path.read_bytes()))[0] == "clip"


def test_clip_merges_encode_as_transformers_clip(tmp_path):
    from transformers import CLIPTokenizerFast

    path = tmp_path / "bpe_simple_vocab_16e6.txt.gz"
    path.write_bytes(clip_merges_file(True))
    merges = clip.merges_of(path, gzip.decompress(path.read_bytes()), 12)
    vocab = clip.vocabulary(merges)
    (tmp_path / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    ref = CLIPTokenizerFast(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))  # positional: renamed in transformers 5
    tok = tokenforge.load(path, merges_count=12)
    text = "The cat in THE  ring, a photo of a cat!"
    assert tok.encode(text, add_special_tokens=False) == ref(text, add_special_tokens=False)["input_ids"]


# --------------------------------------------------------------------------------------------------
# transformers model folders


def hf_byte_level(tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = [("t", "h"), ("th", "e"), ("Ġ", "the")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok


def test_model_folder_keeps_the_chat_template(tmp_path):
    from transformers import AutoTokenizer

    hf = hf_byte_level(tmp_path)
    folder = tmp_path / "model"
    folder.mkdir()
    hf.save(str(folder / "tokenizer.json"))
    template = "{% for m in messages %}{{ m['content'] }}<|endoftext|>{% endfor %}"
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>", "chat_template": template}))
    (folder / "special_tokens_map.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    tok = tokenforge.load(folder)
    assert tok.chat_template == template
    assert tok.folder_config["special_tokens_map"] == {"eos_token": "<|endoftext|>"}
    ref = AutoTokenizer.from_pretrained(str(folder))
    assert ref.chat_template == template
    assert tok.encode(TEXT, allowed_special="all") == ref(TEXT, add_special_tokens=False)["input_ids"]
    with pytest.raises(ValueError, match=r"tokenizer_config\.json: a transformers tokenizer_config\.json.*load the folder"):
        tokenforge.load(folder / "tokenizer_config.json")
    # written back as a folder: transformers reads it, with the chat template
    tok.save(tmp_path / "again", format="transformers")
    again = AutoTokenizer.from_pretrained(str(tmp_path / "again"))
    assert again.chat_template == template
    assert again(TEXT, add_special_tokens=False)["input_ids"] == ref(TEXT, add_special_tokens=False)["input_ids"]
    assert tokenforge.load(tmp_path / "again").chat_template == template


def test_model_folder_of_vocab_and_merges_takes_added_tokens(tmp_path):
    # Whisper's first releases: vocab.json (with an empty token) + merges.txt + added_tokens.json
    from tokenforge.formats._common import to_chars

    ranks = small_ranks()
    vocab = {to_chars(t): i for t, i in ranks.items()}
    vocab[""] = len(vocab)
    merges = ["a b", "ab ab", "t h", "th e", "Ġ the", "e r", "Ġq u", "Ġ q", "i c", "ic k"]
    vocab.update({"Ġq": len(vocab), "ic": len(vocab) + 1})
    merges = [m for m in merges if all(p in vocab for p in m.split()) and "".join(m.split()) in vocab]
    folder = tmp_path / "multilingual"
    folder.mkdir()
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    (folder / "added_tokens.json").write_text(json.dumps({"<|endoftext|>": len(vocab)}))
    tok = tokenforge.load(folder)
    assert tok.special_tokens == {"<|endoftext|>": len(vocab)}
    from transformers import AutoTokenizer

    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "GPT2Tokenizer"}))
    ref = AutoTokenizer.from_pretrained(str(folder), use_fast=True)
    assert tok.encode(TEXT, allowed_special="all") == ref(TEXT, add_special_tokens=False)["input_ids"]


def test_json_that_is_no_tokenizer_names_what_was_tried(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"a": "b"}')
    with pytest.raises(ValueError, match=r"neither a tokenforge file, a Hugging Face tokenizer\.json, nor a vocabulary"):
        tokenforge.load(path)


def test_model_folder_refuses_added_tokens_it_would_lose(tmp_path, spm_model):
    import sentencepiece

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.model").write_bytes(spm_model)
    sp = sentencepiece.SentencePieceProcessor(model_proto=spm_model)
    # a token the model has, at its id: fine
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"added_tokens_decoder": {"1": {"content": sp.id_to_piece(1), "special": True}}}))
    assert tokenforge.load(folder).encode("hello") == sp.encode("hello")
    (folder / "added_tokens.json").write_text(json.dumps({"<|im_start|>": 300}))
    with pytest.raises(ValueError, match=r"model: the added token '<\|im_start\|>' \(id 300\) is not in tokenizer\.model"):
        tokenforge.load(folder)


def test_gzip_bomb_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(detect, "MAX_GUNZIPPED", 1000)
    path = tmp_path / "ranks.gz"
    path.write_bytes(gzip.compress(b"a" * 5000))
    with pytest.raises(ValueError, match=r"ranks\.gz: unpacks to more than 1000 bytes"):
        tokenforge.load(path)
    path.write_bytes(gzip.compress(b"abc")[:-6])  # cut: no end
    with pytest.raises(ValueError, match=r"ranks\.gz: gzip data that does not unpack"):
        tokenforge.load(path)


def test_merges_without_clip_header_are_not_read_as_clip(tmp_path):
    # a character-level merges.txt alone (its vocab.json named otherwise) must not get CLIP's vocabulary
    path = tmp_path / "bpe-merges.txt"
    path.write_text("#version: 0.2\nt h\nth e</w>\n", encoding="utf-8")
    assert detect.sniff(path, path.read_bytes())[0] == "merges"
    with pytest.raises(ValueError, match=r"pass vocab_file=PATH"):
        tokenforge.load(path)


def test_mutated_files_of_the_new_formats_give_value_errors(tmp_path):
    """Bytes changed, inserted or cut in rank files (with an empty token, gzipped), tekken JSON and
    CLIP merges: loading gives a tokenizer or a ValueError / TypeError, never another exception."""
    import random

    seeds = [rank_lines(small_ranks()), b"= 300\n" + rank_lines(small_ranks()), gzip.compress(rank_lines(small_ranks())),
             json.dumps(tekken_json()).encode(), json.dumps(tekken_json("v7", True)).encode(),
             clip_merges_file(True), clip_merges_file(False)]
    rng = random.Random(15)
    for i in range(600):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            pos = rng.randrange(len(data) + 1)
            op = rng.random()
            if op < 0.4 and data:
                data[min(pos, len(data) - 1)] = rng.randrange(256)
            elif op < 0.7:
                data[pos:pos] = bytes([rng.randrange(256)])
            else:
                del data[pos:pos + rng.randint(1, 20)]
        path = tmp_path / f"f{i % 7}"
        path.write_bytes(bytes(data))
        try:
            tokenforge.load(path, **({"pattern": "gpt2", "special_tokens": {}} if i % 3 == 0 else {}))
        except (ValueError, TypeError):
            pass


def test_loading_pauses_the_cyclic_collector_and_restores_it(tmp_path):
    import gc

    path = tmp_path / "t.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256)))
    assert gc.isenabled()
    tokenforge.load(path, pattern="gpt2", special_tokens={})
    assert gc.isenabled()
    with pytest.raises(ValueError):
        tokenforge.load(tmp_path / "missing.json")
    assert gc.isenabled()  # (after an error too)
    gc.disable()
    try:
        tokenforge.load(path, pattern="gpt2", special_tokens={})
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_a_file_that_cannot_seek_is_read_whole(tmp_path):
    import threading

    source = tmp_path / "t.tiktoken"
    source.write_bytes(b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256)))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(source.read_bytes()))
    writer.start()
    try:
        tok = tokenforge.load(fifo, pattern="gpt2", special_tokens={})
    finally:
        writer.join()
    assert tok.encode("hi") == tokenforge.load(source, pattern="gpt2", special_tokens={}).encode("hi")
