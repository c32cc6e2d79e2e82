"""Argument helpers shared by the subcommands: option types that fail with one line naming the
flag, the tokenizer and pattern options, the one special-token policy, text inputs and progress."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

# --------------------------------------------------------------------------------------------------
# Option types (argparse prints "argument --threads: ..." and exits with 2)


def positive_int(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def vocab_size(text: str) -> int:
    value = positive_int(text)
    if value > 1 << 31:
        raise argparse.ArgumentTypeError(f"{text} is larger than any vocabulary tokenforge can hold (2^31)")
    return value


def port(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535 (0: any free port), got {text}")
    return value


_SIZE_SUFFIXES = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def count_with_suffix(text: str) -> int:
    """A number of tokens, e.g. 100000000, 100M, 1.5G."""
    t = text.strip().upper()
    suffix = t[-1:] if t[-1:] in _SIZE_SUFFIXES else ""
    try:
        value = float(t[: len(t) - len(suffix)]) * _SIZE_SUFFIXES[suffix]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count such as 100000000 or 100M, got {text!r}") from None
    if not 1 <= value < 1 << 62:
        raise argparse.ArgumentTypeError(f"expected a positive count, got {text!r}")
    return int(value)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.01, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return value


def split_pattern(text: str) -> str:
    """A split pattern: a pattern name, an encoding name (its pattern), or a regex that compiles.
    A bare word that names nothing is refused rather than used as a regex that matches only itself."""
    from .. import patterns
    from ..registry import list_encoding_names

    if text in patterns.NAMED:
        return text
    head = text.split("_")[0]  # cl100k_base -> cl100k, o200k_harmony -> o200k, p50k_edit -> p50k
    if text in list_encoding_names() and head in patterns.NAMED:
        return head
    if text.replace("_", "").isalnum():
        names = sorted(set(patterns.NAMED) | set(list_encoding_names()))
        raise argparse.ArgumentTypeError(f"{text!r} is not a pattern name ({', '.join(names)}); a regex such as "
                                         r"'\w+|\s+' is also accepted")
    import regex

    try:
        regex.compile(text)
    except (regex.error, RecursionError, OverflowError) as e:
        raise argparse.ArgumentTypeError(f"not a valid regex: {e}") from None
    return text


# --------------------------------------------------------------------------------------------------
# Tokenizers


def add_tokenizer_option(p, *, many: bool = False) -> None:
    help_text = "a pretrained encoding name (e.g. cl100k_base), a model name (e.g. gpt-4o) or a tokenizer file"
    if many:
        p.add_argument("-t", "--tokenizer", action="append", required=True, metavar="T",
                       help=help_text + " (repeatable)")
    else:
        p.add_argument("-t", "--tokenizer", required=True, metavar="T", help=help_text)


def tokenizer(spec: str):
    from ..registry import get_tokenizer, list_encoding_names

    try:
        tok = get_tokenizer(spec)
        _note_assumed_pattern(spec, tok)
        return tok
    except ValueError:
        if Path(spec).exists():
            raise
        try:
            from ..encoding import encoding_name_for_model

            name = encoding_name_for_model(spec)
        except (KeyError, ValueError, ImportError):
            raise ValueError(f"-t {spec}: neither a pretrained encoding ({', '.join(list_encoding_names())}), "
                             "a model name, nor a file") from None
        return get_tokenizer(name)


_PATTERNLESS_FILES = ("encoder.json", "vocab.bpe", "vocab.json", "merges.txt")


def _note_assumed_pattern(spec: str, tok) -> None:
    """GPT-2's files and vocab.json + merges.txt carry no split pattern; the loader assumes GPT-2's.
    Say so, as a wrong pattern gives other ids without any error."""
    path = Path(spec)
    if not (path.is_dir() or path.name in _PATTERNLESS_FILES):
        return
    from .. import patterns

    if getattr(tok, "pattern", None) in (patterns.GPT2, patterns.GPT2_ORIGINAL):
        print(f"tokenforge: note: {spec} carries no split pattern; GPT-2's is assumed (convert it with "
              "`tokenforge convert --pattern NAME` to record another)", file=sys.stderr)


# --------------------------------------------------------------------------------------------------
# Special tokens: one policy for count, show and encode

SPECIAL_HELP = ("special-token text in the input (e.g. <|endoftext|>): by default it is ordinary text; "
                "--allow-special encodes it as the special token; --disallow-special makes it an error")


def add_special_options(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--allow-special", dest="special", action="store_const", const="allow", help=SPECIAL_HELP)
    g.add_argument("--disallow-special", dest="special", action="store_const", const="disallow",
                   help="fail on special-token text in the input")
    p.set_defaults(special="ordinary")


def encode_with_policy(tok, text: str, policy: str) -> list[int]:
    if policy == "allow":
        return tok.encode(text, allowed_special="all")
    if policy == "disallow":
        try:
            return tok.encode(text, allowed_special=set(), disallowed_special="all")
        except ValueError as e:
            # (tiktoken's message is five lines of Python advice: the command line says it in one)
            found = re.search(r"disallowed special token ('.*?')", str(e))
            what = f"the text holds the special token {found.group(1)}" if found else str(e)
            raise ValueError(f"{what} (--allow-special encodes it as the special token; without a flag it is "
                             "ordinary text)") from None
    return tok.encode_ordinary(text)


# --------------------------------------------------------------------------------------------------
# Text inputs


def read_text(args) -> list[tuple[str, str]]:
    """(name, text) of each input: --text, else the files (or - for stdin), else stdin."""
    if getattr(args, "text", None) is not None:
        if getattr(args, "files", None):
            raise ValueError(f"--text and files ({args.files[0]}...): give the text or the files, not both")
        return [("<text>", args.text)]
    files = getattr(args, "files", None) or ["-"]
    out = []
    for f in files:
        if f == "-":
            out.append(("<stdin>", sys.stdin.read()))
            continue
        path = Path(f)
        if path.is_dir():
            raise ValueError(f"{path}: is a directory")
        data = path.read_bytes()
        try:
            text = data.decode("utf-8", errors=getattr(args, "errors", "strict"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 at byte offset {e.start} (pass --errors replace)") from None
        out.append((f, text))
    return out


def add_text_inputs(p) -> None:
    p.add_argument("files", nargs="*", metavar="FILE", help="UTF-8 text files (default or -: standard input)")
    p.add_argument("--text", default=None, help="the text itself instead of files")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict",
                   help="bytes that are not UTF-8: fail (default) or replace with U+FFFD")


# --------------------------------------------------------------------------------------------------
# Progress


BIG_INPUT = 50 << 20  # bytes: smaller inputs get no progress display (compare, bench)


class Progress:
    """Progress of a long job on stderr: a tqdm bar on a terminal, else a log line every
    `interval` seconds (default: $TOKENFORGE_PROGRESS_INTERVAL or 10), so batch jobs see it too;
    quiet shows nothing. update() takes totals."""

    def __init__(self, total_bytes: int | None, *, desc: str, quiet: bool = False, interval: float | None = None):
        import os

        if interval is None:
            try:
                interval = float(os.environ.get("TOKENFORGE_PROGRESS_INTERVAL", "10"))
            except ValueError:
                interval = 10.0
        self.quiet = quiet
        self.total = total_bytes
        self.desc = desc
        self.bar = None
        self.interval = interval
        self.started = time.perf_counter()
        self.last_log = self.started
        self.bytes = self.documents = self.tokens = 0
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc=desc, file=sys.stderr)

    def update(self, nbytes: int, documents: int = 0, tokens: int = 0) -> None:
        delta, self.bytes, self.documents, self.tokens = nbytes - self.bytes, nbytes, documents, tokens
        if self.quiet:  # (the totals are still kept: line() sums a quiet run up too)
            return
        if self.bar is not None:
            self.bar.update(delta)
            self.bar.set_postfix_str(f"{documents:,} docs, {tokens:,} tokens", refresh=False)
            return
        now = time.perf_counter()
        if now - self.last_log >= self.interval:
            self.last_log = now
            print(f"{self.desc}: {self.line()}", file=sys.stderr, flush=True)

    def line(self) -> str:
        seconds = max(time.perf_counter() - self.started, 1e-9)
        done = f"{self.bytes / 1e6:,.1f} MB"
        if self.total:
            done += f" of {self.total / 1e6:,.1f} MB ({100 * self.bytes / self.total:.0f}%)"
        return (f"{done}, {self.documents:,} documents, {self.tokens:,} tokens, "
                f"{self.bytes / 1e6 / seconds:,.1f} MB/s, {seconds:,.1f} s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def refuse_unused_field(field: str, inputs, fmt: str) -> None:
    """--field names a JSON lines field or a Parquet column: given when every input is read as text,
    it would be ignored without a word (a forgotten --format, or the wrong files), so it is refused."""
    if field == "text" or fmt in ("jsonl", "parquet"):
        return
    from ..dataset_readers import _read_head, compression_of, expand_inputs, format_of, is_url

    if fmt == "auto":
        for source in expand_inputs(list(inputs)):
            head = b""
            if not source.is_stdin and not is_url(source.name):
                try:
                    with open(source.name, "rb") as f:
                        head = _read_head(f)
                except OSError:
                    return  # (the readers name the problem)
            if format_of(source.name, fmt, b"" if compression_of(head) else head) != "text":
                return
    raise ValueError(f"--field {field!r}: every input is read as text, which has no fields (--field names a JSON "
                     "lines field or a Parquet column: give --format jsonl / parquet, or leave --field out)")
