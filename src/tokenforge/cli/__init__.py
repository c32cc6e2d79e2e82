"""The `tokenforge` command line.

    tokenforge demo                                   # train, save, load and use a small tokenizer
    tokenforge train corpus.txt -o my.tokenforge --vocab-size 32000 --special-token '<|endoftext|>'
    tokenforge encode --tokenizer cl100k_base -o train.bin docs/*.txt
    tokenforge count --tokenizer cl100k_base --tokenizer o200k_base README.md
    tokenforge show --tokenizer o200k_base "Hello, world"

Each subcommand is an `add_<name>_command(subparsers)` function that registers its parser and sets
`func` to a `cmd_<name>(args) -> int` function; the modules of this package group them, and COMMANDS
lists them. User errors (bad input, missing files) print one line on stderr and exit with status 1,
never a traceback; a bad command line exits with 2.
"""

from __future__ import annotations

import argparse
import re
import sys

from .encoding import add_count_command, add_decode_command, add_encode_command
from .inspecting import add_compare_command, add_show_command, add_stats_command
from .other import add_bench_command, add_convert_command, add_serve_command
from .training import DEMO_SAMPLE, add_demo_command, add_train_command

COMMANDS = [
    add_demo_command,
    add_train_command,
    add_encode_command,
    add_decode_command,
    add_count_command,
    add_show_command,
    add_compare_command,
    add_stats_command,
    add_convert_command,
    add_serve_command,
    add_bench_command,
]

__all__ = ["main", "build_parser", "DEMO_SAMPLE"]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(prog="tokenforge", description="Fast, exact text tokenizers.")
    parser.add_argument("--version", action="version", version=f"tokenforge {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"tokenforge {args.command}: interrupted (no partial file is left behind)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `tokenforge encode ... | head`
        return 0
    except MemoryError:
        print(f"tokenforge {args.command}: error: out of memory (a smaller --vocab-size, input or --threads?)",
              file=sys.stderr)
        return 1
    except RecursionError:
        print(f"tokenforge {args.command}: error: input nested too deeply", file=sys.stderr)
        return 1
    except (ValueError, TypeError, KeyError, OSError, ImportError, RuntimeError) as e:
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"tokenforge {args.command}: error: {as_flags(str(message))}", file=sys.stderr)
        return 1


# Python keyword arguments named in library errors, and the flags a user of the command line typed.
_FLAGS = {
    "errors='replace'": "--errors replace",
    "overwrite=True": "--overwrite",
    "add_eot=False": "--no-eot",
    "eot=None": "--no-eot",
    "resume=True": "--resume",
    "vocab_size": "--vocab-size",
    "num_workers": "--workers",
    "num_threads": "--threads",
    "chunk_size": "--chunk-size",
    "min_frequency": "--min-frequency",
    "shard_size": "--shard-size",
    "val_fraction": "--val-fraction",
    "special_tokens": "--special-token",
}
# A keyword as a word of its own (not "enc.special_tokens_set"), and not a Python value after it
# ("special_tokens={...}" is Python's syntax, which no flag takes).
_FLAG_RE = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(k) for k in sorted(_FLAGS, key=len, reverse=True))
                      + r")(?![\w]|=\{)")
_RANKS_ONLY = "a tiktoken rank file holds only the ranks"


def as_flags(message: str) -> str:
    """A library error message with its keyword arguments replaced by the command line's flags
    (a flag already given beside the keyword, as in "--overwrite (overwrite=True)", stays once)."""
    message = re.sub(r" \((?:eot|errors|overwrite|add_eot|resume)=[^)]*\)", "", message)
    message = _FLAG_RE.sub(lambda m: _FLAGS[m.group(0)], message)
    message = re.sub(r"\((--[\w-]+) / \1\)", r"(\1)", message)  # "(shard_size / --shard-size)"
    if _RANKS_ONLY in message:  # (the options -t cannot take: convert the file once, then use it)
        message += ("; on the command line: tokenforge convert FILE OUT.json --to tokenforge --pattern NAME "
                    "[--special-token TOKEN=ID], then -t OUT.json")
    return message
