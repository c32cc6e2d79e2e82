"""BERT's `vocab.txt`: one WordPiece token per line, the line number (from 0) is its id.

Recognised by content: UTF-8 text, no line empty or holding whitespace, and either a bracketed
special token of BERT's (`[UNK]`, `[CLS]`, `[SEP]`, `[PAD]`, `[MASK]`) or `##` continuation pieces.
The file says nothing else, so loading assumes BERT's pipeline: BertNormalizer(lowercase=True),
BertPreTokenizer, `[UNK]`, `##`, at most 100 characters per word; keywords change it:
`lowercase=False` (cased models), `unk_token=`, `max_input_chars_per_word=`, `post_processor=`
(e.g. post_processors.cls_sep()).

Saving writes a WordPieceTokenizer whose pipeline the file can be read back into: prefix `##`,
BertNormalizer (clean_text, handle_chinese_chars, strip_accents as lowercase), BertPreTokenizer,
ids 0..n-1. A cased tokenizer (lowercase=False) is written too; load it with lowercase=False.
Anything else is refused (use "huggingface" or "tokenforge"): the file could not say it.
"""

from __future__ import annotations

from pathlib import Path

from ._common import fail

BERT_MARKERS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")
_OPTIONS = {"lowercase", "unk_token", "max_input_chars_per_word", "post_processor", "name"}


def _lines(data: bytes) -> list[str] | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def looks_like(data: bytes) -> bool:
    lines = _lines(data[:1 << 20])
    if not lines:
        return False
    if len(data) > 1 << 20:
        lines = lines[:-1]  # the last line may be cut
    if any(any(c.isspace() for c in line) for line in lines):
        return False  # (an empty line is not refused here: load names its line)
    return any(line in BERT_MARKERS for line in lines) or any(line.startswith("##") and len(line) > 2 for line in lines)


def load(path: Path, data: bytes, **overrides):
    from .. import normalizers, pipeline, pre_tokenizers
    from ..models import WordPiece

    unknown = set(overrides) - _OPTIONS
    if unknown:
        raise ValueError(f"{path}: a vocab.txt takes {', '.join(sorted(_OPTIONS))}, not {', '.join(sorted(unknown))}")
    lines = _lines(data)
    if lines is None:
        fail(path, None, "not UTF-8 text")
    vocab: dict[str, int] = {}
    for n, token in enumerate(lines):
        if not token:
            fail(path, f"line {n + 1}", "empty token")
        if any(c.isspace() for c in token):
            fail(path, f"line {n + 1}", f"{token!r} holds whitespace, which no WordPiece token can")
        if token in vocab:
            fail(path, f"line {n + 1}", f"token {token!r} appears twice (also on line {vocab[token] + 1})")
        vocab[token] = n
    unk = overrides.get("unk_token", "[UNK]")
    if unk not in vocab:
        fail(path, None, f"the unknown token {unk!r} is not in the file (pass unk_token=)")
    model = WordPiece(vocab, unk_token=unk, max_input_chars_per_word=overrides.get("max_input_chars_per_word", 100))
    tok = pipeline.PipelineTokenizer.__new__(pipeline.WordPieceTokenizer)
    # The unknown token is a special token too, as BertTokenizerFast and tokenizers'
    # BertWordPieceTokenizer read a vocab.txt: "[UNK]" written in the text is matched (when special
    # tokens are allowed) and skip_special_tokens leaves it out of a decode.
    pipeline.PipelineTokenizer.__init__(
        tok, model, special_tokens={t: model.vocab[t] for t in model.special_tokens},
        normalizer=normalizers.BertNormalizer(lowercase=overrides.get("lowercase", True)),
        pre_tokenizer=pre_tokenizers.BertPreTokenizer(), post_processor=overrides.get("post_processor"),
        name=overrides.get("name") or (path.parent.name if path.stem == "vocab" else path.stem) or "wordpiece")
    return tok


def save(tok, path) -> None:
    from .. import normalizers as N
    from .. import pre_tokenizers as P
    from ..models import WordPiece

    m = getattr(tok, "model", None)
    if not isinstance(m, WordPiece):
        raise ValueError(f"bert_vocab: a vocab.txt holds a WordPiece vocabulary, not a {type(tok).__name__}")
    n = tok.normalizer
    problems = []
    if m.prefix != "##":
        problems.append(f"the continuation prefix {m.prefix!r}")
    if not (isinstance(n, N.BertNormalizer) and n.clean_text and n.handle_chinese_chars
            and (n.strip_accents is None or n.strip_accents == n.lowercase)):
        problems.append(f"the normalizer {n!r}")
    if not isinstance(tok.pre_tokenizer, P.BertPreTokenizer):
        problems.append(f"the pre-tokenizer {tok.pre_tokenizer!r}")
    if m.special_tokens and set(m.special_tokens) - set(BERT_MARKERS):
        problems.append(f"the special tokens {sorted(set(m.special_tokens) - set(BERT_MARKERS))}")
    if problems:
        raise ValueError(f"bert_vocab: a vocab.txt cannot say {', '.join(problems)}; save as 'huggingface' or 'tokenforge'")
    p = Path(path)
    if p.is_dir() or str(path).endswith(("/", "\\")) or not p.suffix:
        p = p / "vocab.txt"
    try:
        m.save_vocab_file(p)
    except ValueError as e:
        raise ValueError(f"bert_vocab: {e}") from None
