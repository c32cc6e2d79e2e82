"""Reading corpora for dataset encoding: which files, how they are compressed, how they hold documents.

    sources = expand_inputs(["data/", "more/*.jsonl.zst", "s3://bucket/part-*.parquet", "-"])
    for text, ends_document in segments(sources[0], fmt="auto", field="text", ...): ...

Inputs: files, folders (every file below, in sorted order, hidden ones skipped), globs (`*`, `?`,
`[...]`, `**`), `-` (standard input) and fsspec URLs (`s3://`, `gs://`, `memory://`, `file://`; needs
fsspec and the file system's package). Compression is recognised by its magic bytes (gzip; zstd with
the `zstandard` package), the format by the name without the compression suffix (`.jsonl`,
`.ndjson`, `.json` -> JSON lines; `.parquet` -> Parquet with pyarrow; anything else -> text) unless
given. One document per JSON line or Parquet row (the `field` / column; JSON lines are parsed by
orjson when installed, by json otherwise and for every line orjson refuses); a text file is one
document, or several split on `separator`. With a `cut` function, text and long documents are
yielded as segments of about CHUNK_CHARS characters that end at safe cuts. `native_units` is the
same for an encoder that parses and validates bytes itself (blocks of JSON lines, UTF-8 bytes of
text): the functions here that make str stay the reference for it.

What this does *not* read: a JSON file holding one array of records, Parquet from standard input or
inside a compressed file (Parquet needs to seek; its pages are compressed already), tar archives.
"""

from __future__ import annotations

import codecs
import contextlib
import glob
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

BLOCK_BYTES = 1 << 20  # bytes read at a time
CHUNK_CHARS = 1 << 20  # a text segment is cut near this many characters when a safe cut exists
FORMATS = ("auto", "text", "jsonl", "parquet")
_COMPRESSION_SUFFIXES = (".gz", ".zst", ".zstd")
_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_PARQUET_MAGIC = b"PAR1"


def is_url(name: str) -> bool:
    head, sep, _ = str(name).partition("://")
    return bool(sep) and head.isidentifier() and len(head) > 1


def require_fsspec(what: str):
    try:
        import fsspec
    except ImportError:
        raise ImportError(f"{what}: URLs need fsspec (pip install fsspec, and s3fs / gcsfs for s3:// / gs://)") from None
    return fsspec


@dataclass(frozen=True)
class Source:
    """One input: a local file, a file behind an fsspec URL, or standard input."""

    name: str  # as shown to the user (path, URL or <stdin>)
    size: int | None  # bytes on storage (compressed), None for standard input

    @property
    def is_stdin(self) -> bool:
        return self.name == "<stdin>"

    def open(self):
        """The raw bytes, as a binary file."""
        if self.is_stdin:
            return sys.stdin.buffer
        if is_url(self.name):
            return require_fsspec(self.name).open(self.name, "rb").open()
        return open(self.name, "rb")


