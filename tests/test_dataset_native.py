"""The dataset encoder's native reader (cpp/jsonl.cc, cpp/safe_cut.cc, bindings/dataset.cpp) against
the Python readers it replaces, which stay the oracle: a JSON line the native reader takes gives the
text json.loads gives, a line it leaves goes through the Python reader (same ids, same errors), a
cut it finds is safe, and whole runs give the ids of the Python path."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenforge
from tokenforge import _core, dataset, dataset_readers

from conftest import MULTILINGUAL


@pytest.fixture(scope="module")
def cl100k():
    return tokenforge.get_encoding("cl100k_base")


def python_reader(line: bytes, field: str = "text", errors: str = "strict"):
    """What the Python reader makes of one line: [text], [] (blank) or the ValueError."""
    try:
        return list(dataset_readers.jsonl_documents([line], "f.jsonl", field, errors))
    except ValueError as e:
        return e


def check_line(line: bytes, field: str = "text"):
    native = _core.read_jsonl_record(line, field.encode())
    oracle = python_reader(line, field)
    if native is False:
        assert oracle == []
    elif native is not None:
        assert oracle == [native.decode("utf-8")], line
    return native, oracle


texts = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    ["", "\U0001F600", 'a"b\\c\n\t\x00\x1f\u2028', MULTILINGUAL[:200], "x" * 100])
# (No infinities: json.dumps writes them as Infinity, which is not JSON; the native reader leaves
# such a record to Python, which the test below would take for a missed fast path.)
values = st.recursive(st.none() | st.booleans() | st.integers(-10**30, 10**30)
                      | st.floats(allow_nan=False, allow_infinity=False)
                      | texts, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
                      max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(text=texts, others=st.dictionaries(texts, values, max_size=4), ascii=st.booleans(), first=st.booleans(),
       spaces=st.sampled_from(["", " ", "\t", " \r"]))
def test_every_ordinary_record_is_read_natively_as_json_loads_reads_it(text, others, ascii, first, spaces):
    record = {"text": text, **others} if first else {**others, "text": text}
    line = (spaces + json.dumps(record, ensure_ascii=ascii) + spaces).encode("utf-8")
    native, oracle = check_line(line)
    assert native == text.encode("utf-8")  # never left to Python: the fast path takes real records


@settings(max_examples=600, deadline=None)
@given(base=st.builds(lambda t, o: json.dumps({"text": t, **o}, ensure_ascii=False).encode("utf-8"),
                      texts, st.dictionaries(texts, values, max_size=3)),
       edits=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(
           [b'"', b"\\", b"\\u", b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"\xff", b"\xed\xa0\x80", b"\xc0\xaf",
            b"\xf4\x90\x80\x80", b"\xe4\xb8", b"{", b"}", b"[", b",", b":", b"NaN", b"1e", b"-", b"\x00", b"\x0c",
            b" ", b"\r", b"\xef\xbb\xbf", b"\\x", b'"text":', b'"text":1,'])), max_size=3),
       cut=st.booleans())
def test_mangled_lines_are_read_natively_only_as_the_python_reader_reads_them(base, edits, cut):
    line = bytearray(base)
    for pos, piece in edits:
        pos %= len(line) + 1
        if cut:
            line[pos:pos + len(piece)] = piece
        else:
            line[pos:pos] = piece
    check_line(bytes(line))


@pytest.mark.parametrize("special", ['"', "\\", "\n", "\x1f", "\x7f", "é", "中", "\U0001F600", "\u2028"])
def test_a_special_character_at_every_place_of_the_scan(special):
    """The string scanner takes 16 bytes at a time (SSE2), then 8, then one: a quote, a backslash, a
    control or non-ASCII character is found at every offset of those blocks, written as json.dumps
    writes it (escaped or raw), and as a raw byte that JSON forbids there (a control: Python
    refuses the line, the native reader leaves it)."""
    for before in range(0, 40):
        for after in (0, 1, 7, 16, 33):
            text = "a" * before + special + "b" * after
            for ascii in (True, False):
                line = json.dumps({"text": text}, ensure_ascii=ascii).encode("utf-8")
                assert check_line(line)[0] == text.encode("utf-8")
            raw = b'{"text": "' + b"a" * before + b"\x01" + b"b" * after + b'"}'
            native, oracle = check_line(raw)
            assert native is None and isinstance(oracle, ValueError)
            cut = b'{"text": "' + b"a" * before + special.encode("utf-8")[:-1] + b'"}'  # a character cut short
            if len(special.encode("utf-8")) > 1:
                assert check_line(cut)[0] is None


@pytest.mark.parametrize("line,native", [
    (b'{"text": "a\\ud800b"}', None),  # lone surrogate: json keeps it, the encoder replaces it
    (b'{"text": "a\\udc00"}', None),
    (b'{"text": "\\ud83d\\ude00"}', "\U0001F600".encode()),
    (b'{"text": "x", "text": "y"}', b"y"),  # the last member wins, as in json.loads
    (b'{"text": "x", "text": 2}', None),
    (b'{"te\\u0078t": "x"}', b"x"),  # a key with escapes is compared unescaped
    (b'{"text": "x", "\\ud800": 1}', None),  # a key with a lone surrogate: json decides
    (b'{"text": NaN}', None),
    (b'{"a": NaN, "text": "x"}', None),  # json accepts NaN
    (b'{"text": "x"} {}', None),
    (b'["text"]', None),
    (b'\xef\xbb\xbf{"text": "x"}', None),
    (b' \t\r\x0b\x0c ', False),
    (b'{"a": ' + b'[' * 70 + b']' * 70 + b', "text": "deep"}', None),  # deeper than the native limit
    (b'{"a": ' + b'[' * 30 + b'{"b": 1e-5}' + b']' * 30 + b', "text": "ok"}', b"ok"),
])
def test_edge_cases(line, native):
    got, oracle = check_line(line)
    assert got == native
    if native is None and line.startswith(b'{"text": "a\\u'):
        assert oracle == [json.loads(line)["text"]]


def test_the_native_reader_serves_the_byte_level_encodings(cl100k):
    assert dataset._Encoder(cl100k, 2).native_reader
    assert dataset._Encoder(tokenforge.get_encoding("gpt2"), 1).native_reader
    with pytest.raises(TypeError, match="_core.Encoder"):
        _core.encode_segments(object(), [b"a"], [-1])


def test_utf8_validation_matches_python():
    cases = [b"", b"abc", "é中😀".encode(), b"\xff", b"a\xc0\xafb", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe4\xb8",
             b"ok\xe4\xb8\xadok\xf0\x9f\x98", b"12345678\x80", "x".encode() * 17 + b"\xc3"]
    for data in cases:
        try:
            data.decode("utf-8")
            expected = len(data)
        except UnicodeDecodeError as e:
            expected = e.start
        assert _core.valid_utf8_prefix(data) == expected, data


@settings(max_examples=500, deadline=None)
@given(data=st.lists(st.sampled_from([b"a", b"\x80", b"\xbf", b"\xc2", b"\xdf", b"\xe0", b"\xa0", b"\xed", b"\x9f",
                                      b"\xef", b"\xf0", b"\x90", b"\xf4", b"\x8f", b"\xf5", b"\xff", b"\xc0", "é中😀".encode()]),
                     max_size=40).map(b"".join))
def test_utf8_validation_matches_python_on_arbitrary_bytes(data):
    try:
        data.decode("utf-8")
        expected = len(data)
    except UnicodeDecodeError as e:
        expected = e.start
    assert _core.valid_utf8_prefix(data) == expected
    assert _core.utf8_valid_prefix(data, 0, len(data)) == expected  # the trainer's entry point, the same code


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(list("ab Z\n\t.,，。中文١2'-_ \u3000\u00a0😀")), min_size=1, max_size=80))
def test_byte_cuts_are_safe(text):
    data = text.encode("utf-8")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        tok = tokenforge.get_encoding(name)
        c = _core.safe_cut_bytes(data, 0, len(data))
        if c:
            assert 0 < c < len(data)
            head = data[:c].decode("utf-8")  # on a character boundary
            assert tok.encode_ordinary(head) + tok.encode_ordinary(text[len(head):]) == tok.encode_ordinary(text), (name, text, c)


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.sampled_from(list("ab Z\n\t.,，。中文١2'-_ \u3000\u00a0😀\ufffd\u0085")), min_size=1, max_size=60),
       data=st.data())
def test_code_point_cuts_are_the_byte_cuts(text, data):
    # _core.safe_cut_str (where batches cut long texts) is safe_cut_bytes in code points.
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    byte = [len(text[:i].encode()) for i in range(len(text) + 1)]
    expected = _core.safe_cut_bytes(text.encode(), byte[start], byte[end])
    got = _core.safe_cut_str(text, start, end)
    assert byte[got] == expected if got else expected == 0


def write_jsonl_bytes(path, lines):
    path.write_bytes(b"".join(lines))


def both_paths(monkeypatch, tok, *args, **kwargs):
    """The ids of encode_dataset natively and with the native reader switched off."""
    kinds = set()
    real_segments, real_lines = _core.encode_segments, _core.encode_jsonl_lines
    with monkeypatch.context() as m:  # the native run really reads bytes natively
        m.setattr(_core, "encode_segments", lambda core, items, suffix: (
            kinds.update(type(t).__name__ for t in items), real_segments(core, items, suffix))[1])
        m.setattr(_core, "encode_jsonl_lines", lambda *a: (kinds.add("jsonl"), real_lines(*a))[1])
        meta = dataset.encode_dataset(tok, *args, **kwargs)
    assert kinds & {"bytes", "memoryview", "jsonl"}, kinds
    native = dataset.read_ids(kwargs.get("output", args[1]), verify=True).tolist()
    with monkeypatch.context() as m:
        m.setattr(dataset._Encoder, "encode", _python_encode)
        m.setattr(dataset, "native_units", _no_native_units)
        meta_py = dataset.encode_dataset(tok, *args, **dict(kwargs, overwrite=True))
        python = dataset.read_ids(kwargs.get("output", args[1]), verify=True).tolist()
    return native, python, meta, meta_py


def _python_encode(self, texts, suffix):
    if isinstance(texts, dataset._JsonlBlock):
        raise AssertionError("native block on the Python path")
    texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in texts]
    per_text = [self.tok.encode_ordinary(t) + ([s] if s >= 0 else []) for t, s in zip(texts, suffix)]
    return np.array([i for ids in per_text for i in ids], dtype=np.uint32), [len(ids) for ids in per_text]


def _no_native_units(source, byte_cut=None, block_bytes=None, count_lines=None, **options):
    return (("seg", text, ends, None) for text, ends in dataset_readers.segments(source, **options))


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=12),
       final_newline=st.booleans(), block=st.integers(1, 40))
def test_jsonl_blocks_are_the_stream_in_whole_lines(lines, final_newline, block):
    """jsonl_blocks yields reads as they came with the range of their whole lines, and each line
    that straddles reads on its own: together the stream, in order, every piece but the last ending
    a line, each numbered by the lines before it."""
    import io

    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    pieces = list(dataset_readers.jsonl_blocks(io.BytesIO(data), block, _core.count_newlines))
    assert b"".join(b[start:end] for b, start, end, _ in pieces) == data
    seen = 0
    for k, (b, start, end, first_line) in enumerate(pieces):
        assert end > start and (b[end - 1:end] == b"\n" or k == len(pieces) - 1)
        assert first_line == 1 + data[:seen].count(b"\n")
        seen += end - start


def test_jsonl_runs_equal_the_python_path(tmp_path, monkeypatch, cl100k, corpus_texts):
    """Records across block boundaries, escapes, lone surrogates (left to Python), blank lines, a
    record much larger than a block, several files, a validation split and shards."""
    monkeypatch.setattr(dataset, "BATCH_CHARS", 5000)
    docs = [corpus_texts["shakespeare"][i:i + 700 + i % 3000] for i in range(0, 150_000, 3100)]
    docs += [MULTILINGUAL, "a\ud800b", "\U0001F600 x", "\ud83d\ude00", "", "tab\tquote\"back\\slash", corpus_texts["stdlib"][:60_000]]
    lines = [json.dumps({"id": k, "text": d}, ensure_ascii=k % 2 == 0).encode("utf-8", "surrogatepass") + b"\n"
             for k, d in enumerate(docs)]
    lines.insert(3, b"\n")
    lines.insert(7, b"   \r\n")
    write_jsonl_bytes(tmp_path / "a.jsonl", lines)
    write_jsonl_bytes(tmp_path / "b.jsonl", lines[:5] + [lines[5].rstrip(b"\n")])  # no final newline
    out = tmp_path / "out.bin"
    native, python, meta, meta_py = both_paths(monkeypatch, cl100k, [tmp_path / "a.jsonl", tmp_path / "b.jsonl"], out,
                                               val_fraction=0.1)
    assert native == python and len(native) > 10_000
    assert meta["inputs"] == meta_py["inputs"] and meta["documents"] == meta_py["documents"] == len(docs) + 5
    assert meta["val"]["count"] == meta_py["val"]["count"] > 0
    shards = tmp_path / "shards"
    dataset.encode_dataset(cl100k, [tmp_path / "a.jsonl"], shards, shard_size=7000)
    assert len(dataset.open_shards(shards)) > 3
    got = dataset.read_shards(shards, verify=True).tolist()
    one = tmp_path / "one.bin"
    dataset.encode_dataset(cl100k, [tmp_path / "a.jsonl"], one)
    assert got == dataset.read_ids(one).tolist()


@pytest.mark.parametrize("large", [False, True])
def test_parquet_runs_equal_the_python_path(tmp_path, monkeypatch, cl100k, corpus_texts, large):
    """A Parquet string column goes to the encoder as the UTF-8 bytes Arrow holds (memoryviews, no
    str): the ids and documents of the Python path, over row groups and record batches (the
    column's offset into its buffers), empty texts, scripts and a long text; large_string too."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(dataset, "BATCH_CHARS", 5000)
    docs = [corpus_texts["shakespeare"][i:i + 300 + i % 2000] for i in range(0, 60_000, 1700)]
    docs += ["", MULTILINGUAL, "\U0001F600 x", "tab\tquote\"", corpus_texts["stdlib"][:40_000], ""]
    column = pa.array(docs, type=pa.large_string() if large else pa.string())
    pq.write_table(pa.table({"n": list(range(len(docs))), "text": column}), tmp_path / "d.parquet", row_group_size=9)
    native, python, meta, meta_py = both_paths(monkeypatch, cl100k, [tmp_path / "d.parquet"], tmp_path / "out.bin")
    assert native == python == [i for d in docs for i in cl100k.encode_ordinary(d) + [cl100k.eot_token]]
    assert meta["documents"] == meta_py["documents"] == len(docs)


@pytest.mark.parametrize("large", [False, True])
def test_utf8_texts_of_a_sliced_column(large):
    """A column that is a slice of a longer one starts at an offset into its buffers."""
    pa = pytest.importorskip("pyarrow")
    texts = ["", "ab", "é中", "\U0001F600", "x" * 40, "", "last"]
    column = pa.array(texts, type=pa.large_string() if large else pa.string())
    for start in range(len(texts)):
        for length in range(len(texts) - start + 1):
            got = dataset_readers._utf8_texts(column.slice(start, length))
            assert [bytes(v).decode("utf-8") for v in got] == texts[start:start + length]
    assert dataset_readers._utf8_texts(pa.array(["a", None])) is None
    assert dataset_readers._utf8_texts(pa.array([1, 2])) is None


def test_parquet_rows_that_are_not_utf8_null_or_text(tmp_path, cl100k):
    """The errors name the file and the row; errors="replace" replaces an invalid byte as a text
    file's reader does."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    raw = pa.array([b"good text", b"bad \xff byte", b"ok"], type=pa.binary()).view(pa.string())  # (Arrow does not check)
    pq.write_table(pa.table({"text": raw}), tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad.parquet: row 2: not UTF-8 \(invalid start byte at byte 4 of its text\)"):
        dataset.encode_dataset(cl100k, [tmp_path / "bad.parquet"], tmp_path / "out.bin")
    assert not (tmp_path / "out.bin").exists()
    dataset.encode_dataset(cl100k, [tmp_path / "bad.parquet"], tmp_path / "out.bin", errors="replace")
    expected = [i for d in ["good text", "bad \ufffd byte", "ok"] for i in cl100k.encode_ordinary(d) + [cl100k.eot_token]]
    assert dataset.read_ids(tmp_path / "out.bin").tolist() == expected
    for values, message in [(["a", None, "c"], "row 2: column 'text' is null"), ([1, 2], "row 1: column 'text' is int")]:
        pq.write_table(pa.table({"text": pa.array(values)}), tmp_path / "x.parquet")
        with pytest.raises(ValueError, match=f"x.parquet: {message}, not a string"):
            dataset.encode_dataset(cl100k, [tmp_path / "x.parquet"], tmp_path / "out2.bin")


@pytest.mark.parametrize("separator", [None, "\n<|sep|>\n", "END OF DOC"])
def test_text_runs_equal_the_python_path(tmp_path, monkeypatch, cl100k, corpus_texts, separator):
    """Text read as bytes and cut natively: the documents and ids of the Python path, across reads."""
    monkeypatch.setattr(dataset_readers, "BLOCK_BYTES", 4099)
    monkeypatch.setattr(dataset_readers, "CHUNK_CHARS", 5000)
    sep = separator or ""
    text = sep.join([corpus_texts["shakespeare"][:40_000], MULTILINGUAL * 20, "中文，" * 5000, "x" * 9000,
                     corpus_texts["stdlib"][:30_000], ""])
    (tmp_path / "a.txt").write_text(text, encoding="utf-8", newline="")
    native, python, meta, meta_py = both_paths(monkeypatch, cl100k, [tmp_path / "a.txt"], tmp_path / "out.bin",
                                               separator=separator)
    assert native == python
    docs = text.split(separator)[:-1] if separator else [text]  # no empty document after the last separator
    assert native == [i for d in docs for i in cl100k.encode_ordinary(d) + [cl100k.eot_token]]
    assert meta["documents"] == meta_py["documents"] == len(docs)


def test_errors_name_the_file_line_and_byte_as_before(tmp_path, monkeypatch, cl100k):
    monkeypatch.setattr(dataset, "BATCH_CHARS", 300)
    good = [json.dumps({"text": f"document {k} " * 20}).encode() + b"\n" for k in range(40)]
    for bad, message in [(b'{"text": "a\xffb"}\n', "line 31: not UTF-8"), (b'{"txt": "a"}\n', "line 31: no field 'text'"),
                         (b'{"text": 3}\n', "line 31: field 'text' is int"), (b"[1]\n", "line 31: expected a JSON object"),
                         (b'{"text": "a"\n', "line 31: not a JSON record")]:
        path = tmp_path / "bad.jsonl"
        write_jsonl_bytes(path, good[:30] + [bad] + good[30:])
        with pytest.raises(ValueError, match=f"bad.jsonl: {message}"):
            dataset.encode_dataset(cl100k, [path], tmp_path / "out.bin", overwrite=True)
        assert not (tmp_path / "out.bin").exists()
    monkeypatch.setattr(dataset_readers, "BLOCK_BYTES", 1000)
    data = ("hello world " * 300).encode()
    (tmp_path / "bad.txt").write_bytes(data[:2500] + b"\xe4\xb8x" + data)
    for path_kind in ("native", "python"):
        if path_kind == "python":
            monkeypatch.setattr(dataset, "native_units", _no_native_units)
        with pytest.raises(ValueError, match=r"bad.txt: not UTF-8 \(invalid continuation byte at byte offset 2500\)"):
            dataset.encode_dataset(cl100k, [tmp_path / "bad.txt"], tmp_path / "out.bin", overwrite=True)
