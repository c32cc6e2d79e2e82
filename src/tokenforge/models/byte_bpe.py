"""Byte-level BPE: tokens are byte strings; tiktoken's ranks or Hugging Face's merges.

    >>> m = ByteBPE({bytes([i]): i for i in range(256)} | {b"ab": 256})
    >>> m.encode_byte_pieces([b"abc"])
    [256, 99]

Two merge rules (see cpp/bpe.h): without explicit merges the ids are tiktoken ranks and any two
adjacent parts whose concatenation is a token may merge; with explicit merges (Hugging Face,
`merges.txt`) only listed pairs merge, in list order. `ignore_merges` (HF's option; always on for
tiktoken's rule) keeps a piece that is a token whole. An explicit empty merge list means "no merges":
every piece becomes single bytes, as HF does, not tiktoken's rule.

The work runs in the native core (`_core.Encoder`). The model is used two ways: on pieces already
split (encode_pieces: the pieces are GPT-2 characters, as Hugging Face's ByteLevel pre-tokenizer
gives them), and fused with its split pattern and special tokens into one native call per text
(`encoder(pattern, specials)`, what the Tokenizer uses for tiktoken-style pipelines). `native_encoder`
below is the one place the engine is constructed.
"""

from __future__ import annotations

import functools
from operator import itemgetter
from typing import Mapping, Sequence

from .. import _core
from ..byte_alphabet import NOT_IN_UTF8, from_chars, missing_bytes, to_chars
from .base import tokens_of


def native_encoder(tokens, merge_rules, whole_piece_lookup: bool, pat_str: str | None, specials, absent=b"",
                   decode_only=()):
    """(_core.Encoder, whether it splits text itself). The engine splits with any pattern of its
    subset (cpp/split_regex.h); for another pattern it raises UnsupportedPattern, and the engine is
    made without one: the pre-tokenizer splits with `regex`, the engine runs the byte pairs.
    `absent`: the bytes without a token (only bytes no UTF-8 text holds; see ByteBPE);
    `decode_only`: [(id, bytes)] that only the decoder knows (see ByteBPE)."""
    if pat_str is not None:
        try:
            return _core.Encoder(tokens, merge_rules, whole_piece_lookup, pat_str, specials, absent, decode_only), True
        except _core.UnsupportedPattern:
            pass
    return _core.Encoder(tokens, merge_rules, whole_piece_lookup, None, specials, absent, decode_only), False


def absent_bytes_supported(missing, ignore_merges: bool) -> bool:
    """Whether ByteBPE takes a vocabulary without tokens for the bytes `missing`."""
    text_bytes = [b for b in missing if b not in NOT_IN_UTF8]
    return not text_bytes or (not ignore_merges and not any(0x80 <= b < 0xC0 for b in text_bytes))


def _characters_holding(byte_values):
    """A compiled regex of the characters whose UTF-8 holds one of the bytes (ASCII bytes or lead
    bytes), or None for none."""
    if not byte_values:
        return None
    import re

    ranges = []
    for b in byte_values:
        if b < 0x80:
            ranges.append((b, b))
        else:  # a lead byte: the code points it starts
            bits, shift = (0x1F, 6) if b < 0xE0 else (0x0F, 12) if b < 0xF0 else (0x07, 18)
            first = (b & bits) << shift
            ranges.append((first, first + (1 << shift) - 1))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{z:08x}" for a, z in ranges) + "]")


class Merges:
    """Merges read natively from a file against a vocabulary (formats/huggingface.py): only the
    rules (left id, right id, merged id), in order, packed as native uint32 triples (`packed`, what
    `_core.byte_level_merges` returns). ByteBPE hands them to the engine as they are and makes the
    byte pairs from the ids when they are asked for (saving a file, `merges`): a tuple of byte
    strings per merge was most of loading a tokenizer.json, and a tuple of ids per merge a tenth
    of it. The reader vouches that the ids are the ones of the ranks it passes along, and that
    those ranks are plain (bytes -> int ids in [0, 2**32 - 1), each id once:
    `_core.byte_level_merges` checks it), so ByteBPE takes them without a copy or its own checks."""

    def __init__(self, packed: bytes):
        if len(packed) % 12:
            raise ValueError("packed merges: not a whole number of uint32 triples")
        self.packed = packed

    def __len__(self) -> int:
        return len(self.packed) // 12

    def __iter__(self):
        """(left id, right id, merged id) per merge."""
        ids = memoryview(self.packed).cast("I")
        return zip(ids[0::3], ids[1::3], ids[2::3])