def expand_inputs(inputs) -> list[Source]:
    """The sources named by files, folders, globs, URLs and "-", in order, each once."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out: list[Source] = []
    seen: set[str] = set()

    def add(name: str, size):
        if name not in seen:
            seen.add(name)
            out.append(Source(name, size))

    for item in inputs:
        item = os.fspath(item)
        if item == "-":
            add("<stdin>", None)
        elif is_url(item):
            fsspec = require_fsspec(item)
            fs, _, paths = fsspec.get_fs_token_paths(item)
            protocol = item.split("://", 1)[0]
            names = paths if glob.has_magic(item) else [paths[0]]
            found = False
            for p in sorted(names):
                if fs.isdir(p):
                    for q in sorted(fs.find(p)):
                        if not any(part.startswith(".") for part in q[len(p.rstrip("/")):].split("/")):
                            add(f"{protocol}://{q.split('://', 1)[-1]}", fs.size(q))
                            found = True
                elif fs.exists(p):
                    add(f"{protocol}://{p.split('://', 1)[-1]}", fs.size(p))
                    found = True
            if not found:
                raise FileNotFoundError(f"{item}: no such file")
        else:
            path = Path(item)
            if path.is_dir():
                files = [p for p in sorted(path.rglob("*")) if p.is_file()
                         and not any(part.startswith(".") for part in p.relative_to(path).parts)]
                if not files:
                    raise ValueError(f"{path}: a folder without files")
                for p in files:
                    add(str(p), p.stat().st_size)
            elif path.exists():
                add(str(path), path.stat().st_size)
            elif glob.has_magic(item):
                matches = sorted(p for p in glob.glob(item, recursive=True) if os.path.isfile(p))
                if not matches:
                    raise FileNotFoundError(f"{item}: no file matches")
                for p in matches:
                    add(p, os.path.getsize(p))
            else:
                raise FileNotFoundError(f"{item}: no such file")
    if not out:
        raise ValueError("no input files")
    return out


class _Counted(io.RawIOBase):
    """A raw stream over a binary file that counts the bytes read (for the progress bar) and first
    returns `head` (the bytes read to recognise the compression)."""

    def __init__(self, f, head: bytes, counter: list):
        self._f = f
        self._head = head
        self._counter = counter

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        readinto = getattr(self._f, "readinto", None)
        if readinto is not None:  # straight into the caller's buffer
            n = readinto(b) or 0
        else:
            data = self._f.read(len(b))
            n = len(data)
            b[:n] = data
        self._counter[0] += n
        return n


def _read_head(f, n: int = 4) -> bytes:
    head = b""
    while len(head) < n:
        more = f.read(n - len(head))
        if not more:
            break
        head += more
    return head


def compression_of(head: bytes) -> str | None:
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    if head.startswith(_ZSTD_MAGIC):
        return "zstd"
    return None


def format_of(name: str, fmt: str = "auto", head: bytes = b"") -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {fmt!r} (choose from {', '.join(FORMATS)})")
    if fmt != "auto":
        return fmt
    lower = name.lower()
    for suffix in _COMPRESSION_SUFFIXES:
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
    if head.startswith(_PARQUET_MAGIC) or lower.endswith(".parquet"):
        return "parquet"
    if lower.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    return "text"


def open_decompressed(source: Source, counter: list):
    """(binary stream of the decompressed bytes, compression name or None, the first bytes)."""
    raw = source.open()
    head = _read_head(raw)
    counter[0] += len(head)
    stream = io.BufferedReader(_Counted(raw, head, counter), BLOCK_BYTES)
    compression = compression_of(head)
    if compression == "gzip":
        import gzip

        stream = io.BufferedReader(gzip.GzipFile(fileobj=stream, mode="rb"), BLOCK_BYTES)
    elif compression == "zstd":
        try:
            import zstandard
        except ImportError:
            raise ImportError(f"{source.name}: zstd-compressed; reading it needs the zstandard package "
                              "(pip install zstandard)") from None
        stream = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True),
                                   BLOCK_BYTES)
    return stream, compression, raw, head


def text_blocks(stream, name: str, errors: str) -> Iterator[str]:
    """The decoded text of a binary stream in blocks; an invalid UTF-8 byte (errors="strict") raises
    ValueError with its offset in the (decompressed) file."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors)
    offset = 0  # bytes of the stream before `block`
    while True:
        block = stream.read(BLOCK_BYTES)
        pending = len(decoder.getstate()[0])
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError as e:
            raise ValueError(f"{name}: not UTF-8 ({e.reason} at byte offset {offset - pending + e.start}); "
                             "pass --errors replace (errors='replace') to replace invalid bytes") from None
        offset += len(block)
        if text:
            yield text
        if not block:
            return


def text_segments(blocks, separator: str | None, cut, final: bool = True) -> Iterator[tuple[str, bool]]:
    """(text, ends_document) segments of a text given as blocks: documents split on separator, long
    documents cut where `cut(buffer, start)` finds a safe cut (or never, if cut is None), holding
    about two blocks at a time. With final=False the text is a range of a file that does not reach
    its end: the text after the last separator does not end a document."""
    pending = ""
    keep = len(separator) - 1 if separator else 0  # a separator may straddle two blocks
    searched = 0  # pending[:searched] holds no safe cut
    for block in blocks:
        start = max(0, len(pending) - keep)
        pending += block
        if separator is not None and pending.find(separator, start) >= 0:
            *docs, pending = pending.split(separator)
            for doc in docs:
                yield doc, True
            searched = 0
        if cut is None or len(pending) < CHUNK_CHARS:
            continue
        limit = len(pending) - keep  # never cut inside a separator that the next block completes
        c = cut(pending, max(0, searched - 2), limit) if limit > 0 else 0
        if c > 0:
            yield pending[:c], False
            pending = pending[c:]
            searched = 0
        else:
            searched = max(0, limit)
    if not final:
        if pending:
            yield pending, False
    elif pending or separator is None:
        yield pending, True


