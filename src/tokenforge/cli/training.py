"""`tokenforge train` and `tokenforge demo`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._common import positive_int, refuse_unused_field, split_pattern, vocab_size

# --------------------------------------------------------------------------------------------------
# train


def add_train_command(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="train a byte-level BPE tokenizer on text files",
        description="Trains a byte-level BPE tokenizer on the inputs `encode` reads (UTF-8 text files, JSON "
        "lines, Parquet, gzip or zstd compressed, folders, globs, - for standard input) and writes the "
        "tokenizer file (tokenforge's format, written atomically) and a human-readable vocabulary listing. "
        "Plain text files are read natively in chunks; the documents of the other inputs are each a text of "
        "their own (a compressed text file is one text, held in memory).",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="text / JSON lines / Parquet files, folders, globs, -")
    p.add_argument("--field", default="text", help="the field holding the text in JSON lines and Parquet (default: text)")
    p.add_argument("--format", choices=["auto", "text", "jsonl", "parquet"], default="auto",
                   help="the inputs' format (default: by their names and contents)")
    p.add_argument("-o", "--output", required=True, help="the tokenizer file to write")
    p.add_argument("--vocab-size", type=vocab_size, required=True, help="256 bytes + merges + special tokens")
    p.add_argument("--pattern", type=split_pattern, default="cl100k",
                   help='split pattern: "gpt2", "cl100k", "o200k", an encoding name (cl100k_base) or a regex (default: cl100k)')
    p.add_argument("--special-token", action="append", default=[], metavar="TOKEN", help="a special token (repeatable)")
    p.add_argument("--min-frequency", type=positive_int, default=1, help="stop when the best pair occurs fewer times (default: 1)")
    p.add_argument("--workers", type=positive_int, default=None, help="counting threads (default: all CPUs)")
    p.add_argument("--chunk-size", type=positive_int, default=None, help="bytes read at a time (default: 16 MiB)")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict", help="bytes that are not UTF-8: fail or replace with U+FFFD")
    p.add_argument("--name", default=None, help="the tokenizer's name (default: the output file's stem)")
    p.add_argument("--vocab-file", default=None, help="the vocabulary listing (default: OUTPUT.vocab)")
    p.add_argument("--no-vocab-file", action="store_true", help="do not write the vocabulary listing")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="count on this machine (default) or as Ray tasks (pip install 'tokenforge[ray]')")
    p.add_argument("--address", default=None, help='with --engine ray: the cluster (e.g. "auto"); default: start one here')
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_train)


def cmd_train(args) -> int:
    from ..train import DEFAULT_CHUNK_SIZE, train_bpe

    output = Path(args.output)
    if output.is_dir():
        raise ValueError(f"{output}: is a directory; give the path of the tokenizer file to write")
    if not output.parent.is_dir():
        raise FileNotFoundError(f"{output.parent}: no such folder for --output")
    start = time.perf_counter()
    tok = train_bpe(
        _training_inputs(args),
        args.vocab_size,
        pattern=args.pattern,
        special_tokens=args.special_token,
        min_frequency=args.min_frequency,
        num_workers=args.workers,
        chunk_size=args.chunk_size or DEFAULT_CHUNK_SIZE,
        errors=args.errors,
        verbose=not args.quiet,
        name=args.name or output.stem,
        engine=args.engine,
        ray_address=args.address,
    )
    seconds = time.perf_counter() - start
    written = _save_together(tok, output, None if args.no_vocab_file else
                             (Path(args.vocab_file) if args.vocab_file else output.with_name(output.name + ".vocab")))
    if not args.quiet:
        print(f"trained {tok.n_vocab} tokens in {seconds:.1f} s; wrote {', '.join(written)}", file=sys.stderr)
    return 0


def _training_inputs(args):
    """What train_bpe reads: the paths themselves when every input is a plain local text file (read
    natively, in chunks), else the texts of every input as `encode` reads them (a document of JSON
    lines or Parquet, or a whole text file, each a text of its own)."""
    from ..dataset_readers import expand_inputs, segments

    refuse_unused_field(args.field, args.inputs, args.format)
    sources = expand_inputs(list(args.inputs))
    if all(_plain_text_file(s, args.format) for s in sources):
        return [s.name for s in sources]

    def texts():
        for s in sources:
            for text, _ in segments(s, fmt=args.format, field=args.field, errors=args.errors):
                yield text
    return texts()


def _plain_text_file(source, fmt: str) -> bool:
    """Whether a source is a local text file, not compressed (by its first bytes, as the readers
    tell), that train_bpe may read natively."""
    from ..dataset_readers import _read_head, compression_of, format_of, is_url

    if source.is_stdin or is_url(source.name):
        return False
    try:
        with open(source.name, "rb") as f:
            head = _read_head(f)
    except OSError:
        return False  # (the readers name the problem)
    return compression_of(head) is None and format_of(source.name, fmt, head) == "text"


def _save_together(tok, output: Path, vocab_path: Path | None) -> list[str]:
    """Writes the tokenizer file and its listing as partial files, then renames both (the listing
    first): an interrupted run leaves the old pair or the new pair, never a tokenizer whose listing
    is missing or from another run."""
    from .. import outputs

    if not output.parent.is_dir():
        raise FileNotFoundError(f"{output.parent}: no such folder for --output")
    pairs = []
    try:
        if vocab_path is not None:
            listing = outputs.partial_path(vocab_path)
            tok.save(listing, format="listing")  # tokenforge.formats.listing: id, token, its two parts
            pairs.append((listing, vocab_path))
        main = outputs.partial_path(output)
        tok.save(main)
        pairs.append((main, output))
        outputs.commit(pairs)
    except BaseException:
        for partial, _ in pairs:
            outputs.discard(partial)
        outputs.discard(outputs.partial_path(output))
        raise
    return [str(output)] + ([str(vocab_path)] if vocab_path is not None else [])


# --------------------------------------------------------------------------------------------------
# demo

DEMO_SAMPLE = 'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Hello, {name}!"\n'


def add_demo_command(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="train a small tokenizer on Python's own standard library, save it, load it, use it",
        description="Trains a small BPE tokenizer on the .py files of the running Python's standard library "
        "(nothing to download), saves it, loads it back, encodes and decodes a sample.",
    )
    p.add_argument("--vocab-size", type=int, default=2048, help="default: 2048")
    p.add_argument("--output", default=None, help="keep the tokenizer file here (default: a temporary folder)")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    import sysconfig
    import tempfile

    from ..formats.listing import render
    from ..io import load
    from ..train import train_bpe

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(stdlib.glob("*.py"))
    if not files:
        raise ValueError(f"no .py files found in {stdlib} to train the demo on")
    size = sum(f.stat().st_size for f in files)
    print(f"training a {args.vocab_size}-token BPE vocabulary (cl100k split pattern) on {len(files)} files "
          f"of {stdlib} ({size / 1e6:.1f} MB)...")
    start = time.perf_counter()
    tok = train_bpe(files, args.vocab_size, special_tokens=["<|endoftext|>"], errors="replace", name="demo")
    seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.output) if args.output else Path(tmp) / "demo.tokenforge"
        tok.save(path)
        loaded = load(path)
        where = str(path) if args.output else "a temporary file (--output PATH keeps it)"
        print(f"trained in {seconds:.2f} s; saved to {where} ({path.stat().st_size / 1e3:.0f} kB) and loaded back")
    ids = loaded.encode(DEMO_SAMPLE)
    decoded = loaded.decode(ids)
    pieces = [render(loaded.decode_single_token_bytes(i)) for i in ids]
    print(f"sample ({len(DEMO_SAMPLE.encode())} bytes) -> {len(ids)} tokens: {ids}")
    print("tokens: " + " | ".join(pieces))
    print(f"decode(encode(sample)) == sample: {decoded == DEMO_SAMPLE}")
    longest = max((b for i, b in loaded.vocab.items() if not loaded.is_special_token(i)), key=len)
    print(f"vocabulary: {loaded.n_vocab} ids ({len(loaded.special_tokens)} special); longest token: [{render(longest)}]")
    return 0 if decoded == DEMO_SAMPLE else 1