def _columns(pairs) -> tuple[list, list]:
    """(lefts, rights) of a sequence of pairs."""
    pairs = list(pairs)
    if not pairs:
        return [], []
    if set(map(len, pairs)) != {2}:  # zip would cut longer ones short: unpack them to raise
        pairs = [(a, b) for a, b in pairs]
    return list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))


class ByteBPE:
    kind = "byte_bpe"

    def __init__(self, ranks: Mapping[bytes, int], merges: Sequence[tuple[bytes, bytes]] | None = None,
                 ignore_merges: bool | None = None, decode_only: Mapping[int, str] | None = None):
        # Construction works on whole columns (zip, map, set: no Python code per token), which made
        # loading a 128k-token vocabulary several times faster; anything unusual takes the loops
        # below, which name the problem.
        self._pairs_unmade = isinstance(merges, Merges)  # made from the rules on first use
        self.ranks = ranks if self._pairs_unmade else dict(ranks)
        self._ranks_rule = merges is None
        if merges is None or self._pairs_unmade:
            self._merges_given = None
        else:
            lefts, rights = _columns(merges)
            self._merges_given = list(zip(map(bytes, lefts), map(bytes, rights)))
        # tiktoken's rule always emits a piece that is a token whole; with explicit merges that is
        # Hugging Face's `ignore_merges` option, off unless asked for.
        self.ignore_merges = merges is None if ignore_merges is None else bool(ignore_merges)
        if not self._pairs_unmade and not self._plainly_valid():
            self._validate()
        # The engine splits every piece into its bytes first: a vocabulary without some single byte
        # could not encode text containing it. Refused here, so that a file without one does not
        # load and fail at its first encode (found by fuzz/fuzz_load.py). Except the bytes no UTF-8
        # text holds, which some vocabularies lack (MPT's, Falcon's, StarCoder's) and text never
        # needs: the engine gives them ids of its own that nothing decodes (`absent`), and raw byte
        # pieces lose them, as tokenizers drops a character without a token.
        # A vocabulary may also lack bytes text can hold (Falcon's control bytes, StarCoder's F1):
        # tokenizers drops such a character from a piece before merging (its neighbours may then
        # merge), which `droppable` tells the Tokenizer to do (pieces holding one go through
        # encode_pieces, which drops the absent bytes); not with ignore_merges, nor for continuation
        # bytes (no character class says which characters hold one).
        missing = missing_bytes(self.ranks)
        if not absent_bytes_supported(missing, self.ignore_merges):
            first = next(b for b in missing if b not in NOT_IN_UTF8)
            raise ValueError(f"byte {first} (0x{first:02X}) is not a token; in byte-level BPE every single byte must be one")
        self.absent = bytes(missing)
        self.droppable = _characters_holding([b for b in missing if b not in NOT_IN_UTF8])
        self.decode_only = self._checked_decode_only(decode_only or {})
        self._by_id_made = None
        # (left id, right id, merged id) per merge: a Merges as read, or a list of tuples
        self._rules = merges if isinstance(merges, Merges) else self._merge_rules()
        self._encoders: dict = {}
        self._plain_encoder = None

    def _checked_decode_only(self, decode_only: Mapping[int, str]) -> dict[int, str]:
        """Decode-only tokens: a tokenizer.json's vocabulary may hold tokens spelled with characters
        outside GPT-2's alphabet (Command-R's 1,403 emoji and tag characters). No merge makes them,
        so encoding never gives them; tokenizers' ByteLevel decoder gives a token with such a
        character its UTF-8. They keep their id and spelling ({id: spelling}), out of the byte-pair
        tables (43 of Command-R's have the same bytes as a token of the alphabet)."""
        out = dict(decode_only)
        if not out:
            return out
        if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < 2**32 - 1 for i in out) or \
                not all(isinstance(s, str) for s in out.values()):
            raise TypeError("decode_only must map int ids in [0, 2**32 - 1) to str tokens")
        taken = set(self.ranks.values()) & set(out)
        if taken:
            raise ValueError(f"the decode-only token {out[min(taken)]!r} has the id {min(taken)} of a mergeable token")
        spelled = [s for s in out.values() if from_chars(s) is not None]
        if spelled:
            raise ValueError(f"the decode-only token {spelled[0]!r} is spelled in GPT-2's alphabet (it is a mergeable token)")
        if len(set(out.values())) != len(out):
            raise ValueError("a decode-only token appears twice")
        return out

    @property
    def _by_id(self) -> dict[int, bytes]:
        """id -> bytes, made on first use (decoding, saving)."""
        if self._by_id_made is None:
            self._by_id_made = dict(zip(self.ranks.values(), self.ranks.keys()))
            self._by_id_made.update((i, s.encode("utf-8")) for i, s in self.decode_only.items())
        return self._by_id_made

    @functools.cached_property
    def _decode_only_ids(self) -> dict[str, int]:
        return {s: i for i, s in self.decode_only.items()}

    @property
    def merges_given(self) -> list[tuple[bytes, bytes]] | None:
        """The explicit merges as byte pairs, in order; None for tiktoken's rule (ranks only)."""
        if self._pairs_unmade:
            by_id = self._by_id
            self._merges_given = [(by_id[a], by_id[b]) for a, b, _ in self._rules]
            self._pairs_unmade = False
        return self._merges_given

    @property
    def _plain(self):
        """The engine without a split pattern (for pieces already split), made on first use: a
        Tokenizer with a native split pattern never needs it."""
        if self._plain_encoder is None:
            self._plain_encoder, _ = self.encoder(None, ())
        return self._plain_encoder

    def _plainly_valid(self) -> bool:
        ids = self.ranks.values()
        return (not ids or set(map(type, self.ranks)) <= {bytes, bytearray} and set(map(type, ids)) == {int}
                and min(ids) >= 0 and max(ids) < 2**32 - 1 and len(set(ids)) == len(ids))

    def _validate(self) -> None:
        for b, i in self.ranks.items():
            if not isinstance(b, (bytes, bytearray)):
                raise TypeError("mergeable_ranks must map bytes to int ids in [0, 2**32 - 1)")
            if isinstance(i, bool):
                raise TypeError("mergeable_ranks must map bytes to int ids in [0, 2**32 - 1), not bool")
            if not isinstance(i, int) or not 0 <= i < 2**32 - 1:
                if isinstance(i, int) and not isinstance(i, bool) and i >= 2**32 - 1:
                    raise ValueError(f"mergeable token ids must be below 2**32 - 1, got {i}")
                raise TypeError("mergeable_ranks must map bytes to int ids in [0, 2**32 - 1)")
        if len(set(self.ranks.values())) != len(self.ranks):
            raise ValueError("two mergeable tokens have the same id")

    def _merge_rules(self) -> list[tuple[int, int, int]]:
        if self.merges_given is None:
            return []
        ranks = self.ranks
        lefts, rights = _columns(self.merges_given)
        try:
            return list(zip(map(ranks.__getitem__, lefts), map(ranks.__getitem__, rights),
                            map(ranks.__getitem__, map(bytes.__add__, lefts, rights))))
        except KeyError:
            pass  # the loop names the merge
        rules = []
        for n, (a, b) in enumerate(self.merges_given):
            try:
                rules.append((ranks[a], ranks[b], ranks[a + b]))
            except KeyError:
                missing = next(x for x in (a, b, a + b) if x not in ranks)
                raise ValueError(f"merge {n} ({a!r}, {b!r}) uses {missing!r}, which is not in the vocabulary") from None
        return rules

    def encoder(self, pat_str: str | None, specials) -> tuple[object, bool]:
        """The native engine with a split pattern and special tokens [(text, id)], cached."""
        key = (pat_str, tuple(specials))
        hit = self._encoders.get(key)
        if hit is None:
            spec = [(s.encode("utf-8"), i) for s, i in specials]
            extra = (self.absent, [(i, s.encode("utf-8")) for i, s in self.decode_only.items()])
            if not self._pairs_unmade and self.merges_given == []:
                # No merges at all: HF gives single bytes. The native rule for an empty merge list is
                # tiktoken's, so the engine gets a rule that can never fire instead.
                ids = set(self.ranks.values())
                unused = next(i for i in range(max(ids, default=-1) + 1, -1, -1) if i not in ids and i < 2**32 - 1)
                rules = [(unused, unused, unused)]
                hit = native_encoder(self.ranks, rules, self.ignore_merges, pat_str, spec, *extra)
            else:
                rules = self._rules.packed if isinstance(self._rules, Merges) else self._rules
                hit = native_encoder(self.ranks, rules, self.ignore_merges, pat_str, spec, *extra)
            if len(self._encoders) < 16:
                self._encoders[key] = hit
        return hit

    # -- the model stage ---------------------------------------------------------------------------
    def encode_byte_pieces(self, pieces: list[bytes]) -> list[int]:
        return self._plain.encode_pieces(pieces)

    def encode_pieces(self, pieces: list[str]) -> list[int]:
        """Pieces spelled in GPT-2's characters (what ByteLevel gives); a piece with a character
        outside that alphabet is taken as UTF-8 text."""
        out = []
        for p in pieces:
            b = from_chars(p)
            out.append(p.encode("utf-8") if b is None else b)
        return self._plain.encode_pieces(out)

    def encode_word_reference(self, piece: str) -> list[int]:
        from .. import reference

        b = from_chars(piece)
        b = piece.encode("utf-8") if b is None else b
        if self._ranks_rule:
            return reference.bpe_piece(self.ranks, b) if hasattr(reference, "bpe_piece") else self.encode_pieces([piece])
        return self.encode_pieces([piece])

    # -- vocabulary --------------------------------------------------------------------------------
    @property
    def vocab(self) -> dict[str, int]:
        vocab = {to_chars(b): i for b, i in self.ranks.items()}
        vocab.update((s, i) for i, s in self.decode_only.items())
        return vocab

    @property
    def vocab_size(self) -> int:
        return len(self.ranks) + len(self.decode_only)

    @property
    def ids(self):
        """Every id of the model (the ranks' and the decode-only tokens')."""
        return [*self.ranks.values(), *self.decode_only]

    def token_to_id(self, token: str) -> int | None:
        b = from_chars(token)
        return self._decode_only_ids.get(token) if b is None else self.ranks.get(b)

    def id_to_token(self, i: int) -> str | None:
        s = self.decode_only.get(i) if self.decode_only else None
        if s is not None:
            return s
        b = self._by_id.get(i)
        return None if b is None else to_chars(b)

    def tokens_up_to(self, n: int) -> list[str | None]:
        """[id_to_token(i) for i in range(n)], made natively in one pass over the ranks. The
        dataset's fingerprint asks for every id at each run: 81 ms for cl100k and 175 ms for o200k
        one id_to_token call at a time."""
        tokens = _core.spelled_by_id(self.ranks if type(self.ranks) is dict else dict(self.ranks), n)
        for i, s in self.decode_only.items():
            if i < n:
                tokens[i] = s
        return tokens

    def token_bytes(self, i: int) -> bytes | None:
        if self._by_id_made is None and isinstance(i, int) and i > self._top_id:
            return None  # (loading asks this of every special token: no id -> bytes dict made for it)
        return self._by_id.get(i)

    def has_token(self, text: str, i: int) -> bool:
        """Whether id i is a token of the model (mergeable or decode-only); asked first whether it is
        `text`'s own token, which needs no id -> bytes table (GPT-NeoX's added tokens all are)."""
        return self.ranks.get(text.encode("utf-8", "surrogatepass")) == i or self.token_bytes(i) is not None

    @functools.cached_property
    def _top_id(self) -> int:
        """The largest id of a token (-1 for none)."""
        return max(max(self.ranks.values(), default=-1), max(self.decode_only, default=-1))

    def tokens_of(self, ids) -> list[str]:
        return tokens_of(self.id_to_token, ids)

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        if self.merges_given is not None:
            return list(self.merges_given)
        if not hasattr(self, "_derived"):
            from ..reference import recover_merges

            self._derived = recover_merges(self.ranks)
        return list(self._derived)

    def default_decoder(self):
        from ..decoders import ByteLevel

        return ByteLevel()

    def to_dict(self) -> dict:
        import base64

        ranks = self.ranks
        return {"vocab": [[i, base64.b64encode(b).decode("ascii")] for b, i in sorted(ranks.items(), key=lambda kv: kv[1])],
                "merges": None if self._ranks_rule else [[a, b] for a, b, _ in self._rules],
                "ignore_merges": self.ignore_merges,
                **({"decode_only": [[i, s] for i, s in sorted(self.decode_only.items())]} if self.decode_only else {})}

    def __repr__(self) -> str:
        extra = f", decode_only={len(self.decode_only)}" if self.decode_only else ""
        return f"ByteBPE(vocab_size={len(self.ranks)}, merges={'ranks' if self._ranks_rule else len(self._rules)}{extra})"