def document_segments(doc: str, cut) -> Iterator[tuple[str, bool]]:
    """(text, ends_document) segments of one whole document (a JSON record, a Parquet row): a long
    one is cut into segments of about CHUNK_CHARS characters at safe cuts, as a text file is, so
    that a 20 MB record is encoded on every core and not held twice in memory as ids."""
    if cut is None or len(doc) <= CHUNK_CHARS:
        yield doc, True
        return
    yield from text_segments((doc[i:i + CHUNK_CHARS] for i in range(0, len(doc), CHUNK_CHARS)), None, cut)


def _json_error(name: str, line_no: int, what: str) -> ValueError:
    return ValueError(f"{name}: line {line_no}: {what}")


def _fast_json_loads():
    """orjson.loads when orjson is installed (twice as fast as json here), else None."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson.loads


def jsonl_documents(stream, name: str, field: str, errors: str, first_line: int = 1) -> Iterator[str]:
    """The field's text of each JSON line of a binary stream (or of any iterable of lines, the first
    numbered first_line in error messages)."""
    fast_loads = _fast_json_loads()
    for line_no, line in enumerate(stream, first_line):
        record = None
        if fast_loads is not None:
            try:
                record = fast_loads(line)
            except ValueError:  # invalid UTF-8, lone surrogates, NaN, huge ints, deep nesting, ...:
                record = None   # parsed again below, as json does, with its error message
        if isinstance(record, dict) and isinstance(record.get(field), str):
            yield record[field]
            continue
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8", errors=errors)
        except UnicodeDecodeError as e:
            raise _json_error(name, line_no, f"not UTF-8 ({e.reason} at byte {e.start} of the line)") from None
        try:
            record = json.loads(text)
        except json.JSONDecodeError as e:
            raise _json_error(name, line_no, f"not a JSON record ({e.msg}); is this JSON lines?") from None
        except RecursionError:
            raise _json_error(name, line_no, "JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise _json_error(name, line_no, f"expected a JSON object, got {type(record).__name__}")
        if field not in record:
            fields = ", ".join(list(record)[:8])
            raise _json_error(name, line_no, f"no field {field!r} (fields: {fields}); choose one with --field")
        value = record[field]
        if not isinstance(value, str):
            raise _json_error(name, line_no, f"field {field!r} is {type(value).__name__}, not a string")
        yield value


def jsonl_blocks(stream, block_bytes: int = BLOCK_BYTES, count_lines=None) -> Iterator[tuple[bytes, int, int, int]]:
    """(block, start, end, number of its first line) of a binary stream of JSON lines:
    block[start:end] holds whole lines, about block_bytes of them; the last block is possibly a
    line without its newline. A block is a read as it came, never copied: the line that straddles
    two reads is yielded on its own, joined from them (a line longer than a read, from all of
    them). (Joining each read to the end of the one before copied every block: 60 MB of copies
    into fresh pages per 60 MB of JSON lines.) count_lines(data, end) counts the newlines in
    data[:end]."""
    count_lines = count_lines or (lambda data, end: data.count(b"\n", 0, end))
    # One read of the underlying stream each (read1): a buffered read() of a block filled the
    # stream's buffer and copied it into the result whenever a few bytes were left in the buffer
    # (the 4 bytes read to recognise the compression, then every read).
    read = getattr(stream, "read1", stream.read)
    tail: list[bytes] = []  # the start of a line no read has ended yet
    line = 1
    while True:
        data = read(block_bytes)
        if not data:
            break
        first = data.find(b"\n")
        if first < 0:
            tail.append(data)  # inside one long line
            continue
        start = 0
        if tail:
            joined = b"".join([*tail, data[:first + 1]])
            yield joined, 0, len(joined), line
            line += 1
            tail, start = [], first + 1
        end = data.rfind(b"\n") + 1
        if end > start:
            yield data, start, end, line
            line += count_lines(data, end) - (1 if start else 0)  # (data[:start] ends the joined line)
        if end < len(data):
            tail.append(data[end:])
    if tail:
        joined = b"".join(tail)
        yield joined, 0, len(joined), line


def byte_segments(stream, separator: bytes | None, cut) -> Iterator[tuple[bytes, bool, int]]:
    """text_segments on bytes, never decoded: (UTF-8 bytes, ends_document, offset in the stream).
    Documents are split on the separator's bytes (in valid UTF-8 a match always falls on character
    boundaries, so this is the split of the decoded text), long ones cut where cut(buffer, start,
    end) finds a safe cut (the byte form of streaming.safe_cut). The bytes are not validated here:
    the encoder does that, and the offset lets an error name the byte in the file."""
    pending = bytearray()
    offset = 0  # of pending[0] in the stream
    keep = len(separator) - 1 if separator else 0
    searched = 0  # pending[:searched] holds no safe cut
    while True:
        block = stream.read(BLOCK_BYTES)
        if not block:
            break
        start = max(0, len(pending) - keep)
        pending += block
        end = pending.find(separator, start) if separator is not None else -1
        if end >= 0:
            docs, pos = [], 0
            with memoryview(pending) as view:  # one copy per document
                while end >= 0:
                    docs.append(bytes(view[pos:end]))
                    pos = end + len(separator)
                    end = pending.find(separator, pos)
            del pending[:pos]
            for doc in docs:
                yield doc, True, offset
                offset += len(doc) + len(separator)
            searched = 0
        if len(pending) < CHUNK_CHARS:
            continue
        limit = len(pending) - keep  # never cut inside a separator that the next block completes
        c = cut(pending, max(0, searched - 2), limit) if limit > 0 else 0
        if c > 0:
            yield bytes(pending[:c]), False, offset
            offset += c
            del pending[:c]
            searched = 0
        else:
            searched = max(0, limit)
    if pending or separator is None:
        yield bytes(pending), True, offset


def _parquet_columns(source: Source, field: str, counter: list):
    """(the field's column of a record batch, the number of rows before it), batch after batch of a
    Parquet source; counter[0] grows with the row groups read."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{source.name}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    if source.is_stdin:
        raise ValueError("Parquet cannot be read from standard input (it needs to seek); give a file")
    with source.open() as f:
        try:
            pf = pq.ParquetFile(f)
        except Exception as e:  # pyarrow raises its own ArrowInvalid
            raise ValueError(f"{source.name}: not a Parquet file ({e})") from None
        names = pf.schema_arrow.names
        if field not in names:
            raise ValueError(f"{source.name}: no column {field!r} (columns: {', '.join(names[:8])}); choose one with --field")
        row = 0
        start = counter[0]
        total_rows = max(1, pf.metadata.num_rows)
        for g in range(pf.num_row_groups):
            for batch in pf.iter_batches(batch_size=4096, columns=[field], row_groups=[g]):
                column = batch.column(0)
                yield column, row
                row += len(column)
            counter[0] = start + (source.size or 0) * row // total_rows
    counter[0] = start + (source.size or 0)


def _column_strings(source: Source, field: str, column, row: int) -> list[str]:
    """The column's values as str; ValueError naming the first row whose value is not a string."""
    values = column.to_pylist()
    for k, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"{source.name}: row {row + k + 1}: column {field!r} is "
                             f"{'null' if value is None else type(value).__name__}, not a string")
    return values


