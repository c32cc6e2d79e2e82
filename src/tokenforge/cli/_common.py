"""Argument helpers shared by the subcommands."""

from __future__ import annotations

import sys
from pathlib import Path


def add_tokenizer_option(p, *, many: bool = False) -> None:
    help_text = "a pretrained encoding name (e.g. cl100k_base) or a saved tokenizer file"
    if many:
        p.add_argument("-t", "--tokenizer", action="append", required=True, metavar="T",
                       help=help_text + " (repeatable)")
    else:
        p.add_argument("-t", "--tokenizer", required=True, metavar="T", help=help_text)


def tokenizer(spec: str):
    from ..registry import get_tokenizer

    return get_tokenizer(spec)


def read_text(args) -> list[tuple[str, str]]:
    """(name, text) of each input: --text, else the files (or - for stdin), else stdin."""
    if getattr(args, "text", None) is not None:
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
        try:
            with open(path, encoding="utf-8", errors=getattr(args, "errors", "strict"), newline="") as fh:
                out.append((f, fh.read()))  # newline="": the text exactly as in the file
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 at byte offset {e.start} (pass --errors replace)") from None
    return out


def add_text_inputs(p) -> None:
    p.add_argument("files", nargs="*", metavar="FILE", help="UTF-8 text files (default or -: standard input)")
    p.add_argument("--text", default=None, help="the text itself instead of files")
    p.add_argument("--errors", choices=["strict", "replace"], default="strict",
                   help="bytes that are not UTF-8: fail (default) or replace with U+FFFD")
