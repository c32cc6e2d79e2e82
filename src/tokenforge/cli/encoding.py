"""`tokenforge encode`, `decode` and `count`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ._common import add_text_inputs, add_tokenizer_option, read_text, tokenizer


def add_encode_command(subparsers) -> None:
    p = subparsers.add_parser(
        "encode",
        help="encode text to ids, or a corpus to a flat training array",
        description="Without --output: prints the ids of each input, one line per input. With --output "
        "OUT.bin or OUT.npy: encodes the files into one flat array of ids for model training (uint16 when "
        "the vocabulary fits, else uint32), an end-of-text token after each document, streaming in "
        "constant memory on every core, written atomically, with a JSON sidecar OUT.json.",
    )
    add_tokenizer_option(p)
    add_text_inputs(p)
    p.add_argument("-o", "--output", default=None, help="write a .bin or .npy training array here")
    p.add_argument("--separator", default=None,
                   help='split documents inside files on this string (e.g. "<|endoftext|>"); default: a file is a document')
    p.add_argument("--no-eot", action="store_true", help="no end-of-text token between documents")
    p.add_argument("--threads", type=int, default=None, help="native threads (default: all CPUs)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--allowed-special", default="none", choices=["none", "all"],
                   help="without --output: encode special tokens in the text as such (all) or refuse them (none)")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="encode here (default) or as Ray tasks: then --output is a folder of shards plus index.json")
    p.add_argument("--address", default=None, help='with --engine ray: the cluster (e.g. "auto"); default: start one here')
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_encode)


def cmd_encode(args) -> int:
    tok = tokenizer(args.tokenizer)
    if args.output is None:
        allowed = "all" if args.allowed_special == "all" else set()
        for _, text in read_text(args):
            print(" ".join(map(str, tok.encode(text, allowed_special=allowed))))
        return 0
    from ..dataset import encode_files

    out = Path(args.output)
    if args.engine == "ray":
        from ..distributed import encode_files_ray

        if not args.files or "-" in args.files:
            raise ValueError("--engine ray needs input files")
        index = encode_files_ray(tok, args.files, out, separator=args.separator, add_eot=not args.no_eot,
                                 errors=args.errors, overwrite=args.overwrite, address=args.address)
        print(f"wrote {index.get('count', '?')} tokens in {len(index.get('shards', []))} shard(s) to {out}/ "
              f"(index.json)", file=sys.stderr)
        return 0
    if out.suffix not in (".bin", ".npy"):
        raise ValueError(f"{out}: the output must end in .bin or .npy")
    if not args.files or "-" in args.files:
        raise ValueError("--output needs input files (standard input is not supported there)")
    total = sum(Path(f).stat().st_size for f in args.files if Path(f).is_file())
    bar = _progress_bar(total, quiet=args.quiet)
    try:
        meta = encode_files(tok, args.files, out, separator=args.separator, add_eot=not args.no_eot,
                            num_threads=args.threads, overwrite=args.overwrite, errors=args.errors,
                            progress=bar.update if bar else None)
    finally:
        if bar:
            bar.close()
    print(f"wrote {meta['count']} tokens ({meta['dtype']}) from {len(meta['sources'])} file(s) to {out} "
          f"and {out}.json", file=sys.stderr)
    return 0


class _progress_bar:
    """tqdm showing bytes/s and tokens/s, only on a terminal."""

    def __new__(cls, total: int, quiet: bool):
        if quiet or not sys.stderr.isatty():
            return None
        return super().__new__(cls)

    def __init__(self, total: int, quiet: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, unit="B", unit_scale=True, desc="encoding", file=sys.stderr)
        self.tokens = 0

    def update(self, nbytes: int, ntokens: int) -> None:
        self.tokens += ntokens
        self.bar.update(nbytes)
        rate = self.bar.format_dict.get("rate") or 0
        elapsed = self.bar.format_dict.get("elapsed") or 0
        if elapsed:
            self.bar.set_postfix_str(f"{self.tokens / elapsed:,.0f} tok/s", refresh=False)

    def close(self) -> None:
        self.bar.close()


def add_decode_command(subparsers) -> None:
    p = subparsers.add_parser(
        "decode",
        help="decode ids to text",
        description="Decodes ids given as arguments, on standard input (separated by spaces, commas or "
        "newlines), or in a .bin/.npy array written by `tokenforge encode --output`.",
    )
    add_tokenizer_option(p)
    p.add_argument("ids", nargs="*", help="token ids (default: read from standard input)")
    p.add_argument("-i", "--input", default=None, help="a .bin or .npy array of ids")
    p.add_argument("--errors", choices=["replace", "strict"], default="replace",
                   help="invalid UTF-8 in the result: replace (default) or fail")
    p.set_defaults(func=cmd_decode)


def cmd_decode(args) -> int:
    tok = tokenizer(args.tokenizer)
    if args.input:
        from ..dataset import read_ids

        ids = read_ids(args.input).tolist()
    else:
        words = args.ids or re.split(r"[\s,\[\]]+", sys.stdin.read())
        try:
            ids = [int(w) for w in words if w]
        except ValueError as e:
            raise ValueError(f"ids must be integers: {e}") from None
    sys.stdout.write(tok.decode(ids, errors=args.errors))
    return 0


def add_count_command(subparsers) -> None:
    p = subparsers.add_parser(
        "count",
        help="count tokens per file and in total, for one or several tokenizers",
        description="Counts the tokens of each input (files, or standard input) with each tokenizer; "
        "special tokens in the text count as ordinary text.",
    )
    add_tokenizer_option(p, many=True)
    add_text_inputs(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_count)


def cmd_count(args) -> int:
    toks = [(spec, tokenizer(spec)) for spec in args.tokenizer]
    inputs = read_text(args)
    rows = [(name, len(text.encode("utf-8")), [t.count_tokens(text) for _, t in toks]) for name, text in inputs]
    totals = [sum(r[2][k] for r in rows) for k in range(len(toks))]
    if args.json:
        print(json.dumps({"inputs": [{"name": n, "bytes": b, "tokens": dict(zip(args.tokenizer, c))} for n, b, c in rows],
                          "total": dict(zip(args.tokenizer, totals))}, indent=1))
        return 0
    width = max(len(n) for n, _, _ in rows + [("total", 0, [])])
    print(f"{'':<{width}}  {'bytes':>12}  " + "  ".join(f"{s:>14}" for s in args.tokenizer))
    for name, nbytes, counts in rows:
        print(f"{name:<{width}}  {nbytes:>12,}  " + "  ".join(f"{c:>14,}" for c in counts))
    if len(rows) > 1:
        print(f"{'total':<{width}}  {sum(r[1] for r in rows):>12,}  " + "  ".join(f"{c:>14,}" for c in totals))
    return 0