def parquet_documents(source: Source, field: str, counter: list) -> Iterator[str]:
    for column, row in _parquet_columns(source, field, counter):
        yield from _column_strings(source, field, column, row)


def parquet_utf8_documents(source: Source, field: str, counter: list) -> Iterator[tuple[object, int]]:
    """(text, row number) of parquet_documents for an encoder that reads UTF-8 natively: a string
    column's texts as the UTF-8 bytes Arrow holds them (memoryviews of its data buffer, validated
    by the encoder), no str made (a str per text, and its UTF-8 again in the encoder, cost a tenth
    of encoding 60 MB of documents on one thread); other columns as str, through the same checks."""
    for column, row in _parquet_columns(source, field, counter):
        texts = _utf8_texts(column)
        for k, text in enumerate(texts if texts is not None else _column_strings(source, field, column, row)):
            yield text, row + k + 1


def _utf8_texts(column) -> list[memoryview] | None:
    """The texts of an Arrow string column without nulls as views of its UTF-8 data buffer (the
    column may be a slice: its offset into the buffers counts); None for any other column."""
    import numpy as np
    import pyarrow as pa

    kind = column.type
    if column.null_count or not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    _, offsets, data = column.buffers()
    width = np.int64 if pa.types.is_large_string(kind) else np.int32
    bounds = np.frombuffer(offsets, dtype=width)[column.offset:column.offset + len(column) + 1].tolist()
    view = memoryview(data if data is not None else b"")
    return [view[bounds[k]:bounds[k + 1]] for k in range(len(column))]


