"""Character-level BPE (Sennrich et al. 2016): characters, word markers, merges over word counts.

    >>> m = CharBPE.train_from_counts({"low": 5, "lower": 2, "newest": 6, "widest": 3}, vocab_size=30)
    >>> [m.id_to_token(i) for i in m.encode_words(["lowest"])]
    ['low', 'est</w>']

A word is split into characters and marked: the end-of-word marker (`</w>` by default, e.g.
`</eow>`) and, if given, a start-of-word marker. Two ways to mark:

- attached (default; Sennrich's subword-nmt and Hugging Face's `BPE(end_of_word_suffix=...)`):
  the marker is glued to the last character, `e</w>` is one initial symbol;
- separate (`attach_markers=False`, the tutorials' `</eow>`): the marker is a symbol of its own,
  which merges like any other (`('e', '</eow>')` is typically the first merge).

Encoding applies the merges by rank, lowest first, leftmost on ties: exactly HF's `models.BPE` (same
vocab.json + merges.txt + `end_of_word_suffix` => same ids; the native loop is cpp/char_bpe.cc).
An initial symbol missing from the vocabulary becomes `<unk>` (one per character); without an
unknown token it raises ValueError. Special tokens (`<pad> <unk> <bos> <eos>` by default) get the
first ids and are never produced from text: "<unk>" typed in the text is encoded as characters.

Decoding: a token ending with the end marker ends a word (the marker becomes a space; the space
after the last word is dropped); with only a start marker, it becomes a space before the word.
With no marker at all, tokens are joined as they are: use a pre-tokenizer that keeps whitespace
(Regex, or none) or the spaces between words are lost.
Lossy where the pre-tokenizer dropped or added spacing ("Hello, world" -> "Hello , world" with the
Whitespace pre-tokenizer), and where `<unk>` stands for a character (it decodes as "<unk>"; an
unknown *last* character also hides its end marker in attached mode, so that word's space is lost,
as in HF). A marker typed literally in the text stays text: training never makes a token that
contains a marker across a join, so it decodes back exactly (a vocabulary from elsewhere may not
have that guarantee).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Mapping, Sequence

from .. import _core
from .base import NativeWordModel, pre_token_counts, train_pairs
from .byte_bpe import Merges

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


class CharBPE(NativeWordModel):
    kind = "char_bpe"

    def __init__(self, vocab: Mapping[str, int], merges: Sequence[tuple[str, str]], *,
                 end_of_word: str | None = "</w>", start_of_word: str | None = None, attach_markers: bool = True,
                 unk_token: str | None = "<unk>", special_tokens=SPECIAL_TOKENS, drop_unknown: bool = False,
                 _native=None):
        super().__init__(vocab, special_tokens)
        # Without an unknown token, a character outside the vocabulary is an error, or with
        # drop_unknown (tokenizer.json files whose unk_token is null: tokenizers skips it) left out.
        self.drop_unknown = bool(drop_unknown) and unk_token is None
        for m in (end_of_word, start_of_word):
            if m is not None and (not isinstance(m, str) or not m):
                raise ValueError("a word marker must be a non-empty str or None")
        self.end_of_word, self.start_of_word = end_of_word or None, start_of_word or None
        self.attach_markers = bool(attach_markers)
        if unk_token is not None and unk_token not in self.vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.unk_token = unk_token
        self.unk_id = None if unk_token is None else self.vocab[unk_token]
        if unk_token is not None and unk_token not in self.special_tokens:
            self.special_tokens.append(unk_token)
        vocab = self.vocab
        if isinstance(merges, Merges):
            # rules read natively from a file (formats/hf_families.py: _core.text_bpe_merges), which
            # vouches for them; the pairs are made when asked for
            self._merges, rules, native_rules = None, merges, merges.packed
        else:
            self._merges = [(str(a), str(b)) for a, b in merges]
            try:
                rules = native_rules = [(vocab[a], vocab[b], vocab[a + b]) for a, b in self._merges]
            except KeyError:
                n, a, b, missing = next((n, a, b, x) for n, (a, b) in enumerate(self._merges) for x in (a, b, a + b)
                                        if x not in vocab)
                raise ValueError(f"merge {n} ({a!r}, {b!r}) uses {missing!r}, which is not in the vocabulary") from None
        self._rules = rules
        self._native = _native if _native is not None else _core.CharBpe(
            vocab, native_rules, self.end_of_word or "", self.start_of_word or "", self.attach_markers,
            -1 if self.unk_id is None else self.unk_id, drop_unknown=self.drop_unknown)

    @classmethod
    def from_text_merges(cls, vocab: dict[str, int], merges: list, *, end_of_word: str | None, unk_token: str | None,
                         special_tokens, drop_unknown: bool) -> "CharBPE | None":
        """A tokenizer.json's model (attached end-of-word marker, no start marker): its merges as the
        file writes them ("left right" or [left, right]), read natively in the model's own table of
        tokens; None if one is not plain (a part that is no token, a pair listed twice...), for the
        caller's reader to name."""
        unk_id = vocab.get(unk_token, -1) if unk_token is not None else -1
        made = _core.CharBpe.from_text_merges(vocab, merges, True, end_of_word or "", unk_id,
                                              bool(drop_unknown) and unk_token is None)
        if made is None:
            return None
        native, packed = made
        return cls(vocab, Merges(packed), end_of_word=end_of_word, start_of_word=None, attach_markers=True,
                   unk_token=unk_token, special_tokens=special_tokens, drop_unknown=drop_unknown, _native=native)

    @property
    def merges(self) -> list[tuple[str, str]]:
        if self._merges is None:
            by_id = self._by_id
            self._merges = [(by_id[a], by_id[b]) for a, b, _ in self._rules]
        return self._merges

    @functools.cached_property
    def _ranks(self) -> dict:
        """(left id, right id) -> (rank, merged id), for the Python rule (made when first used)."""
        ranks: dict = {}
        for r, (a, b, m) in enumerate(self._rules):
            ranks.setdefault((a, b), (r, m))
        return ranks

    # -- encoding ---------------------------------------------------------------------------------
    def initial_symbols(self, word: str) -> list[str]:
        """The symbols a word starts as, before any merge."""
        if not word:
            return []
        eow, sow = self.end_of_word or "", self.start_of_word or ""
        if self.attach_markers:
            syms = list(word)
            syms[0] = sow + syms[0]
            syms[-1] = syms[-1] + eow
            return syms
        return ([sow] if sow else []) + list(word) + ([eow] if eow else [])

    def encode_word_reference(self, word: str) -> list[int]:
        """Merge the lowest-ranked adjacent pair, leftmost first, until none applies."""
        ids = []
        for s in self.initial_symbols(word):
            if s in self.vocab:
                ids.append(self.vocab[s])
            elif self.unk_id is not None:
                ids.append(self.unk_id)
            elif self.drop_unknown:
                continue
            else:
                raise ValueError(f"the character {s!r} is not in the vocabulary and the model has no unknown token")
        while len(ids) > 1:
            best = min(((self._ranks[p][0], k) for k, p in enumerate(zip(ids, ids[1:])) if p in self._ranks), default=None)
            if best is None:
                break
            k = best[1]
            ids[k:k + 2] = [self._ranks[(ids[k], ids[k + 1])][1]]
        return ids

    # -- decoding ---------------------------------------------------------------------------------
    def decode_tokens(self, tokens: list[str]) -> str:
        eow, sow = self.end_of_word, self.start_of_word
        parts = []
        for t in tokens:
            if sow and t.startswith(sow) and t != self.unk_token:
                t = ("" if eow else " ") + t[len(sow):]
            if eow and t.endswith(eow) and t != self.unk_token:
                t = t[: -len(eow)] + " "
            parts.append(t)
        text = "".join(parts)
        if eow and tokens and tokens[-1].endswith(eow) and text.endswith(" "):
            text = text[:-1]
        elif not eow and sow and tokens and tokens[0].startswith(sow) and text.startswith(" "):
            text = text[1:]
        return text

    # -- files ------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "vocab": self._ordered_vocab() if sorted(self._by_id) == list(range(len(self._by_id))) else None,
            "vocab_map": None if sorted(self._by_id) == list(range(len(self._by_id))) else self.vocab,
            "merges": [list(m) for m in self.merges],
            "end_of_word": self.end_of_word,
            "start_of_word": self.start_of_word,
            "attach_markers": self.attach_markers,
            "unk_token": self.unk_token,
            "special_tokens": list(self.special_tokens),
            "drop_unknown": self.drop_unknown,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CharBPE":
        vocab = d.get("vocab_map") or {t: i for i, t in enumerate(d["vocab"])}
        return cls(vocab, [tuple(m) for m in d["merges"]], end_of_word=d["end_of_word"], start_of_word=d["start_of_word"],
                   attach_markers=d["attach_markers"], unk_token=d["unk_token"], special_tokens=d["special_tokens"],
                   drop_unknown=d.get("drop_unknown", False))

    def save_vocab_merges(self, directory, prefix: str = "") -> tuple[Path, Path]:
        """Writes vocab.json ({token: id}) and merges.txt ("left right" per line, HF's
        "#version: 0.2" header), the files HF's `BPE.from_file` and the tutorials read."""
        from ..outputs import write_atomic

        d = Path(directory)
        for a, b in self.merges:
            if any(c.isspace() for c in a + b):
                raise ValueError(f"merge ({a!r}, {b!r}) contains whitespace, which merges.txt cannot hold")
        vocab_path, merges_path = d / f"{prefix}vocab.json", d / f"{prefix}merges.txt"
        write_atomic(vocab_path, json.dumps(self.vocab, ensure_ascii=False, indent=1).encode("utf-8"))
        write_atomic(merges_path, ("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in self.merges)).encode("utf-8"))
        return vocab_path, merges_path

    @classmethod
    def from_vocab_merges_files(cls, vocab_path, merges_path, **kwargs) -> "CharBPE":
        vocab = json.loads(Path(vocab_path).read_text(encoding="utf-8"))
        merges = []
        for n, line in enumerate(Path(merges_path).read_text(encoding="utf-8").split("\n"), 1):
            if not line or line.startswith("#version"):
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ValueError(f"{merges_path}, line {n}: expected 'left right', got {line[:80]!r}")
            merges.append((parts[0], parts[1]))
        return cls(vocab, merges, **kwargs)

    # -- training ---------------------------------------------------------------------------------
    @classmethod
    def train_from_counts(cls, counts: Mapping[str, int], *, vocab_size: int = 8000, min_frequency: int = 1,
                          end_of_word: str | None = "</w>", start_of_word: str | None = None,
                          attach_markers: bool = True, special_tokens=SPECIAL_TOKENS, unk_token: str | None = "<unk>",
                          native: bool = True) -> "CharBPE":
        """Learns merges over a pre-token count {word: count}: the most frequent adjacent pair first
        (ties: the smaller pair of texts), until the vocabulary (special tokens + characters +
        merges) has vocab_size tokens or no pair occurs min_frequency times. All characters seen
        are kept even beyond vocab_size."""
        special_tokens = list(dict.fromkeys([*special_tokens, *([unk_token] if unk_token else [])]))
        proto = cls.__new__(cls)
        proto.end_of_word, proto.start_of_word, proto.attach_markers = end_of_word or None, start_of_word or None, attach_markers
        items = pre_token_counts(counts)
        split = [proto.initial_symbols(w) for w, _ in items]
        alphabet = sorted({s for w in split for s in w} - set(special_tokens), key=lambda s: s.encode())
        index = {s: i for i, s in enumerate(alphabet)}
        room = vocab_size - len(special_tokens) - len(alphabet)
        new, merges = train_pairs(alphabet, [[index[s] for s in w] for w in split], [c for _, c in items],
                                  score="count", min_frequency=min_frequency, max_new_tokens=max(room, 0),
                                  markers=[end_of_word or "", start_of_word or "", *special_tokens], native=native)
        symbols = alphabet + list(new)
        tokens = special_tokens + alphabet + [t for t in new if t not in special_tokens]
        return cls({t: i for i, t in enumerate(tokens)}, [(symbols[l], symbols[r]) for l, r, _ in merges],
                   end_of_word=end_of_word, start_of_word=start_of_word, attach_markers=attach_markers,
                   unk_token=unk_token, special_tokens=special_tokens)
