// Training: pre-token counting and the BPE merge loop (cpp/counter.h, cpp/trainer.h) behind
// `_core.PieceCounter` and `_core.BpeTrainer`. The heavy calls release the GIL; Python drives the
// loop (file chunks, progress) between them.
#include "common.h"
#include "counter.h"
#include "trainer.h"
#include "unicode.h"

namespace nb = nanobind;
using namespace tokenforge;
using namespace tokenforge::py;

namespace {

struct PyPieceCounter {
  PieceCounter counter;

  static std::vector<SpecialToken> specials_of(const std::vector<nb::bytes>& specials) {
    std::vector<SpecialToken> sp;
    for (size_t i = 0; i < specials.size(); ++i)
      sp.push_back({std::string(specials[i].c_str(), specials[i].size()), uint32_t(i)});
    return sp;
  }

  PyPieceCounter(nb::handle pattern, const std::vector<nb::bytes>& specials)
      : PyPieceCounter(split_pattern_of(pattern), specials_of(specials)) {}
  PyPieceCounter(const std::shared_ptr<const SplitRegex>& split, std::vector<SpecialToken> specials)
      : counter(split, std::move(specials)), can_split(split != nullptr) {}
  bool can_split;

  void require_split() const {
    if (!can_split) throw nb::value_error("this counter has no split pattern (it only sums tables)");
  }

  static const uint8_t* range_of(nb::bytes data, size_t start, size_t end) {
    if (start > end || end > data.size()) throw nb::value_error("invalid range");
    return reinterpret_cast<const uint8_t*>(data.c_str());
  }

  // Counts data[start:end] as one stretch of text.
  void count_bytes(nb::bytes data, size_t start, size_t end, size_t threads) {
    require_split();
    const uint8_t* p = range_of(data, start, end);
    nb::gil_scoped_release release;
    counter.count(p + start, end - start, threads);
  }

  void count_texts(nb::list texts, size_t threads) {
    require_split();
    std::vector<std::pair<const uint8_t*, size_t>> views;
    views.reserve(texts.size());
    for (nb::handle t : texts) {
      std::string_view v = utf8_of(t);
      views.emplace_back(bytes_of(v), v.size());
    }
    nb::gil_scoped_release release;
    counter.count_each(views, threads);
  }

  void add(const std::vector<std::pair<nb::bytes, uint64_t>>& pieces) {
    for (const auto& [b, c] : pieces) counter.add_piece(reinterpret_cast<const uint8_t*>(b.c_str()), b.size(), c);
  }

  // The last / first safe cut c with start < c < end, or 0 if there is none.
  size_t last_cut(nb::bytes data, size_t start, size_t end) const {
    const uint8_t* p = range_of(data, start, end);
    nb::gil_scoped_release release;
    size_t c = counter.last_cut(p + start, end - start);
    return c ? start + c : 0;
  }

  size_t first_cut(nb::bytes data, size_t start, size_t end) const {
    const uint8_t* p = range_of(data, start, end);
    nb::gil_scoped_release release;
    size_t c = counter.first_cut(p + start, end - start);
    return c ? start + c : 0;
  }

  size_t size() { return counter.counts().size(); }

  // The table as three flat arrays (distributed.PieceTable): the pieces back to back (uint8), where
  // each one ends (int64), its count (uint64). No Python object per piece.
  nb::tuple table() {
    auto* data = new std::vector<uint8_t>();
    auto* ends = new std::vector<int64_t>();
    auto* counts = new std::vector<uint64_t>();
    {
      nb::gil_scoped_release release;
      ends->reserve(counter.counts().size());
      counts->reserve(counter.counts().size());
      counter.counts().for_each([&](const uint8_t* p, size_t n, uint64_t c) {
        data->insert(data->end(), p, p + n);
        ends->push_back(int64_t(data->size()));
        counts->push_back(c);
      });
    }
    return nb::make_tuple(numpy_of(data), numpy_of(ends), numpy_of(counts));
  }

  // Adds a table in table()'s layout (counts of pieces already present are summed).
  void add_table(nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig> data,
                 nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig> ends,
                 nb::ndarray<const uint64_t, nb::ndim<1>, nb::c_contig> counts) {
    size_t n = ends.shape(0);
    if (counts.shape(0) != n) throw nb::value_error("a table needs one end offset per count");
    const uint8_t* d = data.data();
    const int64_t* e = ends.data();
    const uint64_t* c = counts.data();
    int64_t prev = 0;
    for (size_t i = 0; i < n; ++i) {
      if (e[i] < prev || size_t(e[i]) > data.shape(0)) throw nb::value_error("a table's end offsets must be sorted and within its data");
      prev = e[i];
    }
    nb::gil_scoped_release release;
    prev = 0;
    for (size_t i = 0; i < n; ++i) {
      if (c[i]) counter.add_piece(d + prev, size_t(e[i] - prev), c[i]);
      prev = e[i];
    }
  }

