// The dataset encoder's native reader (`_core.encode_jsonl_lines`, `_core.encode_segments`,
// `_core.safe_cut_bytes`): corpus bytes in, ids out, with no Python str made for a document and
// the GIL released while records are parsed and encoded.
#include <cstring>

#include "common.h"
#include "encoder.h"
#include "jsonl.h"
#include "safe_cut.h"
#include "unicode.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace {

// The C++ encoder behind a `_core.Encoder` (encoder.cpp's accessor), which must split text itself.
const Encoder& splitting_encoder_of(nb::handle core) {
  const Encoder& enc = encoder_of(core);
  if (!enc.can_split()) throw nb::value_error("this encoder has no native split pattern");
  return enc;
}

// A read-only view of a bytes-like object, held for the call.
struct Bytes {
  Py_buffer view{};
  explicit Bytes(nb::handle obj) {
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_SIMPLE) != 0) throw nb::python_error();
  }
  ~Bytes() { PyBuffer_Release(&view); }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;
  const uint8_t* data() const { return static_cast<const uint8_t*>(view.buf); }
  size_t size() const { return size_t(view.len); }
};

// (ids, counts, stop): the JSON-lines records of block[start:end] encoded one after another, each
// followed by `eot` if it is >= 0, counts[k] ids for the k-th record (blank lines are skipped);
// stops at the first line that the native reader leaves to the Python reader (stop = the offset
// where that line starts) or at `end` (stop = end).
nb::tuple encode_jsonl_lines(nb::handle core, nb::handle block, size_t start, size_t end, nb::bytes field,
                             int64_t eot) {
  const Encoder& enc = splitting_encoder_of(core);
  Bytes buf(block);
  std::string_view name(field.c_str(), field.size());
  auto ids = std::make_unique<std::vector<uint32_t>>();
  std::vector<size_t> counts;
  size_t n = std::min(end, buf.size());
  size_t stop = std::min(start, n);
  {
    nb::gil_scoped_release release;
    const uint8_t* s = buf.data();
    // Room for one id per two bytes of JSON (a third was too little for some blocks: the vector then
    // grew and copied itself into fresh pages; pages never written are never given memory)
    ids->reserve((n - stop) / 2 + 16);
    // (kept by the thread: the dataset's encoding threads live as long as the run, and a fresh
    // string per block faulted in new pages for its longest record every time)
    thread_local std::string text;
    while (stop < n) {
      const void* nl = std::memchr(s + stop, '\n', n - stop);
      size_t line_end = nl ? size_t(static_cast<const uint8_t*>(nl) - s) : n;
      RecordKind kind = read_jsonl_record(s + stop, line_end - stop, name, text);
      if (kind == RecordKind::kOther) break;
      if (kind == RecordKind::kText) {
        size_t before = ids->size();
        enc.encode_ordinary(reinterpret_cast<const uint8_t*>(text.data()), text.size(), *ids);
        if (eot >= 0) ids->push_back(uint32_t(eot));
        counts.push_back(ids->size() - before);
      }
      stop = nl ? line_end + 1 : n;
    }
    if (text.capacity() > (size_t(1) << 24)) std::string().swap(text);
  }
  return nb::make_tuple(numpy_of(ids.release()), counts, stop);
}

// (ids, counts, bad): text k (bytes of UTF-8, or str) encoded, then suffix[k] if it is >= 0;
// bad is the index of the first bytes item that is not valid UTF-8 (the items from it on are not
// encoded), or -1. A str with a lone surrogate raises UnicodeEncodeError (as the encoder does).
nb::tuple encode_segments(nb::handle core, nb::list items, const std::vector<int64_t>& suffix) {
  const Encoder& enc = splitting_encoder_of(core);
  if (suffix.size() != items.size()) throw nb::value_error("one suffix per item");
  std::vector<std::unique_ptr<Bytes>> held;
  std::vector<std::string_view> views;
  std::vector<char> check;  // bytes items are validated (str is valid UTF-8 already)
  views.reserve(items.size());
  for (nb::handle item : items) {
    if (PyUnicode_Check(item.ptr())) {
      views.push_back(utf8_of(item));
      check.push_back(0);
    } else {
      held.push_back(std::make_unique<Bytes>(item));
      views.emplace_back(reinterpret_cast<const char*>(held.back()->data()), held.back()->size());
      check.push_back(1);
    }
  }
  auto ids = std::make_unique<std::vector<uint32_t>>();
  std::vector<size_t> counts;
  int64_t bad = -1;
  {
    nb::gil_scoped_release release;
    size_t total = 0;
    for (auto v : views) total += v.size();
    ids->reserve(total / 3 + 16);
    for (size_t k = 0; k < views.size(); ++k) {
      const uint8_t* p = bytes_of(views[k]);
      if (check[k] && utf8_valid_prefix(p, views[k].size()) != views[k].size()) {
        bad = int64_t(k);
        break;
      }
      size_t before = ids->size();
      enc.encode_ordinary(p, views[k].size(), *ids);
      if (suffix[k] >= 0) ids->push_back(uint32_t(suffix[k]));
      counts.push_back(ids->size() - before);
    }
  }
  return nb::make_tuple(numpy_of(ids.release()), counts, bad);
}