def segments(source: Source, *, fmt: str = "auto", field: str = "text", separator: str | None = None,
             errors: str = "strict", cut=None, counter: list | None = None) -> Iterator[tuple[str, bool]]:
    """(text, ends_document) segments of one source (see text_segments). counter[0] grows by the
    bytes read from storage."""
    counter = counter if counter is not None else [0]
    if format_of(source.name, fmt) == "parquet":
        for doc in parquet_documents(source, field, counter):
            yield from document_segments(doc, cut)
        return
    with opened_stream(source, fmt, counter) as (stream, kind):
        if kind == "jsonl":
            for doc in jsonl_documents(stream, source.name, field, errors):
                yield from document_segments(doc, cut)
        else:
            yield from text_segments(text_blocks(stream, source.name, errors), separator, cut)


@contextlib.contextmanager
def opened_stream(source: Source, fmt: str, counter: list):
    """(decompressed stream, "jsonl" or "text") of a text or JSON-lines source, closed afterwards
    (stdin stays open); damaged gzip/zstd data read inside becomes a ValueError naming the file (a
    plain file's OSError stays one)."""
    stream, compression, raw, head = open_decompressed(source, counter)
    name = source.name
    try:
        kind = format_of(name, fmt, b"" if compression else head)
        if kind == "parquet":
            raise ValueError(f"{name}: Parquet inside {compression} is not supported (Parquet "
                             "compresses its pages itself)")
        try:
            yield stream, kind
        except (OSError, EOFError) as e:
            if compression is None:
                raise
            raise ValueError(f"{name}: corrupt {compression} data ({e})") from None
        except Exception as e:
            if compression == "zstd" and type(e).__name__ == "ZstdError":
                raise ValueError(f"{name}: corrupt zstd data ({e})") from None
            raise
    finally:
        if not source.is_stdin:
            raw.close()


def native_units(source: Source, *, fmt: str = "auto", field: str = "text", separator: str | None = None,
                 errors: str = "strict", cut=None, byte_cut=None, counter: list | None = None,
                 block_bytes: int = BLOCK_BYTES, count_lines=None):
    """segments() for an encoder that reads bytes natively: yields ("jsonl", block, start, end, first
    line number) for JSON lines (jsonl_blocks: the lines are block[start:end]), ("seg", UTF-8 bytes,
    ends_document, offset) for text read strictly (byte_segments, cut with byte_cut), ("seg", UTF-8
    bytes or str, True, "row N") for each Parquet row (parquet_utf8_documents; decoded with
    replacement for errors="replace"), and ("seg", str, ends_document, None) for text read with
    errors="replace", as segments() yields them."""
    counter = counter if counter is not None else [0]
    if format_of(source.name, fmt) == "parquet":
        # each document whole, as a JSON record is (their UTF-8 as Arrow holds it; the row names an
        # invalid one)
        for text, row in parquet_utf8_documents(source, field, counter):
            if errors == "replace" and not isinstance(text, str):
                text = bytes(text).decode("utf-8", "replace")
            yield "seg", text, True, f"row {row}"
        return
    with opened_stream(source, fmt, counter) as (stream, kind):
        if kind == "jsonl":
            for block, start, end, line in jsonl_blocks(stream, block_bytes, count_lines):
                yield "jsonl", block, start, end, line
        elif errors == "strict" and byte_cut is not None:
            sep = separator.encode("utf-8", "surrogatepass") if separator is not None else None
            for data, ends, offset in byte_segments(stream, sep, byte_cut):
                yield "seg", data, ends, offset
        else:
            for text, ends in text_segments(text_blocks(stream, source.name, errors), separator, cut):
                yield "seg", text, ends, None


def utf8_error(name: str, data, offset: int | str) -> ValueError:
    """The error text_blocks raises for the first invalid byte of data (found at `offset` in the file;
    a str offset names a Parquet row, whose text has no place in the file's bytes)."""
    try:
        bytes(data).decode("utf-8")
    except UnicodeDecodeError as e:
        if isinstance(offset, str):
            return ValueError(f"{name}: {offset}: not UTF-8 ({e.reason} at byte {e.start} of its text)")
        return ValueError(f"{name}: not UTF-8 ({e.reason} at byte offset {offset + e.start}); "
                          "pass --errors replace (errors='replace') to replace invalid bytes")
    return ValueError(f"{name}: not UTF-8")
