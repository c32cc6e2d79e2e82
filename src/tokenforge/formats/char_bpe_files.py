"""The tutorials' character-level `vocab.json` + `merges.txt` (Sennrich's BPE with an end-of-word
marker), the same two files as the byte-level format (bpe_files.py), told apart by content:

- byte-level files spell tokens in GPT-2's byte alphabet and have a token for each of the 256 bytes;
- character-level files have an end-of-word marker (`</w>`, `</eow>`, or `end_of_word=` given):
  attached to the last character (`e</w>`, Hugging Face's `end_of_word_suffix`) or, when the marker
  is a token of its own that merges name (`e </w>`), separate (the tutorials' `</eow>` form).

Loading gives a CharBPETokenizer; what the files cannot say is assumed, or given as a keyword:
the Whitespace pre-tokenizer (`pre_tokenizer=`), no normalizer (`normalizer=`), the unknown token
`<unk>` if the vocabulary has it (`unk_token=`). Special tokens: entries that are neither a
character (with its marker) nor the result of a merge (`<pad>`, `<unk>`, ...).

Saving writes a CharBPETokenizer with no normalizer, the Whitespace pre-tokenizer, no start marker
and no post-processor (else: use "huggingface" or "tokenforge"), loadable by
`tokenizers.models.BPE.from_file(..., end_of_word_suffix=...)` with the same ids.
"""

from __future__ import annotations

from pathlib import Path

from ._common import fail

MARKERS = ("</w>", "</eow>")
_OPTIONS = {"end_of_word", "unk_token", "pre_tokenizer", "normalizer", "post_processor", "name", "special_tokens"}


def marker_of(vocab: dict, given=None) -> str | None:
    """The end-of-word marker of a character-level vocabulary, or None (then not character-level)."""
    if given:
        return given
    for m in MARKERS:
        if any(t.endswith(m) for t in vocab):
            return m
    return None


def load(vocab_path: Path, vocab: dict, merges_path: Path, pairs: list[tuple[str, str]], numbered, overrides: dict):
    from .. import pipeline
    from ..models import CharBPE

    unknown = set(overrides) - _OPTIONS
    if unknown:
        raise ValueError(f"{vocab_path}: character-level vocab.json + merges.txt take {', '.join(sorted(_OPTIONS))}, "
                         f"not {', '.join(sorted(unknown))}")
    eow = marker_of(vocab, overrides.get("end_of_word"))
    owner: dict[int, str] = {}
    for s, i in vocab.items():
        if not s or i < 0:
            fail(vocab_path, f"[{s!r}]", f"invalid entry {s!r}: {i}")
        if i in owner:
            fail(vocab_path, f"[{s!r}]", f"duplicate id {i} (also {owner[i]!r})")
        owner[i] = s
    separate = eow in vocab and any(b == eow for _, b in pairs)
    seen = set()
    for lineno, (a, b) in numbered(pairs):
        for part in (a, b, a + b):
            if part not in vocab:
                fail(merges_path, f"line {lineno}", f"{part!r} is not a token of {vocab_path.name}")
        if (a, b) in seen:
            fail(merges_path, f"line {lineno}", f"the merge {a!r} + {b!r} appears twice")
        seen.add((a, b))
    made = {a + b for a, b in pairs}

    def initial(t: str) -> bool:
        return len(t) == 1 or t == eow or (not separate and t.endswith(eow) and len(t) == len(eow) + 1)

    special = overrides.get("special_tokens")
    if special is None:
        special = [t for t in sorted(vocab, key=vocab.get) if t not in made and not initial(t)]
    unk = overrides.get("unk_token", "<unk>" if "<unk>" in vocab else None)
    try:
        model = CharBPE(vocab, pairs, end_of_word=eow, attach_markers=not separate, unk_token=unk, special_tokens=special)
    except ValueError as e:
        fail(f"{vocab_path} + {merges_path.name}", None, str(e))
    tok = pipeline.PipelineTokenizer.__new__(pipeline.CharBPETokenizer)
    name = vocab_path.name[: -len("vocab.json")].rstrip("-_.") if vocab_path.name.endswith("vocab.json") else vocab_path.stem
    try:
        pipeline.PipelineTokenizer.__init__(tok, model, normalizer=overrides.get("normalizer"),
                                            pre_tokenizer=overrides.get("pre_tokenizer", "whitespace"),
                                            post_processor=overrides.get("post_processor"),
                                            name=overrides.get("name") or name or vocab_path.parent.name or "char_bpe")
    except (TypeError, ValueError) as e:
        fail(vocab_path, None, str(e))
    return tok


def save(tok, path) -> None:
    from .. import pre_tokenizers as P
    from ..models import CharBPE
    from .pair_files import paths, write_pair

    m = getattr(tok, "model", None)
    if not isinstance(m, CharBPE):
        raise ValueError(f"vocab_merges: writes byte-level BPE (Tokenizer) or character-level BPE (CharBPETokenizer), "
                         f"not a {type(tok).__name__}")
    problems = []
    if m.end_of_word is None:
        problems.append("a vocabulary without an end-of-word marker (it would read back as byte-level)")
    elif m.end_of_word not in MARKERS:
        problems.append(f"the marker {m.end_of_word!r} (readable with end_of_word=, not by content)")
    if m.start_of_word:
        problems.append(f"the start-of-word marker {m.start_of_word!r}")
    if tok.normalizer is not None:
        problems.append(f"the normalizer {tok.normalizer!r}")
    if not isinstance(tok.pre_tokenizer, P.Whitespace):
        problems.append(f"the pre-tokenizer {tok.pre_tokenizer!r}")
    if tok.post_processor is not None:
        problems.append(f"the post-processor {tok.post_processor!r}")
    if m.unk_token not in (None, "<unk>") or (m.unk_token is None and "<unk>" in m.vocab):
        problems.append(f"the unknown token {m.unk_token!r}")
    if problems and not (len(problems) == 1 and "readable with end_of_word" in problems[0]):
        raise ValueError(f"vocab_merges: vocab.json + merges.txt cannot say {'; '.join(problems)}; "
                         "save as 'huggingface' or 'tokenforge'")
    for a, b in m.merges:
        if any(c.isspace() for c in a + b):
            raise ValueError(f"vocab_merges: the merge ({a!r}, {b!r}) holds whitespace, which merges.txt cannot")
    vocab_path, merges_path = paths(path, "vocab_merges")
    write_pair(vocab_path, dict(sorted(m.vocab.items(), key=lambda kv: kv[1])), merges_path, [f"{a} {b}" for a, b in m.merges])