size_t safe_cut(nb::handle buffer, size_t start, size_t end) {
  Bytes buf(buffer);
  end = std::min(end, buf.size());
  return start < end ? safe_cut_bytes(buf.data(), start, end) : 0;
}

// The largest safe cut c with start <= c < end in the code points of a str (0 if none): where a
// batch cuts a long text (streaming.cut_long_texts). Special tokens are not considered.
size_t safe_cut_str(nb::handle text, size_t start, size_t end) {
  PyObject* s = text.ptr();
  if (!PyUnicode_Check(s)) throw nb::type_error("safe_cut_str needs a str");
#if PY_VERSION_HEX < 0x030C0000
  if (PyUnicode_READY(s) < 0) throw nb::python_error();
#endif
  struct Str {
    int kind;
    const void* data;
  } str{PyUnicode_KIND(s), PyUnicode_DATA(s)};
  end = std::min(end, size_t(PyUnicode_GET_LENGTH(s)));
  if (start >= end) return 0;
  auto cp = [](const void* t, size_t i) -> uint32_t {
    const Str& x = *static_cast<const Str*>(t);
    return PyUnicode_READ(x.kind, x.data, i);
  };
  return safe_cut_code_points(cp, &str, start, end);
}

// The newlines in buffer[:end] (the reader numbers the lines of JSON blocks with it).
size_t count_newlines(nb::handle buffer, size_t end) {
  Bytes buf(buffer);
  const uint8_t* s = buf.data();
  size_t n = std::min(end, buf.size()), count = 0;
  for (const void* p = s; (p = std::memchr(p, '\n', n - size_t(static_cast<const uint8_t*>(p) - s)));) {
    ++count;
    p = static_cast<const uint8_t*>(p) + 1;
  }
  return count;
}

size_t valid_prefix(nb::handle buffer) {
  Bytes buf(buffer);
  return utf8_valid_prefix(buf.data(), buf.size());
}

nb::object read_record(nb::handle line, nb::bytes field) {
  Bytes buf(line);
  std::string text;
  RecordKind kind = read_jsonl_record(buf.data(), buf.size(), std::string_view(field.c_str(), field.size()), text);
  if (kind == RecordKind::kBlank) return nb::bool_(false);
  if (kind == RecordKind::kOther) return nb::none();
  return nb::bytes(text.data(), text.size());
}

}  // namespace

void bind_dataset(nb::module_& m) {
  m.def("encode_jsonl_lines", &encode_jsonl_lines, nb::arg("encoder"), nb::arg("block"), nb::arg("start"),
        nb::arg("end"), nb::arg("field"), nb::arg("eot"));
  m.def("count_newlines", &count_newlines, nb::arg("buffer"), nb::arg("end"));
  m.def("encode_segments", &encode_segments, nb::arg("encoder"), nb::arg("items"), nb::arg("suffix"));
  m.def("safe_cut_bytes", &safe_cut, nb::arg("buffer"), nb::arg("start"), nb::arg("end"));
  m.def("safe_cut_str", &safe_cut_str, nb::arg("text"), nb::arg("start"), nb::arg("end"));
  m.def("valid_utf8_prefix", &valid_prefix, nb::arg("buffer"));
  // For the tests: a line's text field as UTF-8 bytes, False for a blank line, None when the
  // Python reader must decide.
  m.def("read_jsonl_record", &read_record, nb::arg("line"), nb::arg("field"));
}
