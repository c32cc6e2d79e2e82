"""`tokenforge show`, `compare` and `stats`: looking at what a tokenizer does to text."""

from __future__ import annotations

import json
import sys

from ._common import (SPECIAL_HELP, add_special_options, add_text_inputs, add_tokenizer_option, encode_with_policy,
                      read_text, tokenizer)

# Background colours for alternating tokens (ANSI 256-colour palette, readable with dark text).
_COLOURS = [153, 194, 223, 218, 189, 230, 158, 224]


def _piece_text(b: bytes) -> str:
    """A token's bytes for display: text where they are UTF-8, escapes elsewhere, visible controls."""
    text = b.decode("utf-8", errors="backslashreplace")
    return text.replace("\n", "↵\n").replace("\t", "→").replace("\r", "␍")


def add_show_command(subparsers) -> None:
    p = subparsers.add_parser(
        "show",
        help="show text with token boundaries coloured and the ids beside it",
        description="Prints the text with each token on a coloured background (on a terminal), then the ids. "
        + SPECIAL_HELP + ".",
    )
    add_tokenizer_option(p)
    add_text_inputs(p)
    add_special_options(p)
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    p.set_defaults(func=cmd_show)


def cmd_show(args) -> int:
    tok = tokenizer(args.tokenizer)
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    for name, text in read_text(args):
        ids = encode_with_policy(tok, text, args.special)
        pieces = [_piece_text(b) for b in tok.decode_tokens_bytes(ids)]
        if colour:
            out = "".join(f"\x1b[30;48;5;{_COLOURS[k % len(_COLOURS)]}m{p}\x1b[0m" for k, p in enumerate(pieces))
        else:
            out = "|".join(pieces)
        print(out)
        print(f"ids ({len(ids)} tokens, {len(text.encode('utf-8'))} bytes): {ids}")
    return 0


def _measure(tok, text: str) -> dict:
    ids = tok.encode_ordinary(text)
    nbytes = len(text.encode("utf-8"))
    distinct = len(set(ids))
    return {
        "tokens": len(ids),
        "bytes_per_token": nbytes / len(ids) if ids else 0.0,
        "chars_per_token": len(text) / len(ids) if ids else 0.0,
        "distinct_tokens": distinct,
        "vocab_used": distinct / tok.n_vocab,
    }


def add_compare_command(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="compare several tokenizers on the same text",
        description="Tokens, bytes per token (the compression ratio), characters per token, distinct tokens "
        "and the share of each vocabulary used, for each tokenizer on the same text.",
    )
    add_tokenizer_option(p, many=True)
    add_text_inputs(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress (shown for inputs over 50 MB)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from . import _common

    text = "".join(t for _, t in read_text(args))
    nbytes = len(text.encode("utf-8"))
    # Each tokenizer encodes the whole text at once (streaming in pieces would need safe cuts, exact
    # only for the named patterns): the progress advances one tokenizer at a time.
    bar = _common.Progress(nbytes * len(args.tokenizer), desc="compare", quiet=args.quiet or nbytes < _common.BIG_INPUT)
    results = {}
    try:
        for k, spec in enumerate(args.tokenizer):
            results[spec] = _measure(tokenizer(spec), text)
            bar.update(nbytes * (k + 1))
    finally:
        bar.close()
    if args.json:
        print(json.dumps({"bytes": len(text.encode("utf-8")), "tokenizers": results}, indent=1))
        return 0
    width = max(len(s) for s in results)
    print(f"{len(text.encode('utf-8')):,} bytes, {len(text):,} characters")
    print(f"{'tokenizer':<{width}}  {'tokens':>10}  {'bytes/token':>11}  {'chars/token':>11}  {'distinct':>9}  {'vocab used':>10}")
    for spec, r in results.items():
        print(f"{spec:<{width}}  {r['tokens']:>10,}  {r['bytes_per_token']:>11.2f}  {r['chars_per_token']:>11.2f}  "
              f"{r['distinct_tokens']:>9,}  {r['vocab_used']:>10.1%}")
    return 0


def add_stats_command(subparsers) -> None:
    p = subparsers.add_parser(
        "stats",
        help="write a statistics report with plots for a tokenizer on a corpus",
        description="Compression ratio, bytes per token, token-length histogram, most frequent tokens and "
        "the share of the vocabulary ever used, as a report with PNG plots (needs matplotlib: "
        "pip install 'tokenforge[viz]').",
    )
    add_tokenizer_option(p, many=True)
    p.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files")
    p.add_argument("-o", "--output", required=True, help="the folder to write the report and plots into")
    p.set_defaults(func=cmd_stats)


def cmd_stats(args) -> int:
    try:
        from .. import stats
    except ImportError as e:
        raise ValueError(f"tokenforge stats needs matplotlib ({e}); pip install 'tokenforge[viz]'") from None
    from pathlib import Path

    for f in args.files:
        if not Path(f).is_file():
            raise ValueError(f"{f}: not a file")
    from ._common import Progress

    total = sum(Path(f).stat().st_size for f in args.files)
    runs = []
    for spec in args.tokenizer:  # every tokenizer on the same files: the report compares them
        bar = Progress(total, desc=f"stats ({spec})", quiet=total < 50 << 20)
        try:
            result = stats.corpus_stats(tokenizer(spec), [Path(f) for f in args.files],  # Paths are read as files
                                        progress=lambda n: bar.update(n))
        finally:
            bar.close()
        result["tokenizer"] = spec
        runs.append(result)
    written = stats.write_report(runs if len(runs) > 1 else runs[0], args.output)
    summary = "; ".join(f"{r['tokenizer']}: " + (f"{r['bytes_per_token']:.2f} bytes/token" if r["tokens"] else "no tokens")
                        for r in runs)
    print(f"{summary}; wrote " + ", ".join(str(p) for p in written.values()), file=sys.stderr)
    return 0