  nb::list items() {
    nb::list out;
    counter.counts().for_each([&](const uint8_t* p, size_t n, uint64_t c) {
      out.append(nb::make_tuple(nb::bytes(reinterpret_cast<const char*>(p), n), c));
    });
    return out;
  }
};

struct PyBpeTrainer {
  BpeTrainer trainer;

  PyBpeTrainer(size_t max_new_tokens, uint64_t min_frequency) : trainer(max_new_tokens, min_frequency) {}

  // Takes the counter's words and empties it (its memory is freed before the merge loop).
  void add_counts(PyPieceCounter& c) {
    nb::gil_scoped_release release;
    trainer.add_words(c.counter.counts());
    c.counter.counts().clear();
  }

  void add_words(const std::vector<std::pair<nb::bytes, uint64_t>>& words) {
    for (const auto& [b, c] : words) trainer.add_word(reinterpret_cast<const uint8_t*>(b.c_str()), b.size(), c);
  }

  void start() {
    nb::gil_scoped_release release;
    trainer.start();
  }

  size_t step(size_t n) {
    nb::gil_scoped_release release;
    return trainer.step(n);
  }

  nb::list merges() const {
    nb::list out;
    for (const auto& m : trainer.merges()) out.append(nb::make_tuple(m.left, m.right, m.merged, m.is_new));
    return out;
  }

  nb::list tokens() const {
    nb::list out;
    for (const auto& t : trainer.tokens()) out.append(nb::bytes(t.data(), t.size()));
    return out;
  }
};

size_t utf8_valid_prefix_py(nb::bytes data, size_t start, size_t length) {
  if (start > length || length > data.size()) throw nb::value_error("invalid range");
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.c_str());
  nb::gil_scoped_release release;
  return start + utf8_valid_prefix(p + start, length - start);
}

}  // namespace

void bind_training(nb::module_& m) {
  nb::class_<PyPieceCounter>(m, "PieceCounter")
      .def(nb::init<nb::handle, const std::vector<nb::bytes>&>(), nb::arg("pattern").none(), nb::arg("specials"))
      .def("count_bytes", &PyPieceCounter::count_bytes, nb::arg("data"), nb::arg("start"), nb::arg("end"),
           nb::arg("threads"))
      .def("count_texts", &PyPieceCounter::count_texts, nb::arg("texts"), nb::arg("threads"))
      .def("add", &PyPieceCounter::add, nb::arg("pieces"))
      .def("last_cut", &PyPieceCounter::last_cut, nb::arg("data"), nb::arg("start"), nb::arg("end"))
      .def("first_cut", &PyPieceCounter::first_cut, nb::arg("data"), nb::arg("start"), nb::arg("end"))
      .def("items", &PyPieceCounter::items)
      .def("table", &PyPieceCounter::table)
      .def("add_table", &PyPieceCounter::add_table, nb::arg("data"), nb::arg("ends"), nb::arg("counts"))
      .def("__len__", &PyPieceCounter::size);
  nb::class_<PyBpeTrainer>(m, "BpeTrainer")
      .def(nb::init<size_t, uint64_t>(), nb::arg("max_new_tokens"), nb::arg("min_frequency"))
      .def("add_counts", &PyBpeTrainer::add_counts, nb::arg("counter"))
      .def("add_words", &PyBpeTrainer::add_words, nb::arg("words"))
      .def("start", &PyBpeTrainer::start)
      .def("step", &PyBpeTrainer::step, nb::arg("n"))
      .def_prop_ro("done", [](const PyBpeTrainer& t) { return t.trainer.done(); })
      .def_prop_ro("num_words", [](const PyBpeTrainer& t) { return t.trainer.num_words(); })
      .def_prop_ro("num_pairs", [](const PyBpeTrainer& t) { return t.trainer.num_pairs(); })
      .def_prop_ro("heap_size", [](const PyBpeTrainer& t) { return t.trainer.heap_size(); })
      .def("merges", &PyBpeTrainer::merges)
      .def("tokens", &PyBpeTrainer::tokens);
  m.def("utf8_valid_prefix", &utf8_valid_prefix_py, nb::arg("data"), nb::arg("start"), nb::arg("length"));
}