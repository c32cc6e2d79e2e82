// `_core.SplitSequence`: the pieces of a Sequence of isolated Split pre-tokenizers in one native
// call (cpp/split_sequence.h); `_core.Encoder.encode_split` encodes them without Python objects.
#include "common.h"
#include "split_sequence.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace {

struct PySplitSequence {
  std::shared_ptr<const SplitSequence> seq;

  explicit PySplitSequence(const std::vector<std::string>& patterns) {
    if (patterns.empty()) throw nb::value_error("a split sequence needs at least one pattern");
    std::vector<std::shared_ptr<const SplitRegex>> stages;
    for (const std::string& p : patterns) stages.push_back(compile_split_pattern(p));  // may raise UnsupportedPattern
    seq = std::make_shared<const SplitSequence>(std::move(stages));
  }

  std::vector<std::pair<size_t, size_t>> byte_pieces(std::string_view v) const {
    std::vector<std::pair<size_t, size_t>> out;
    seq->byte_pieces(bytes_of(v), v.size(), out);
    return out;
  }

  // Code point offsets of each piece (as _core.Pattern.spans gives them).
  std::vector<std::pair<size_t, size_t>> spans(nb::handle text) const {
    CallUtf8 utf8(text);
    std::string_view v = utf8.view;
    std::vector<std::pair<size_t, size_t>> out;
    {
      nb::gil_scoped_release release;
      out = byte_pieces(v);
      to_code_points(v, out);
    }
    return out;
  }

  // The pieces as UTF-8 bytes (Encoder.encode_split encodes them without making these).
  nb::list pieces(nb::handle text) const {
    std::string_view v = utf8_of(text);
    std::vector<std::pair<size_t, size_t>> spans;
    {
      nb::gil_scoped_release release;
      spans = byte_pieces(v);
    }
    PyObject* list = PyList_New(Py_ssize_t(spans.size()));
    if (!list) throw nb::python_error();
    nb::list out = nb::steal<nb::list>(list);
    for (size_t i = 0; i < spans.size(); ++i) {
      PyObject* b = PyBytes_FromStringAndSize(v.data() + spans[i].first, Py_ssize_t(spans[i].second - spans[i].first));
      if (!b) throw nb::python_error();
      PyList_SET_ITEM(list, Py_ssize_t(i), b);
    }
    return out;
  }
};

}  // namespace

namespace tokenforge::py {
const SplitSequence& split_sequence_of(nb::handle seq) {
  PySplitSequence* p = nullptr;
  if (!nb::try_cast(seq, p) || !p) throw nb::type_error("expected a _core.SplitSequence");
  return *p->seq;
}
}  // namespace tokenforge::py

void bind_split_sequence(nb::module_& m) {
  nb::class_<PySplitSequence>(m, "SplitSequence")
      .def(nb::init<const std::vector<std::string>&>(), nb::arg("patterns"))
      .def("spans", &PySplitSequence::spans, nb::arg("text"))
      .def("pieces", &PySplitSequence::pieces, nb::arg("text"));
}
