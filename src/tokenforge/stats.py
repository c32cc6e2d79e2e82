"""Corpus statistics of a tokenizer, and a report with plots (what `tokenforge stats` writes).

    >>> import tokenforge, tokenforge.stats as st
    >>> s = st.corpus_stats(tokenforge.get_encoding("cl100k_base"), ["hello world", "hello"])  # doctest: +SKIP
    >>> s["tokens"], s["bytes"], s["bytes_per_token"]                                           # doctest: +SKIP
    (3, 16, 5.333333333333333)
    >>> st.write_report(s, "report/")   # stats.json, report.md, token_lengths.png, vocab_use.png  # doctest: +SKIP

Inputs are texts (`str`) or files (`pathlib.Path` or any `os.PathLike`; read as UTF-8, newlines
kept as they are, streamed with `encode_iterable` so a large file needs bounded memory). A file
that is not UTF-8 is an error naming it, not skipped. Special tokens in the text count as ordinary
text unless `allowed_special` lists them (then each is one token).

Definitions: *bytes per token* (= *compression ratio*, the usual measure for tokenizers) is UTF-8
bytes over tokens; a token's *length* is its number of bytes; *vocabulary used* is the share of the
tokenizer's distinct ids (mergeable and special) that occur at least once; *coverage* gives how many
of the most frequent distinct tokens make up 50 / 90 / 99 % of all token occurrences.

Plots need matplotlib (`pip install tokenforge[viz]`); they are drawn with the Agg canvas directly,
so no pyplot state or GUI backend is touched. Not handled: word-level statistics (tokens per word
depend on a word definition), per-document distributions.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

READ_CHARS = 1 << 20  # characters read from a file at a time
BLOCK_IDS = 1 << 20  # ids counted at a time when streaming a file
COVERAGE_LEVELS = (0.5, 0.9, 0.99)


def _tokenizer(tokenizer):
    if isinstance(tokenizer, str):
        from .registry import get_encoding

        return get_encoding(tokenizer)
    if not hasattr(tokenizer, "encode_to_numpy") or not hasattr(tokenizer, "vocab"):
        raise TypeError(f"expected a tokenforge Tokenizer or an encoding name, got {type(tokenizer).__name__}")
    return tokenizer


def _items(texts_or_paths) -> list:
    if isinstance(texts_or_paths, (str, os.PathLike)):
        return [texts_or_paths]
    items = list(texts_or_paths)
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"each input must be a str (a text) or a path (os.PathLike), got {type(item).__name__}")
    return items


def _read_chunks(path: Path, sizes: list[int]):
    """Yields the file's text in chunks; adds (characters, bytes) to sizes. Invalid UTF-8 is an
    error giving its byte offset in the file."""
    from .dataset_readers import text_blocks

    if path.is_dir():
        raise ValueError(f"{path}: is a directory, not a text file")
    with open(path, "rb") as f:
        for chunk in text_blocks(f, str(path), "strict"):
            sizes[0] += len(chunk)
            sizes[1] += len(chunk.encode("utf-8", errors="surrogatepass"))
            yield chunk


def _token_text(b: bytes) -> str:
    return b.decode("utf-8", errors="backslashreplace")


def corpus_stats(
    tokenizer,
    texts_or_paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    top_k: int = 20,
    allowed_special: frozenset[str] | set[str] | str = frozenset(),
    progress=None,
) -> dict:
    """Statistics of `tokenizer` on the texts and files given; a JSON-serialisable dict.

    Keys: tokenizer, n_vocab, vocab_size, texts, files, chars, bytes, tokens, bytes_per_token,
    compression_ratio (the same number), chars_per_token, token_length_histogram ([[bytes, number
    of token occurrences], ...]), vocab_length_histogram ([[bytes, number of vocabulary tokens],
    ...]), top_tokens ([{id, count, share, bytes (hex), text}, ...] most frequent first, ties by
    id), distinct_tokens, vocab_used_share, coverage ({"50%": n, "90%": n, "99%": n}), and
    rank_frequency (the count of every token that occurs, most frequent first). `progress`, if
    given, is called with the number of bytes of the files read so far.
    """
    tok = _tokenizer(tokenizer)
    items = _items(texts_or_paths)
    if not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative int, got {top_k!r}")

    vocab = tok.vocab  # id -> bytes, special tokens included
    size = tok.n_vocab
    lengths = np.zeros(size, dtype=np.int64)
    in_vocab = np.zeros(size, dtype=bool)
    for i, b in vocab.items():
        lengths[i] = len(b)
        in_vocab[i] = True

    counts = np.zeros(size, dtype=np.int64)
    chars = n_bytes = 0
    texts, files = 0, []
    for item in items:
        if isinstance(item, str):
            ids = tok.encode_to_numpy(item, allowed_special=allowed_special, disallowed_special=())
            counts += np.bincount(ids, minlength=size)
            chars += len(item)
            n_bytes += len(item.encode("utf-8", errors="surrogatepass"))
            texts += 1
        else:
            path = Path(item)
            sizes = [0, 0]
            done_before = n_bytes
            stream = tok.encode_iterable(_read_chunks(path, sizes), allowed_special=allowed_special, disallowed_special=())
            while True:
                block = np.fromiter(_take(stream, BLOCK_IDS), dtype=np.int64)
                if block.size == 0:
                    break
                counts += np.bincount(block, minlength=size)
                if progress is not None:
                    progress(done_before + sizes[1])
            chars += sizes[0]
            n_bytes += sizes[1]
            files.append(str(path))

    tokens = int(counts.sum())
    used = np.flatnonzero(counts)
    # Most frequent first, ties broken by the smaller id (a stable sort of ids in increasing order).
    order = used[np.argsort(-counts[used], kind="stable")]
    ranked = counts[order]
    cumulative = np.cumsum(ranked)
    coverage = {}
    for level in COVERAGE_LEVELS:
        key = f"{level * 100:g}%"
        # The smallest n with cumulative[n - 1] >= level * tokens (integers: no rounding surprise).
        coverage[key] = int(np.searchsorted(cumulative * 100, round(level * 100) * tokens, side="left") + 1) if tokens else 0

    occurrence_by_length = np.bincount(lengths, weights=counts, minlength=1).astype(np.int64)
    vocab_by_length = np.bincount(lengths[in_vocab], minlength=1)
    vocab_size = int(in_vocab.sum())

    return {
        "tokenizer": getattr(tok, "name", type(tok).__name__),
        "n_vocab": int(size),
        "vocab_size": vocab_size,
        "texts": texts,
        "files": files,
        "chars": int(chars),
        "bytes": int(n_bytes),
        "tokens": tokens,
        "bytes_per_token": n_bytes / tokens if tokens else None,
        "compression_ratio": n_bytes / tokens if tokens else None,
        "chars_per_token": chars / tokens if tokens else None,
        "token_length_histogram": [[int(n), int(c)] for n, c in enumerate(occurrence_by_length) if c],
        "vocab_length_histogram": [[int(n), int(c)] for n, c in enumerate(vocab_by_length) if c],
        "top_tokens": [
            {
                "id": int(i),
                "count": int(counts[i]),
                "share": int(counts[i]) / tokens,
                "bytes": vocab[int(i)].hex(),
                "text": _token_text(vocab[int(i)]),
            }
            for i in order[:top_k]
        ],
        "distinct_tokens": int(used.size),
        "vocab_used_share": used.size / vocab_size if vocab_size else 0.0,
        "coverage": coverage,
        "rank_frequency": [int(c) for c in ranked],
    }


def _take(iterator, n: int):
    for _, x in zip(range(n), iterator):
        yield x


# --------------------------------------------------------------------------------------------------
# The report


def _as_list(stats) -> list[dict]:
    if isinstance(stats, Mapping):
        return [dict(stats)]
    runs = [dict(s) for s in stats]
    if not runs:
        raise ValueError("no statistics to report")
    return runs


def _fmt(x, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return f"{x:,}"


def _md_code(text: str) -> str:
    """`text` as a Markdown code span that survives a table cell."""
    shown = json.dumps(text, ensure_ascii=False)[1:-1]  # escapes newlines, tabs, quotes
    fence = "`"
    while fence in shown:
        fence += "`"
    pad = " " if shown.startswith("`") or shown.endswith("`") or not shown.strip() else ""
    return f"{fence}{pad}{shown}{pad}{fence}".replace("|", "\\|")


def _markdown(runs: list[dict], images: Mapping[str, str], title: str) -> str:
    lines = [f"# {title}", ""]
    names = [r["tokenizer"] for r in runs]
    first = runs[0]
    sources = ", ".join(first["files"][:5]) + (" ..." if len(first["files"]) > 5 else "")
    parts = [f"{first['texts']:,} text{'s' * (first['texts'] != 1)}"] if first["texts"] or not first["files"] else []
    if first["files"]:
        parts.append(f"{len(first['files']):,} file{'s' * (len(first['files']) != 1)} ({sources})")
    corpus = " and ".join(parts)
    lines += [f"Corpus: {corpus}; {first['chars']:,} characters, {first['bytes']:,} bytes (UTF-8).", ""]
    rows = [
        ("tokens", "tokens"),
        ("bytes per token (compression ratio)", "bytes_per_token"),
        ("characters per token", "chars_per_token"),
        ("vocabulary size", "vocab_size"),
        ("distinct tokens used", "distinct_tokens"),
        ("share of the vocabulary used", "vocab_used_share"),
    ] + [(f"most frequent tokens covering {k} of occurrences", ("coverage", k)) for k in first["coverage"]]
    lines += ["| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(runs)]
    for label, key in rows:
        cells = []
        for r in runs:
            value = r[key[0]].get(key[1]) if isinstance(key, tuple) else r[key]
            cells.append(f"{value:.2%}" if key == "vocab_used_share" else _fmt(value))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, path in images.items():
        lines += [f"![{name}]({path})", ""]

    lines += ["## Token length (bytes)", "", "Share of token occurrences in the corpus by token length.", ""]
    max_len = max((n for r in runs for n, _ in r["token_length_histogram"]), default=0)
    lines += ["| bytes | " + " | ".join(names) + " |", "|---:|" + "---:|" * len(runs)]
    for n in range(1, max_len + 1):
        cells = []
        for r in runs:
            c = dict(r["token_length_histogram"]).get(n, 0)
            cells.append(f"{c:,} ({c / r['tokens']:.1%})" if r["tokens"] else "0")
        if any(dict(r["token_length_histogram"]).get(n) for r in runs):
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines.append("")

    for r in runs:
        lines += [f"## Most frequent tokens: {r['tokenizer']}", "", "| rank | id | token | count | share |", "|---:|---:|---|---:|---:|"]
        for k, t in enumerate(r["top_tokens"], 1):
            lines.append(f"| {k} | {t['id']} | {_md_code(t['text'])} | {t['count']:,} | {t['share']:.2%} |")
        lines.append("")
    return "\n".join(lines)


def _figure(width: float, height: float):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the report's plots need matplotlib: pip install 'tokenforge[viz]'") from None
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _length_plot(runs: list[dict], max_len: int = 24) -> bytes:
    """Two panels: token occurrences in the corpus and tokens in the vocabulary, by length."""
    fig = _figure(11, 4.2)
    axes = fig.subplots(1, 2)
    width = 0.8 / len(runs)
    for ax, key, title in (
        (axes[0], "token_length_histogram", "tokens in the corpus"),
        (axes[1], "vocab_length_histogram", "tokens in the vocabulary"),
    ):
        for k, r in enumerate(runs):
            hist = np.zeros(max_len + 1)
            for n, c in r[key]:
                hist[min(n, max_len)] += c
            total = hist.sum()
            share = hist[1:] / total * 100 if total else hist[1:]
            x = np.arange(1, max_len + 1) + (k - (len(runs) - 1) / 2) * width
            ax.bar(x, share, width=width, label=r["tokenizer"])
        ax.set_title(f"Token length: {title}")
        ax.set_xlabel("token length (bytes)")
        ax.set_ylabel("share (%)")
        ticks = [*range(1 if max_len <= 16 else 2, max_len, 1 if max_len <= 16 else 2), max_len]
        ax.set_xticks(ticks, [*map(str, ticks[:-1]), f"{max_len}+"])
        ax.grid(axis="y", alpha=0.3)
        if len(runs) > 1:
            ax.legend()
        if not any(r[key] for r in runs):
            ax.text(0.5, 0.5, "no tokens", ha="center", va="center", transform=ax.transAxes)
    return _png(fig)


def _vocab_plot(runs: list[dict]) -> bytes:
    """Two panels: rank-frequency on log-log axes, and the cumulative share of occurrences."""
    fig = _figure(11, 4.2)
    ax_rank, ax_cov = fig.subplots(1, 2)
    any_tokens = False
    for r in runs:
        freq = np.asarray(r["rank_frequency"], dtype=float)
        if freq.size == 0:
            continue
        any_tokens = True
        ranks = np.arange(1, freq.size + 1)
        label = f"{r['tokenizer']} ({r['vocab_used_share']:.1%} of vocabulary used)"
        ax_rank.loglog(ranks, freq, label=label)
        ax_cov.semilogx(ranks, np.cumsum(freq) / freq.sum() * 100, label=r["tokenizer"])
        ax_cov.axvline(r["vocab_size"], linestyle=":", linewidth=1, color=ax_cov.lines[-1].get_color())
    ax_rank.set_title("Rank-frequency of tokens")
    ax_rank.set_xlabel("rank (most frequent = 1)")
    ax_rank.set_ylabel("occurrences")
    ax_cov.set_title("Cumulative coverage (dotted: vocabulary size)")
    ax_cov.set_xlabel("number of most frequent distinct tokens")
    ax_cov.set_ylabel("share of token occurrences (%)")
    ax_cov.set_ylim(0, 100)
    for ax in (ax_rank, ax_cov):
        ax.grid(alpha=0.3, which="both" if ax is ax_rank else "major")
        if any_tokens:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "no tokens", ha="center", va="center", transform=ax.transAxes)
    return _png(fig)


def write_report(stats: Mapping | Sequence[Mapping], out_dir: str | os.PathLike, *, title: str | None = None) -> dict[str, Path]:
    """Writes stats.json, report.md, token_lengths.png and vocab_use.png into out_dir.

    `stats` is one result of corpus_stats, or several (different tokenizers on the same corpus),
    which the tables and plots then compare. Each file is written atomically. Returns the paths by
    kind: {"json", "markdown", "token_lengths", "vocab_use"}.
    """
    from .outputs import write_atomic

    runs = _as_list(stats)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / "stats.json",
        "markdown": out / "report.md",
        "token_lengths": out / "token_lengths.png",
        "vocab_use": out / "vocab_use.png",
    }
    # Plots first: without matplotlib nothing is written.
    write_atomic(paths["token_lengths"], _length_plot(runs))
    write_atomic(paths["vocab_use"], _vocab_plot(runs))
    payload = runs[0] if isinstance(stats, Mapping) else runs
    write_atomic(paths["json"], json.dumps(payload, ensure_ascii=False, indent=1).encode("utf-8"))
    if title is None:
        corpus = runs[0].get("files") or []
        where = (", ".join(Path(f).name for f in corpus[:3]) + (f" and {len(corpus) - 3} more" if len(corpus) > 3 else "")
                 if corpus else f"{runs[0].get('texts', 0)} text(s)")
        title = "Tokenizer statistics: " + ", ".join(r["tokenizer"] for r in runs) + f" on {where}"
    images = {"token length distribution": paths["token_lengths"].name, "vocabulary use": paths["vocab_use"].name}
    write_atomic(paths["markdown"], _markdown(runs, images, title).encode("utf-8"))
    return paths
