"""`tokenforge encode`, `decode` and `count`."""

from __future__ import annotations

import json
import re
import sys

from ._common import (Progress, SPECIAL_HELP, add_special_options, add_text_inputs, add_tokenizer_option,
                      count_with_suffix, encode_with_policy, fraction, positive_int, read_text, refuse_unused_field,
                      tokenizer)


def add_encode_command(subparsers) -> None:
    p = subparsers.add_parser(
        "encode",
        help="encode text to ids, or a corpus to training arrays (.bin / .npy / shards)",
        description="Without --output: prints the ids of each input, one line per input. With --output: "
        "encodes a corpus into flat arrays of ids for model training. Inputs: text files, JSON lines "
        "(.jsonl, the --field of each record), Parquet (the --field column), gzip / zstd compressed, "
        "folders, globs, - (standard input) and fsspec URLs (s3://, gs://, file://). One document per "
        "record / row (or per file, or split on --separator), an end-of-text token after each. OUT.bin "
        "(raw ids: np.memmap(OUT, dtype, mode='r')) or OUT.npy, uint16 when the vocabulary fits, else "
        "uint32, with the JSON sidecar OUT.bin.json (dtype, count, checksum, tokenizer); with --shard-size "
        "OUT is a folder of shards and index.json, and --resume continues an interrupted run. Streams in "
        "constant memory on every core; every file is written atomically. " + SPECIAL_HELP + " (with "
        "--output documents are always encoded as ordinary text).",
    )
    add_tokenizer_option(p)
    add_text_inputs(p)
    add_special_options(p)
    p.add_argument("-o", "--output", default=None, help="write a .bin / .npy training array here (or a folder of shards)")
    p.add_argument("--format", dest="input_format", choices=["auto", "text", "jsonl", "parquet"], default="auto",
                   help="input format (default: by file name: .jsonl/.ndjson/.json, .parquet, else text)")
    p.add_argument("--field", default="text", help="the JSON field / Parquet column holding the text (default: text)")
    p.add_argument("--separator", default=None,
                   help='in text inputs, split documents on this string (e.g. "<|endoftext|>"); default: a file is a document')
    p.add_argument("--eot-token", default="auto", metavar="TOKEN",
                   help="the token after each document (default: <|endoftext|>, <|end_of_text|>, </s> or <eos>, "
                   "the first the tokenizer has)")
    p.add_argument("--no-eot", action="store_true", help="no token between documents")
    p.add_argument("--shard-size", type=count_with_suffix, default=None, metavar="N",
                   help="write shards of about N tokens (e.g. 100M) into the folder OUTPUT, cut at document ends")
    p.add_argument("--val-fraction", type=fraction, default=0.0, metavar="F",
                   help="put this share of the documents (evenly spread) in a validation split: OUT_val.bin or val-*.bin shards")
    p.add_argument("--resume", action="store_true", help="continue an interrupted sharded run after its last complete shard")
    p.add_argument("--threads", type=positive_int, default=None, help="native threads (default: all CPUs)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="encode here (default) or as Ray tasks: then --output is a folder of shards plus index.json")
    p.add_argument("--address", default=None, help='with --engine ray: the cluster (e.g. "auto"); default: start one on 127.0.0.1')
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    p.set_defaults(func=cmd_encode)


# encode's options that shape a training array: without --output they would be ignored.
_OUTPUT_ONLY = {"input_format": ("--format", "auto"), "field": ("--field", "text"), "separator": ("--separator", None),
                "eot_token": ("--eot-token", "auto"), "no_eot": ("--no-eot", False), "shard_size": ("--shard-size", None),
                "val_fraction": ("--val-fraction", 0.0), "resume": ("--resume", False), "threads": ("--threads", None),
                "overwrite": ("--overwrite", False), "engine": ("--engine", "local"), "address": ("--address", None)}


def cmd_encode(args) -> int:
    if args.output is None:
        given = [flag for key, (flag, default) in _OUTPUT_ONLY.items() if getattr(args, key) != default]
        if given:
            raise ValueError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to a training array: "
                             "give --output (without it encode prints the ids of each input)")
    elif args.no_eot and args.eot_token != "auto":
        raise ValueError(f"--no-eot and --eot-token {args.eot_token}: give one or the other")
    if args.output is not None:
        refuse_unused_field(args.field, args.files or ["-"], args.input_format)
    tok = tokenizer(args.tokenizer)
    if args.output is None:
        for name, text in read_text(args):
            print(" ".join(map(str, encode_with_policy(tok, text, args.special))))
        return 0
    if args.special != "ordinary":
        raise ValueError("with --output documents are encoded as ordinary text; --allow-special / "
                         "--disallow-special apply only without it")
    if args.text is not None:
        raise ValueError("--text and --output: give files (or - for standard input) to encode into a training array")
    eot = None if args.no_eot else args.eot_token
    inputs = args.files or ["-"]
    if args.engine == "ray":
        from ..distributed import encode_files_ray

        shard_bytes = 4 * args.shard_size if args.shard_size else 64 << 20  # about 4 bytes of text per token
        index = encode_files_ray(tok, inputs, args.output, separator=args.separator, add_eot=not args.no_eot,
                                 eot=args.eot_token, input_format=args.input_format, field=args.field,
                                 errors=args.errors, overwrite=args.overwrite, resume=args.resume,
                                 shard_size=shard_bytes, num_threads=args.threads or 1, address=args.address)
        print(f"wrote {index['count']:,} tokens in {len(index['shards'])} shard(s) to {args.output.rstrip('/')}/ (index.json)",
              file=sys.stderr)
        return 0
    from ..dataset import encode_dataset

    bar = None

    def progress(state):
        nonlocal bar
        if bar is None:
            bar = Progress(state.total_bytes, desc="encoding", quiet=args.quiet)
        bar.update(state.bytes, state.documents, state.tokens)

    try:
        meta = encode_dataset(tok, inputs, args.output, input_format=args.input_format, field=args.field,
                              separator=args.separator, eot=eot, shard_size=args.shard_size,
                              val_fraction=args.val_fraction, resume=args.resume, overwrite=args.overwrite,
                              num_threads=args.threads, errors=args.errors, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    summary = bar.line() if bar is not None else ""
    if meta.get("already_complete"):
        print(f"{args.output}/ is complete already ({meta['count']:,} tokens of {meta['documents']:,} documents in "
              f"{len(meta['shards'])} shard(s)); nothing to resume", file=sys.stderr)
    elif args.shard_size is None:
        where = f"{args.output} and its sidecar {args.output}.json"
        if "val" in meta:
            where += f" (+ {meta['val']['count']:,} validation tokens in the _val file)"
        print(f"wrote {meta['count']:,} tokens ({meta['dtype']}) of {meta['documents']:,} documents to {where}; "
              f"{summary}", file=sys.stderr)
    else:
        print(f"wrote {meta['count']:,} tokens ({meta['dtype']}) of {meta['documents']:,} documents in "
              f"{len(meta['shards'])} shard(s) to {args.output}/ (index.json); {summary}", file=sys.stderr)
    return 0


def add_decode_command(subparsers) -> None:
    p = subparsers.add_parser(
        "decode",
        help="decode ids to text",
        description="Decodes ids given as arguments, on standard input (separated by spaces, commas or "
        "newlines), or in a .bin/.npy array written by `tokenforge encode --output` (checked against its "
        "sidecar), or a folder of shards.",
    )
    add_tokenizer_option(p)
    p.add_argument("ids", nargs="*", help="token ids (default: read from standard input)")
    p.add_argument("-i", "--input", default=None, help="a .bin / .npy array of ids, or a folder of shards")
    p.add_argument("--errors", choices=["replace", "strict"], default="replace",
                   help="invalid UTF-8 in the result: replace (default) or fail")
    p.set_defaults(func=cmd_decode)


def cmd_decode(args) -> int:
    tok = tokenizer(args.tokenizer)
    if args.input:
        from pathlib import Path

        from ..dataset import check_same_tokenizer, read_ids, read_shards
        from ..dataset_files import ids_metadata

        check_same_tokenizer(tok, ids_metadata(args.input), args.input)
        ids = (read_shards(args.input) if Path(args.input).is_dir() else read_ids(args.input, verify=True)).tolist()
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
        description="Counts the tokens of each input (files, or standard input) with each tokenizer, "
        "streaming files in constant memory on every core. " + SPECIAL_HELP + ".",
    )
    add_tokenizer_option(p, many=True)
    add_text_inputs(p)
    add_special_options(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--threads", type=positive_int, default=None, help="native threads (default: all CPUs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress")
    p.set_defaults(func=cmd_count)


def _count_stream(tok, names: list[str], errors: str, threads, progress, text_bytes: list[int] | None = None
                  ) -> list[int]:
    """Token counts of files as encode_ordinary would give them, streamed through the dataset reader
    and encoded in batches across files (many small files keep every core busy). text_bytes, if
    given, gets each file's bytes of text (a compressed file's decompressed size)."""
    import os

    from ..dataset import _Encoder, batched, encoded
    from ..dataset_readers import Source, segments

    encoder = _Encoder(tok, threads or os.cpu_count() or 1)
    counts = [0] * len(names)
    counter = [0]

    def items():
        for k, name in enumerate(names):
            for text, _ in segments(Source(name, None), fmt="text", errors=errors,
                                    cut=encoder.cut if encoder.cuttable else None, counter=counter):
                if text_bytes is not None:
                    text_bytes[k] += len(text.encode("utf-8", "surrogatepass"))
                yield text, False, k

    for batch, _, per_text in encoded(encoder, batched(items())):
        for (_, _, k), n in zip(batch, per_text):
            counts[k] += n
        progress(counter[0], sum(counts))
    return counts


def cmd_count(args) -> int:
    from pathlib import Path

    toks = [(spec, tokenizer(spec)) for spec in args.tokenizer]
    streamed = args.text is None and args.files and "-" not in args.files and args.special == "ordinary"
    if streamed:
        for f in args.files:
            if Path(f).is_dir():
                raise ValueError(f"{f}: is a directory")
            if not Path(f).exists():
                raise FileNotFoundError(f"{f}: no such file")
        stored = [Path(f).stat().st_size for f in args.files]  # (compressed sizes: the progress bar's)
        sizes = [0] * len(args.files)  # the bytes of text, which the table shows
        columns = []
        for n, (spec, tok) in enumerate(toks):
            bar = Progress(sum(stored), desc=f"counting ({spec})", quiet=args.quiet or sum(stored) < 50 << 20)
            try:
                columns.append(_count_stream(tok, args.files, args.errors, args.threads,
                                             lambda b, t: bar.update(b, 0, t), sizes if n == 0 else None))
            finally:
                bar.close()
        rows = [(name, size, [col[k] for col in columns]) for k, (name, size) in enumerate(zip(args.files, sizes))]
    else:
        inputs = read_text(args)
        rows = [(name, len(text.encode("utf-8")), [len(encode_with_policy(t, text, args.special)) for _, t in toks])
                for name, text in inputs]
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
