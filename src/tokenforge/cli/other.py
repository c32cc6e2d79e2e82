"""`tokenforge convert`, `serve` and `bench`."""

from __future__ import annotations

import sys
import time

from ._common import add_text_inputs, add_tokenizer_option, port, positive_int, read_text, split_pattern, tokenizer


def add_convert_command(subparsers) -> None:
    p = subparsers.add_parser(
        "convert",
        help="convert a tokenizer file to another format",
        description="Reads any supported tokenizer file (recognised by its content) and writes it in FORMAT: "
        "tokenforge, huggingface (tokenizer.json), transformers (a model folder: tokenizer.json + "
        "tokenizer_config.json), tiktoken, tekken, gpt2 (encoder.json + vocab.bpe), vocab_merges "
        "(vocab.json + merges.txt), sentencepiece (.model), bert_vocab (vocab.txt), rwkv, or listing "
        "(.vocab, for people). A format that cannot hold the tokenizer exactly is refused with the reason.",
    )
    p.add_argument("input", metavar="IN")
    p.add_argument("output", metavar="OUT")
    p.add_argument("--to", required=True, metavar="FORMAT")
    p.add_argument("--pattern", type=split_pattern, default=None,
                   help="the split pattern (a name such as cl100k or cl100k_base, or a regex), for inputs that lack one (.tiktoken)")
    p.add_argument("--special-token", action="append", default=None, metavar="TOKEN=ID",
                   help="a special token with its id, for inputs that lack them (repeatable)")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args) -> int:
    from ..io import convert
    from ..patterns import NAMED

    overrides = {}
    if args.pattern is not None:
        overrides["pattern"] = args.pattern
    if args.special_token is not None:
        special = {}
        for item in args.special_token:
            token, sep, value = item.rpartition("=")
            if not sep or not value.isdigit():
                raise ValueError(f"--special-token takes TOKEN=ID, got {item!r}")
            special[token] = int(value)
        overrides["special_tokens"] = special
    tok = convert(args.input, args.output, args.to, **overrides)
    print(f"wrote {args.output} ({args.to})", file=sys.stderr)
    pattern = getattr(tok, "pattern", None)
    if args.to in ("gpt2", "vocab_merges") and pattern is not None and pattern not in (NAMED["gpt2"], "gpt2"):
        # (these files carry no split pattern: readers assume GPT-2's, which gives other ids)
        print(f"note: {args.to} files carry no split pattern and readers assume GPT-2's; this tokenizer "
              "splits with another, so load them with pattern= (or save as huggingface or tokenforge)",
              file=sys.stderr)
    return 0


def add_serve_command(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="a local web page to see tokens (token visualizer)",
        description="Serves a token visualizer page: type text, choose a tokenizer (the pretrained "
        "encodings and any tokenizer files given), see the tokens coloured with their ids, compare two "
        "tokenizers side by side. Listens on 127.0.0.1 unless --host says otherwise.",
    )
    p.add_argument("tokenizer_files", nargs="*", metavar="FILE", help="saved tokenizer files to offer")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=port, default=8000, help="0..65535 (0: any free port; default: 8000)")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args) -> int:
    from ..serve import serve

    serve(args.host, args.port, tokenizer_files=args.tokenizer_files)
    return 0


def add_bench_command(subparsers) -> None:
    p = subparsers.add_parser(
        "bench",
        help="measure encoding speed on your text (against tiktoken when installed)",
        description="Encodes the input with each tokenizer, best of --repeat runs, and prints MB/s; for a "
        "pretrained encoding also tiktoken's speed on the same text when tiktoken is installed. Each library "
        "first encodes the text's first 100,000 characters once, untimed (its lazy set-up is not measured).",
    )
    add_tokenizer_option(p, many=True)
    add_text_inputs(p)
    p.add_argument("--repeat", type=positive_int, default=5)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress (shown for inputs over 50 MB)")
    p.set_defaults(func=cmd_bench)


WARM_UP_CHARS = 100_000


def cmd_bench(args) -> int:
    from . import _common

    text = "".join(t for _, t in read_text(args))
    nbytes = len(text.encode("utf-8"))
    mb = nbytes / 1e6
    if not mb:
        raise ValueError("no text to measure")
    bar = _common.Progress(None, desc="bench", quiet=args.quiet or nbytes < _common.BIG_INPUT)
    encoded = 0

    warm_up = text[:WARM_UP_CHARS]

    def best(fn) -> float:
        nonlocal encoded
        fn(warm_up)  # (a first call's set-up, e.g. tables made when first used, is not the speed)
        times = []
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            fn(text)
            times.append(time.perf_counter() - start)
            encoded += nbytes
            bar.update(encoded)
        return min(times)

    for spec in args.tokenizer:
        tok = tokenizer(spec)
        t = best(tok.encode_ordinary)
        line = f"{spec}: tokenforge {mb / t:.1f} MB/s"
        try:
            import tiktoken

            ref = tiktoken.get_encoding(spec) if spec in tiktoken.list_encoding_names() else None
        except Exception:
            ref = None
        if ref is not None:
            r = best(ref.encode_ordinary)
            line += f", tiktoken {mb / r:.1f} MB/s, ratio {r / t:.2f}x"
        print(line, flush=True)
    bar.close()
    return 0
