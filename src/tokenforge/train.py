"""Training byte-level BPE vocabularies, from one text file up to corpora of many gigabytes.

    >>> import tokenforge
    >>> tok = tokenforge.train_bpe(["corpus.txt"], 4096, special_tokens=["<|endoftext|>"])  # doctest: +SKIP
    >>> tok.save("my.tokenforge")                                                            # doctest: +SKIP

Two stages, both native (cpp/counter.h, cpp/trainer.h):

1. *Counting*: the text is split on the special tokens first, then into pieces by the split
   pattern, and every unique piece is counted (the *pre-token count*, 64-bit counts). Files are read
   in bounded chunks (`chunk_size` bytes) cut only where no piece can straddle the cut (after a
   special token; after a newline between a non-space character and a letter or digit; before a
   space between two ASCII letters: see cpp/counter.h), and each chunk is counted by `num_workers`
   native threads with the GIL released. Memory grows with the number of unique pieces, not with
   the size of the corpus.
2. *Merging*: each step merges the most frequent adjacent pair of tokens, counted over all pieces;
   ties go to the lexicographically greater pair of byte strings, comparing (left, right) (the
   Stanford CS336 convention). Special tokens never take part in merges.

The result is a `Tokenizer` with tiktoken's rule (ids are ranks): ids 0..255 are the byte values,
256 + k is the k-th token made by merging, and the special tokens follow in the order given.
`vocab_size` counts all of them. The result does not depend on `num_workers` or `chunk_size`.

What this does *not* do: normalization (text is taken as it is); merges across pieces; Unicode
"characters" as the initial alphabet (the alphabet is always the 256 bytes). Any split pattern in
the native engine's subset (cpp/split_regex.h) is counted natively; one outside it in Python with
the `regex` module: correct but much slower, and single-threaded. Chunks are cut by the same newline
rule, which is proven exact for the named patterns only.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Iterable, Mapping, Sequence, Union

from . import _core, patterns, regex_budget
from .streaming import usable_cpus
from .tokenizer import Tokenizer

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_CHUNK_SIZE = 16 << 20
_MERGES_PER_STEP = 256

__all__ = ["train_bpe", "train_bpe_from_counts"]


# Training engines besides "local", by name: the modules that implement them register here
# (tokenforge.distributed adds "ray" when the package is imported), so this module never imports
# them; they import it.
ENGINES: dict = {}


def train_bpe(
    source: PathLike | Sequence[PathLike] | Iterable[str],
    vocab_size: int,
    *,
    pattern: str = "cl100k",
    special_tokens: Iterable[str] = (),
    min_frequency: int = 1,
    num_workers: int | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    errors: str = "strict",
    verbose: bool = True,
    name: str = "tokenizer",
    engine: str = "local",
    ray_address: str | None = None,
) -> Tokenizer:
    """Trains a byte-level BPE tokenizer on a corpus.

    Args:
        source: a path, a list or tuple of paths (each file is read as UTF-8), or any other iterable
            of str (each item is a separate text: pieces never run from one item into the next; so an
            open text file, which yields lines, is not counted quite like its path, where a blank
            line after a newline is one piece "\\n\\n" rather than two).
        vocab_size: the size of the whole vocabulary: 256 byte tokens + merges + special tokens.
        pattern: the split pattern, a name ("gpt2", "cl100k", "o200k") or a regex.
        special_tokens: strings that split the text and never take part in merges; they get the
            last ids, in the order given.
        min_frequency: merging stops early when the most frequent pair occurs fewer times.
        num_workers: native threads for counting (default: the number of CPUs available).
        chunk_size: bytes read from a file at a time (memory holds one chunk, plus the rest of a
            line that runs past it).
        errors: what to do with bytes that are not UTF-8 in a file: "strict" raises ValueError
            naming the file and byte offset; "replace" counts each bad sequence as U+FFFD.
        verbose: progress bars on stderr (only when stderr is a terminal).
        name: the tokenizer's name.
        engine: "local" (native threads in this process) or "ray": counting runs as Ray tasks over
            byte ranges of the files, the counts are reduced as a tree on the cluster and the merge
            loop runs here (tokenforge.distributed; same result; files only, on storage every node
            reads; num_workers is then the threads of each task, default 1).
        ray_address: with engine="ray", the cluster to connect to (ray.init's address, e.g. "auto" or
            "ray://head:10001"); None starts a local Ray or uses the one already initialized.

    Raises ValueError for a vocab_size too small, an empty corpus, or invalid UTF-8;
    FileNotFoundError / IsADirectoryError for a bad path; TypeError for arguments of the wrong type;
    ImportError for engine="ray" without Ray installed.
    """
    if engine != "local":
        if engine not in ENGINES:
            raise ValueError(f'engine must be {" or ".join(map(repr, ["local", *ENGINES]))}, got {engine!r}')
        return ENGINES[engine](
            source, vocab_size, pattern=pattern, special_tokens=special_tokens, min_frequency=min_frequency,
            num_workers=num_workers, chunk_size=chunk_size, errors=errors, verbose=verbose, name=name,
            address=ray_address,
        )
    if ray_address is not None:
        raise ValueError('ray_address is only used with engine="ray"')
    plan = _Plan(vocab_size, pattern, special_tokens, min_frequency, verbose, name)
    threads = _workers(num_workers)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if errors not in ("strict", "replace"):
        raise ValueError(f'errors must be "strict" or "replace", got {errors!r}')
    paths, texts = _sources(source)
    counter = _Counting(plan, threads)
    if paths is not None:
        for path in paths:
            _check_path(path)
        total = sum(os.path.getsize(p) for p in paths)
        with _progress(plan.verbose, total=total, unit="B", unit_scale=True, desc="counting") as bar:
            for path in paths:
                counter.count_file(path, chunk_size, errors, bar)
    else:
        with _progress(plan.verbose, unit=" texts", desc="counting") as bar:
            counter.count_texts(texts, chunk_size, bar)
    return plan.train(counter.finish())


def train_bpe_from_counts(
    counts: Mapping[str | bytes, int],
    vocab_size: int,
    *,
    pattern: str = "cl100k",
    special_tokens: Iterable[str] = (),
    min_frequency: int = 1,
    verbose: bool = True,
    name: str = "tokenizer",
) -> Tokenizer:
    """Trains on a pre-token count: each key is one piece (str or bytes), each value its count.

    The keys are taken as pieces as they are (not split again); the pattern is recorded in the
    tokenizer for encoding. A key equal to a special token is ignored. The result is the same as
    training on text whose pieces have these counts.

    >>> tok = train_bpe_from_counts({"hug": 10, "pug": 5, "hugs": 5}, 258, verbose=False)
    >>> [tok.decode_single_token_bytes(i) for i in (256, 257)]
    [b'ug', b'hug']
    """
    plan = _Plan(vocab_size, pattern, special_tokens, min_frequency, verbose, name)
    if not isinstance(counts, Mapping):
        raise TypeError(f"counts must be a mapping of pieces (str or bytes) to int, got {type(counts).__name__}")
    table: Counter = Counter()
    special_bytes = {s.encode("utf-8") for s in plan.specials}
    for key, value in counts.items():
        if isinstance(key, str):
            try:
                b = key.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"piece {key!r} is not valid Unicode (lone surrogate)") from None
        elif isinstance(key, (bytes, bytearray)):
            b = bytes(key)
        else:
            raise TypeError(f"pieces must be str or bytes, got {type(key).__name__}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"the count of {key!r} must be a non-negative int, got {value!r}")
        if value >= 1 << 64:
            raise ValueError(f"the count of {key!r} is too large")
        if b and b not in special_bytes:
            table[b] += value
    if any(c >= 1 << 64 for c in table.values()):
        raise ValueError("a piece's total count does not fit in 64 bits")
    counter = _core.PieceCounter(0, [])
    counter.add([(b, c) for b, c in table.items() if c])
    return plan.train(counter)


# --------------------------------------------------------------------------------------------------
# Arguments


# Ids are 32-bit in the native core, and 2**32 - 1 marks "no token".
MAX_VOCAB_SIZE = 2**32 - 1


class _Plan:
    """The checked arguments shared by both entry points, and the merge stage."""

    def __init__(self, vocab_size, pattern, special_tokens, min_frequency, verbose, name):
        self.pattern = pattern
        self.pat_str = patterns.resolve(pattern)
        try:  # counted natively when the pattern is in the split engine's subset
            _core.Pattern(self.pat_str)
            self.native = 0
        except _core.UnsupportedPattern:
            self.native = -1
        if isinstance(special_tokens, (str, bytes)):
            raise TypeError("special_tokens must be a list of str, not a single string")
        try:
            specials = list(special_tokens)
        except TypeError:
            raise TypeError(f"special_tokens must be a list of str, got {type(special_tokens).__name__}") from None
        for s in specials:
            if not isinstance(s, str) or not s:
                raise TypeError(f"special tokens must be non-empty str, got {s!r}")
        if len(set(specials)) != len(specials):
            raise ValueError("special_tokens has duplicates")
        self.specials = specials
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
        if vocab_size < 256 + len(specials):
            raise ValueError(
                f"vocab_size must be at least 256 (the byte tokens) + {len(specials)} (the special tokens) "
                f"= {256 + len(specials)}, got {vocab_size}"
            )
        if vocab_size > MAX_VOCAB_SIZE:
            raise ValueError(f"vocab_size must be at most {MAX_VOCAB_SIZE} (ids are 32-bit), got {vocab_size}")
        self.num_merges = vocab_size - 256 - len(specials)
        if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
            raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")
        self.min_frequency = min_frequency
        self.verbose = bool(verbose)
        self.name = name

    def train(self, counter) -> Tokenizer:
        """The merge stage: consumes a native PieceCounter and builds the Tokenizer."""
        if len(counter) == 0:
            raise ValueError("the corpus is empty: there is no text to train on (besides special tokens)")
        trainer = _core.BpeTrainer(self.num_merges, self.min_frequency)
        trainer.add_counts(counter)  # empties the counter: its memory is freed here
        trainer.start()
        with _progress(self.verbose, total=self.num_merges, unit=" merges", desc="merging") as bar:
            while not trainer.done:
                bar.update(trainer.step(_MERGES_PER_STEP))
        tokens = trainer.tokens()
        ranks = {b: i for i, b in enumerate(tokens)}
        special = {s: len(tokens) + i for i, s in enumerate(self.specials)}
        tok = Tokenizer.from_ranks(ranks, pattern=self.pattern, special_tokens=special, name=self.name)
        # The merge that first made each token, in rank order: what Tokenizer.merges would otherwise
        # recover from the ranks (reference.recover_merges), known exactly here.
        tok._merges_derived = [(tokens[l], tokens[r]) for l, r, _, is_new in trainer.merges() if is_new]
        return tok


def _workers(num_workers) -> int:
    if num_workers is None:
        return usable_cpus()
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
    return num_workers


def _sources(source):
    """(paths, None) or (None, iterable of str)."""
    if isinstance(source, (str, os.PathLike)):
        return [source], None
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise TypeError("source must be a path, a list of paths or an iterable of str, not bytes")
    if isinstance(source, (list, tuple)):
        if not source:
            raise ValueError("the corpus is empty: source is an empty list of paths")
        for p in source:
            if not isinstance(p, (str, os.PathLike)):
                raise TypeError(
                    f"a list source must hold paths (str or os.PathLike), got {type(p).__name__}; "
                    "to train on texts, pass an iterator, e.g. iter(texts)"
                )
        return list(source), None
    if isinstance(source, Iterable):
        return None, source
    raise TypeError(f"source must be a path, a list of paths or an iterable of str, got {type(source).__name__}")


def _check_path(path) -> None:
    if os.path.isdir(path):
        raise IsADirectoryError(f"{os.fspath(path)}: is a directory, not a text file")
    if not os.path.exists(path):
        hint = " (to train on a list of texts rather than files, pass iter(texts))" if isinstance(path, str) else ""
        raise FileNotFoundError(f"{os.fspath(path)}: no such file{hint}")


def _progress(verbose: bool, **kwargs):
    """A tqdm bar on stderr, or a do-nothing stand-in when quiet (tqdm is then not even imported)."""
    if not verbose or not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return _NoProgress()
    from tqdm import tqdm

    return tqdm(file=sys.stderr, leave=False, **kwargs)


class _NoProgress:
    def update(self, n: int = 1) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


# --------------------------------------------------------------------------------------------------
# Counting


class _Counting:
    """Feeds text to a native PieceCounter (named patterns) or counts it with `regex` (others)."""

    def __init__(self, plan: _Plan, threads: int):
        self.plan = plan
        self.threads = threads
        self.native = plan.native >= 0
        self.counter = _core.PieceCounter(plan.pat_str if self.native else None, [s.encode("utf-8") for s in plan.specials])
        if not self.native:
            import regex

            self.split = regex.compile(plan.pat_str)
            specials = sorted(plan.specials, key=len, reverse=True)
            self.special_re = regex.compile("|".join(map(regex.escape, specials))) if specials else None
            self.table: Counter = Counter()

    def count_file(self, path, chunk_size: int, errors: str, bar, range_start: int = 0, range_end: int | None = None) -> None:
        """Reads the file chunk_size bytes at a time; counts up to the last safe cut of each chunk and
        carries the rest over to be counted with the next chunk's text up to its first cut.

        With range_start / range_end only those bytes of the file are counted (distributed.py gives each
        task a range whose ends are safe cuts or the ends of the file)."""
        name = os.fspath(path)
        carry: list[bytes] = []  # text after the last cut, not counted yet
        carried = 0
        offset = range_start  # the file offset of the next block
        with open(path, "rb") as f:
            f.seek(range_start)
            while True:
                block = f.read(chunk_size if range_end is None else min(chunk_size, range_end - offset))
                if not block:
                    if carried:
                        self._count_range(b"".join(carry), 0, carried, offset - carried, name, errors)
                    return
                bar.update(len(block))
                start = 0
                if carried:
                    first = self.counter.first_cut(block, 0, len(block))
                    if first == 0:  # no safe cut yet (a very long line): keep reading
                        carry.append(block)
                        carried += len(block)
                        offset += len(block)
                        continue
                    head = b"".join(carry) + block[:first]
                    self._count_range(head, 0, len(head), offset - carried, name, errors)
                    carry, carried, start = [], 0, first
                last = self.counter.last_cut(block, start, len(block))
                if last:
                    self._count_range(block, start, last, offset, name, errors)
                    start = last
                if start < len(block):
                    carry, carried = [block[start:]], len(block) - start
                offset += len(block)

    def _count_range(self, data: bytes, start: int, end: int, base: int, name: str, errors: str) -> None:
        """Counts data[start:end]; base is the file offset of data[0] (for error messages)."""
        valid = _core.utf8_valid_prefix(data, start, end)
        if valid < end:
            if errors == "strict":
                raise ValueError(
                    f"{name}: invalid UTF-8 at byte offset {base + valid} "
                    f"(bytes {data[valid:valid + 4]!r}); pass errors='replace' to count bad bytes as U+FFFD"
                )
            data = data[start:end].decode("utf-8", "replace").encode("utf-8")
            start, end = 0, len(data)
        if self.native:
            self.counter.count_bytes(data, start, end, self.threads)
        else:
            self._count_str(data[start:end].decode("utf-8"))

    def count_texts(self, texts: Iterable[str], chunk_size: int, bar) -> None:
        batch: list[str] = []
        size = 0
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"the texts must be str, got {type(text).__name__}")
            batch.append(text)
            size += len(text)
            if size >= chunk_size:
                self._count_batch(batch)
                bar.update(len(batch))
                batch, size = [], 0
        if batch:
            self._count_batch(batch)
            bar.update(len(batch))

    def _count_batch(self, batch: list[str]) -> None:
        if not self.native:
            for t in batch:
                self._count_str(_clean(t))
            return
        try:
            self.counter.count_texts(batch, self.threads)
        except UnicodeEncodeError:  # lone surrogates become U+FFFD, as when encoding
            self.counter.count_texts([_clean(t) for t in batch], self.threads)

    def _count_str(self, text: str) -> None:
        stretches = self.special_re.split(text) if self.special_re is not None else [text]
        for stretch in stretches:
            self.table.update(m.group() for m in regex_budget.finditer(self.split, stretch))  # whole matches, whatever the groups

    def finish(self):
        if not self.native:
            self.counter.add([(p.encode("utf-8"), c) for p, c in self.table.items()])
            self.table.clear()
        return self.counter


def _clean(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
