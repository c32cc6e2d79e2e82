// `_core.SplitSequence`: the pieces of a Sequence of Split pre-tokenizers with Hugging Face's
// "isolated" behavior (DeepSeek V3's three splits, for one), in one native call.
//
// Each stage splits every piece of the stage before it as a text of its own (so `^`, `$` and
// lookarounds see the piece's ends, as in tokenizers): the pattern's matches and the gaps between
// them each become a piece, empty pieces are dropped.
#include "common.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace {

struct SplitSequence {
  std::vector<std::shared_ptr<const SplitRegex>> stages;

  explicit SplitSequence(const std::vector<std::string>& patterns) {
    if (patterns.empty()) throw nb::value_error("a split sequence needs at least one pattern");
    for (const std::string& p : patterns) stages.push_back(compile_split_pattern(p));  // may raise UnsupportedPattern
  }

  // Byte offsets of the final pieces of text v.
  std::vector<std::pair<size_t, size_t>> byte_pieces(std::string_view v) const {
    const uint8_t* s = bytes_of(v);
    std::vector<std::pair<size_t, size_t>> pieces, next;
    if (!v.empty()) pieces.emplace_back(0, v.size());
    for (const auto& re : stages) {
      next.clear();
      next.reserve(pieces.size() * 2);
      for (auto [b, e] : pieces) {
        size_t prev = b;
        re->for_each_match(s + b, e - b, [&](size_t mb, size_t me) {
          mb += b;
          me += b;
          if (prev < mb) next.emplace_back(prev, mb);
          if (mb < me) next.emplace_back(mb, me);
          prev = me;
        });
        if (prev < e) next.emplace_back(prev, e);
      }
      pieces.swap(next);
    }
    return pieces;
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

  // The pieces as UTF-8 bytes, ready for Encoder.encode_pieces.
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

void bind_split_sequence(nb::module_& m) {
  nb::class_<SplitSequence>(m, "SplitSequence")
      .def(nb::init<const std::vector<std::string>&>(), nb::arg("patterns"))
      .def("spans", &SplitSequence::spans, nb::arg("text"))
      .def("pieces", &SplitSequence::pieces, nb::arg("text"));
}
