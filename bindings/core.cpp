// The one file that knows about Python: converts str/bytes/lists at the seam and releases the GIL
// around the native work. Everything else lives in cpp/ and knows nothing of Python.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <unordered_map>
#include <string_view>
#include <thread>

#include "encoder.h"
#include "char_bpe.h"
#include "pre_split.h"
#include "wordpiece.h"

namespace nb = nanobind;
using namespace tokenforge;

namespace {

// The UTF-8 of a str, cached inside the str object by CPython. Raises UnicodeEncodeError for lone
// surrogates; the Python layer catches that and retries with them replaced, as tiktoken does.
std::string_view utf8_of(nb::handle text) {
  if (!PyUnicode_Check(text.ptr())) throw nb::type_error("text must be a str");
  Py_ssize_t size;
  const char* p = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (!p) throw nb::python_error();
  return {p, size_t(size)};
}

const uint8_t* bytes_of(std::string_view v) { return reinterpret_cast<const uint8_t*>(v.data()); }

std::vector<char> mask_of(const Encoder& enc, nb::bytes mask) {
  std::vector<char> m(enc.specials().size(), 0);
  const char* p = mask.c_str();
  for (size_t i = 0; i < m.size() && i < mask.size(); ++i) m[i] = p[i];
  return m;
}

bool any(const std::vector<char>& mask) {
  for (char c : mask)
    if (c) return true;
  return false;
}

// A list of Python ints (one allocation per id; the encoder's hot path uses IntCache below).
template <class T>
nb::list to_list(const std::vector<T>& ids) {
  PyObject* list = PyList_New(Py_ssize_t(ids.size()));
  if (!list) throw nb::python_error();
  for (size_t i = 0; i < ids.size(); ++i) PyList_SET_ITEM(list, Py_ssize_t(i), PyLong_FromUnsignedLongLong(ids[i]));
  return nb::steal<nb::list>(list);
}

// Python ints for every id, made once: building a result list is then a reference-count bump per
// id instead of an allocation (a third of the time of encoding English text otherwise).
struct IntCache {
  std::vector<PyObject*> ints;
  explicit IntCache(uint32_t size) {
    ints.reserve(size);
    for (uint32_t i = 0; i < size; ++i) ints.push_back(PyLong_FromUnsignedLong(i));
  }
  ~IntCache() {
    if (Py_IsInitialized())
      for (PyObject* o : ints) Py_XDECREF(o);
  }
  nb::list to_list(const std::vector<uint32_t>& ids) const {
    PyObject* list = PyList_New(Py_ssize_t(ids.size()));
    if (!list) throw nb::python_error();
    for (size_t i = 0; i < ids.size(); ++i) {
      PyObject* o = ids[i] < ints.size() ? ints[ids[i]] : nullptr;
      if (o)
        Py_INCREF(o);
      else
        o = PyLong_FromUnsignedLong(ids[i]);
      PyList_SET_ITEM(list, Py_ssize_t(i), o);
    }
    return nb::steal<nb::list>(list);
  }
};

// Token ids from any sequence of ints; a negative or too-large id raises ValueError naming it.
std::vector<uint32_t> ids_of(nb::handle seq) {
  PyObject* fast = PySequence_Fast(seq.ptr(), "token ids must be a sequence of ints");
  if (!fast) throw nb::python_error();
  nb::object guard = nb::steal(fast);
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  std::vector<uint32_t> ids(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyBool_Check(items[i]) || !PyIndex_Check(items[i]))
      throw nb::type_error(("token ids must be ints, got " + std::string(Py_TYPE(items[i])->tp_name)).c_str());
    long long v = PyLong_AsLongLong(items[i]);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      throw nb::value_error("token id is out of range");
    }
    if (v < 0 || v > 0xFFFFFFFFll) throw nb::value_error(("invalid token id " + std::to_string(v)).c_str());
    ids[size_t(i)] = uint32_t(v);
  }
  return ids;
}

// Runs f(i) for i in [0, n) on up to `threads` threads (the caller's included).
template <class F>
void parallel_for(size_t n, size_t threads, F f) {
  threads = std::max<size_t>(1, std::min(threads, n));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

struct PyEncoder {
  std::unique_ptr<Encoder> enc;
  std::unique_ptr<IntCache> ints;

  PyEncoder(const std::vector<std::pair<uint32_t, nb::bytes>>& tokens,
            const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>& merges, bool whole_piece_lookup,
            int pattern, const std::vector<std::pair<nb::bytes, uint32_t>>& specials) {
    std::vector<std::pair<uint32_t, std::string>> toks;
    toks.reserve(tokens.size());
    for (const auto& [id, b] : tokens) toks.emplace_back(id, std::string(b.c_str(), b.size()));
    std::vector<MergeRule> rules;
    rules.reserve(merges.size());
    for (const auto& [l, r, m] : merges) rules.push_back({l, r, m});
    std::string error;
    auto model = BytePairModel::create(toks, rules, whole_piece_lookup, &error);
    if (!model) throw nb::value_error(error.c_str());
    std::vector<SpecialToken> sp;
    for (const auto& [b, id] : specials) sp.push_back({std::string(b.c_str(), b.size()), id});
    auto decoder = std::move(toks);
    for (const auto& s : sp) decoder.emplace_back(s.id, s.bytes);
    PieceScanner scanner = pattern < 0 ? nullptr : scanner_for(SplitPattern(pattern));
    uint32_t max_id = 0;
    for (const auto& t : decoder) max_id = std::max(max_id, t.first);
    size_t num_tokens = decoder.size();
    enc = std::make_unique<Encoder>(std::move(model), scanner, std::move(sp), std::move(decoder));
    // Cached ints for the dense range of ids only: a few huge ids must not cost an int per id below
    // them (to_list makes ids beyond the cache on demand).
    size_t cached = std::min(size_t(max_id) + 1, Encoder::dense_limit(num_tokens));
    ints = std::make_unique<IntCache>(uint32_t(cached));
  }

  nb::list to_list(const std::vector<uint32_t>& ids) const { return ints->to_list(ids); }

  void require_scanner() const {
    if (!enc->can_split()) throw nb::value_error("this encoder has no native split pattern");
  }

  void encode_into(std::string_view text, const std::vector<char>& mask, std::vector<uint32_t>& out) const {
    if (any(mask))
      enc->encode(bytes_of(text), text.size(), mask, out);
    else
      enc->encode_ordinary(bytes_of(text), text.size(), out);
  }

  std::vector<uint32_t> encode_vec(nb::handle text, nb::bytes allowed) const {
    require_scanner();
    std::string_view v = utf8_of(text);
    std::vector<char> mask = mask_of(*enc, allowed);
    std::vector<uint32_t> out;
    {
      nb::gil_scoped_release release;
      out.reserve(v.size() / 4 + 1);
      encode_into(v, mask, out);
    }
    return out;
  }

  nb::list encode(nb::handle text, nb::bytes allowed) const { return to_list(encode_vec(text, allowed)); }

  nb::ndarray<nb::numpy, uint32_t> encode_to_numpy(nb::handle text, nb::bytes allowed) const {
    auto* ids = new std::vector<uint32_t>(encode_vec(text, allowed));
    nb::capsule owner(ids, [](void* p) noexcept { delete static_cast<std::vector<uint32_t>*>(p); });
    size_t shape[1] = {ids->size()};
    return nb::ndarray<nb::numpy, uint32_t>(ids->data(), 1, shape, owner);
  }

  nb::list encode_batch(nb::list texts, nb::bytes allowed, size_t num_threads) const {
    require_scanner();
    std::vector<std::string_view> views;
    views.reserve(texts.size());
    for (nb::handle t : texts) views.push_back(utf8_of(t));
    std::vector<char> mask = mask_of(*enc, allowed);
    std::vector<std::vector<uint32_t>> results(views.size());
    {
      nb::gil_scoped_release release;
      parallel_for(views.size(), num_threads, [&](size_t i) {
        std::vector<uint32_t> ids;  // built locally: neighbouring results[] share cache lines
        encode_into(views[i], mask, ids);
        results[i] = std::move(ids);
      });
    }
    nb::list out;
    for (const auto& r : results) out.append(to_list(r));
    return out;
  }

  // Many texts encoded in parallel into one flat array (the dataset path): text k's ids, then
  // suffix[k] if it is >= 0. Returns (ids, number of ids per text).
  nb::tuple encode_ordinary_batch_flat(nb::list texts, const std::vector<int64_t>& suffix, size_t num_threads) const {
    require_scanner();
    if (suffix.size() != texts.size()) throw nb::value_error("one suffix per text");
    std::vector<std::string_view> views;
    views.reserve(texts.size());
    for (nb::handle t : texts) views.push_back(utf8_of(t));
    std::vector<std::vector<uint32_t>> results(views.size());
    auto* flat = new std::vector<uint32_t>();
    std::vector<size_t> counts(views.size());
    {
      nb::gil_scoped_release release;
      parallel_for(views.size(), num_threads, [&](size_t i) {
        std::vector<uint32_t> ids;  // built locally: neighbouring results[] share cache lines
        enc->encode_ordinary(bytes_of(views[i]), views[i].size(), ids);
        if (suffix[i] >= 0) ids.push_back(uint32_t(suffix[i]));
        results[i] = std::move(ids);
      });
      size_t total = 0;
      for (size_t i = 0; i < results.size(); ++i) total += (counts[i] = results[i].size());
      flat->reserve(total);
      for (auto& r : results) flat->insert(flat->end(), r.begin(), r.end());
    }
    nb::capsule owner(flat, [](void* p) noexcept { delete static_cast<std::vector<uint32_t>*>(p); });
    size_t shape[1] = {flat->size()};
    return nb::make_tuple(nb::ndarray<nb::numpy, uint32_t>(flat->data(), 1, shape, owner), counts);
  }

  size_t count(nb::handle text, nb::bytes allowed) const { return encode_vec(text, allowed).size(); }

  nb::list encode_pieces(const std::vector<nb::bytes>& pieces) const {
    std::vector<uint32_t> out;
    for (const auto& p : pieces) enc->encode_piece(reinterpret_cast<const uint8_t*>(p.c_str()), p.size(), out);
    return to_list(out);
  }

  nb::list split(nb::handle text) const {
    require_scanner();
    std::string_view v = utf8_of(text);
    std::vector<size_t> ends;
    enc->split(bytes_of(v), v.size(), ends);
    nb::list out;
    size_t begin = 0;
    for (size_t e : ends) {
      out.append(nb::bytes(v.data() + begin, e - begin));
      begin = e;
    }
    return out;
  }

  // Index of the first special token selected by `mask` found in text, or -1.
  int find_special(nb::handle text, nb::bytes mask) const {
    std::string_view v = utf8_of(text);
    std::vector<char> m = mask_of(*enc, mask);
    SpecialMatcher::Match match;
    {
      nb::gil_scoped_release release;
      match = enc->find_special(bytes_of(v), v.size(), m);
    }
    return match.index;
  }

  nb::bytes decode_bytes(nb::handle seq) const {
    std::vector<uint32_t> ids = ids_of(seq);
    std::string out;
    size_t bad = 0;
    bool ok;
    {
      nb::gil_scoped_release release;
      ok = enc->decode(ids.data(), ids.size(), out, &bad);
    }
    if (!ok) throw nb::value_error(("invalid token id " + std::to_string(ids[bad]) + " (not in the vocabulary)").c_str());
    return nb::bytes(out.data(), out.size());
  }

  nb::list decode_tokens_bytes(nb::handle seq) const {
    std::vector<uint32_t> ids = ids_of(seq);
    nb::list out;
    for (uint32_t id : ids) {
      const char* p;
      size_t len;
      if (!enc->token_bytes(id, &p, &len))
        throw nb::value_error(("invalid token id " + std::to_string(id) + " (not in the vocabulary)").c_str());
      out.append(nb::bytes(p, len));
    }
    return out;
  }
};

}  // namespace

void register_training(nb::module_& m);  // defined in the training section at the end
void bind_sentencepiece(nb::module_& m);  // defined in the SentencePiece section at the end
// Defined in the section "Other tokenizer families" at the end of this file.
void bind_other_models(nb::module_& m);

NB_MODULE(_core, m) {
  m.doc() = "tokenforge's native core: split patterns, byte-pair encoding, special tokens.";
  nb::class_<PyEncoder>(m, "Encoder")
      .def(nb::init<const std::vector<std::pair<uint32_t, nb::bytes>>&,
                    const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>&, bool, int,
                    const std::vector<std::pair<nb::bytes, uint32_t>>&>(),
           nb::arg("tokens"), nb::arg("merges"), nb::arg("whole_piece_lookup"), nb::arg("pattern"),
           nb::arg("specials"))
      .def("encode", &PyEncoder::encode, nb::arg("text"), nb::arg("allowed"))
      .def("encode_to_numpy", &PyEncoder::encode_to_numpy, nb::arg("text"), nb::arg("allowed"))
      .def("encode_batch", &PyEncoder::encode_batch, nb::arg("texts"), nb::arg("allowed"), nb::arg("num_threads"))
      .def("encode_ordinary_batch_flat", &PyEncoder::encode_ordinary_batch_flat, nb::arg("texts"),
           nb::arg("suffix"), nb::arg("num_threads"))
      .def("count", &PyEncoder::count, nb::arg("text"), nb::arg("allowed"))
      .def("encode_pieces", &PyEncoder::encode_pieces, nb::arg("pieces"))
      .def("split", &PyEncoder::split, nb::arg("text"))
      .def("find_special", &PyEncoder::find_special, nb::arg("text"), nb::arg("mask"))
      .def("decode_bytes", &PyEncoder::decode_bytes, nb::arg("ids"))
      .def("decode_tokens_bytes", &PyEncoder::decode_tokens_bytes, nb::arg("ids"));
  register_training(m);
  bind_sentencepiece(m);
  bind_other_models(m);
}

// ================================================================================================
// Training (issue 3): pre-token counting and the BPE merge loop (cpp/counter.h, cpp/trainer.h).
// The heavy calls release the GIL; Python drives the loop (file chunks, progress) between them.
// ================================================================================================
#include "counter.h"
#include "trainer.h"

namespace {

// A vector handed to numpy without a copy (the array owns it).
template <class T>
nb::ndarray<nb::numpy, T> numpy_of(std::vector<T>* v) {
  nb::capsule owner(v, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  size_t shape[1] = {v->size()};
  return nb::ndarray<nb::numpy, T>(v->data(), 1, shape, owner);
}

struct PyPieceCounter {
  PieceCounter counter;

  static std::vector<SpecialToken> specials_of(const std::vector<nb::bytes>& specials) {
    std::vector<SpecialToken> sp;
    for (size_t i = 0; i < specials.size(); ++i)
      sp.push_back({std::string(specials[i].c_str(), specials[i].size()), uint32_t(i)});
    return sp;
  }

  static SplitPattern pattern_of(int pattern) {
    if (pattern < 0 || pattern > 2) throw nb::value_error("unknown native split pattern");
    return SplitPattern(pattern);
  }

  PyPieceCounter(int pattern, const std::vector<nb::bytes>& specials)
      : counter(pattern_of(pattern), specials_of(specials)) {}

  static const uint8_t* range_of(nb::bytes data, size_t start, size_t end) {
    if (start > end || end > data.size()) throw nb::value_error("invalid range");
    return reinterpret_cast<const uint8_t*>(data.c_str());
  }

  // Counts data[start:end] as one stretch of text.
  void count_bytes(nb::bytes data, size_t start, size_t end, size_t threads) {
    const uint8_t* p = range_of(data, start, end);
    nb::gil_scoped_release release;
    counter.count(p + start, end - start, threads);
  }

  void count_texts(nb::list texts, size_t threads) {
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

void register_training(nb::module_& m) {
  nb::class_<PyPieceCounter>(m, "PieceCounter")
      .def(nb::init<int, const std::vector<nb::bytes>&>(), nb::arg("pattern"), nb::arg("specials"))
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

// =================================================================================================
// SentencePiece-style models (issue 8): cpp/unigram.h behind `_core.SentencePieceModel`. The Python
// side is src/tokenforge/spm/; this section only converts arguments and releases the GIL.
// =================================================================================================
#include <mutex>

#include "unigram.h"

namespace {

struct PySentencePieceModel {
  std::unique_ptr<spm::Model> model;
  mutable std::unique_ptr<IntCache> ints_;  // made on the first list of ids (training models never need it)
  mutable std::once_flag ints_once;
  const IntCache* ints() const {
    std::call_once(ints_once, [&] { ints_ = std::make_unique<IntCache>(uint32_t(model->size())); });
    return ints_.get();
  }
  std::mt19937_64 rng{std::random_device{}()};

  PySentencePieceModel(const std::vector<std::tuple<nb::bytes, float, int>>& pieces, int algorithm, bool byte_fallback,
                       nb::bytes charsmap, bool add_dummy_prefix, bool remove_extra_whitespaces,
                       bool escape_whitespaces, bool treat_whitespace_as_suffix) {
    std::vector<spm::Piece> ps;
    ps.reserve(pieces.size());
    for (const auto& [b, score, type] : pieces) ps.push_back({std::string(b.c_str(), b.size()), score, uint8_t(type)});
    spm::NormalizerSpec spec;
    spec.charsmap.assign(charsmap.c_str(), charsmap.size());
    spec.add_dummy_prefix = add_dummy_prefix;
    spec.remove_extra_whitespaces = remove_extra_whitespaces;
    spec.escape_whitespaces = escape_whitespaces;
    spec.treat_whitespace_as_suffix = treat_whitespace_as_suffix;
    if (algorithm != int(spm::Algorithm::kUnigram) && algorithm != int(spm::Algorithm::kBpe))
      throw nb::value_error("algorithm must be 1 (unigram) or 2 (bpe)");
    std::string error;
    model = spm::Model::create(std::move(ps), spm::Algorithm(algorithm), byte_fallback, spec, &error);
    if (!model) throw nb::value_error(error.c_str());
  }

  nb::list encode(nb::handle text) const {
    std::string_view v = utf8_of(text);
    std::vector<uint32_t> out;
    {
      nb::gil_scoped_release release;
      out.reserve(v.size() / 3 + 1);
      model->encode(bytes_of(v), v.size(), out);
    }
    return ints()->to_list(out);
  }

  nb::list encode_batch(nb::list texts, size_t num_threads) const {
    std::vector<std::string_view> views;
    views.reserve(texts.size());
    for (nb::handle t : texts) views.push_back(utf8_of(t));
    std::vector<std::vector<uint32_t>> results(views.size());
    {
      nb::gil_scoped_release release;
      parallel_for(views.size(), num_threads, [&](size_t i) {
        std::vector<uint32_t> ids;  // built locally: neighbouring results[] share cache lines
        model->encode(bytes_of(views[i]), views[i].size(), ids);
        results[i] = std::move(ids);
      });
    }
    nb::list out;
    for (const auto& r : results) out.append(ints()->to_list(r));
    return out;
  }

  nb::str normalize(nb::handle text) const {
    std::string_view v = utf8_of(text);
    std::string out;
    model->normalize(bytes_of(v), v.size(), out);
    return nb::str(out.data(), out.size());
  }

  // (begin, end, id) spans of normalized text (bytes), before byte fallback.
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> segment(nb::bytes normalized) const {
    std::vector<spm::Span> spans;
    model->segment(reinterpret_cast<const uint8_t*>(normalized.c_str()), normalized.size(), spans);
    std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> out;
    for (const auto& s : spans) out.emplace_back(s.begin, s.end, s.id);
    return out;
  }

  // Subword regularization: normalize, draw a segmentation, post-process (unigram only).
  nb::list sample(nb::handle text, double alpha, nb::object seed) {
    if (!seed.is_none()) rng.seed(nb::cast<uint64_t>(seed));
    std::string_view v = utf8_of(text);
    std::string normalized;
    model->normalize(bytes_of(v), v.size(), normalized);
    std::vector<spm::Span> spans;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(normalized.data());
    model->sample(s, normalized.size(), alpha, rng, spans);
    std::vector<uint32_t> out;
    model->spans_to_ids(s, spans, out);
    return ints()->to_list(out);
  }

  nb::tuple expected_counts(const std::vector<nb::bytes>& words, const std::vector<double>& freqs) const {
    if (words.size() != freqs.size()) throw nb::value_error("one frequency per word");
    std::vector<std::string> ws;
    ws.reserve(words.size());
    for (const auto& w : words) ws.emplace_back(w.c_str(), w.size());
    auto* counts = new std::vector<double>();
    double total;
    {
      nb::gil_scoped_release release;
      total = model->expected_counts(ws, freqs, *counts);
    }
    nb::capsule owner(counts, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
    size_t shape[1] = {counts->size()};
    return nb::make_tuple(nb::ndarray<nb::numpy, double>(counts->data(), 1, shape, owner), total);
  }

  std::vector<std::vector<int32_t>> alternatives() const {
    nb::gil_scoped_release release;
    return model->alternatives();
  }

  nb::tuple viterbi_counts(const std::vector<nb::bytes>& words, const std::vector<double>& freqs) const {
    if (words.size() != freqs.size()) throw nb::value_error("one frequency per word");
    std::vector<std::string> ws;
    ws.reserve(words.size());
    for (const auto& w : words) ws.emplace_back(w.c_str(), w.size());
    std::vector<double> counts, word_freq;
    {
      nb::gil_scoped_release release;
      model->viterbi_counts(ws, freqs, counts, word_freq);
    }
    return nb::make_tuple(counts, word_freq);
  }
};

}  // namespace

void bind_sentencepiece(nb::module_& m) {
  nb::class_<PySentencePieceModel>(m, "SentencePieceModel")
      .def(nb::init<const std::vector<std::tuple<nb::bytes, float, int>>&, int, bool, nb::bytes, bool, bool, bool,
                    bool>(),
           nb::arg("pieces"), nb::arg("algorithm"), nb::arg("byte_fallback"), nb::arg("charsmap"),
           nb::arg("add_dummy_prefix"), nb::arg("remove_extra_whitespaces"), nb::arg("escape_whitespaces"),
           nb::arg("treat_whitespace_as_suffix"))
      .def("encode", &PySentencePieceModel::encode, nb::arg("text"))
      .def("encode_batch", &PySentencePieceModel::encode_batch, nb::arg("texts"), nb::arg("num_threads"))
      .def("normalize", &PySentencePieceModel::normalize, nb::arg("text"))
      .def("segment", &PySentencePieceModel::segment, nb::arg("normalized"))
      .def("sample", &PySentencePieceModel::sample, nb::arg("text"), nb::arg("alpha"), nb::arg("seed").none())
      .def("expected_counts", &PySentencePieceModel::expected_counts, nb::arg("words"), nb::arg("freqs"))
      .def("viterbi_counts", &PySentencePieceModel::viterbi_counts, nb::arg("words"), nb::arg("freqs"))
      .def("alternatives", &PySentencePieceModel::alternatives);
  // Training seeds: the top_k (substring bytes, count x length) of the words (cpp/unigram.h).
  m.def(
      "sentencepiece_count_substrings",
      [](const std::vector<nb::bytes>& words, const std::vector<double>& freqs, size_t max_chars, double min_count,
         size_t top_k) {
        if (words.size() != freqs.size()) throw nb::value_error("one frequency per word");
        std::vector<std::string> ws;
        ws.reserve(words.size());
        for (const auto& w : words) ws.emplace_back(w.c_str(), w.size());
        std::vector<std::pair<std::string, double>> counts;
        {
          nb::gil_scoped_release release;
          counts = spm::count_substrings(ws, freqs, max_chars, min_count, top_k);
        }
        nb::list out;
        for (const auto& [k, v] : counts) out.append(nb::make_tuple(nb::bytes(k.data(), k.size()), v));
        return out;
      },
      nb::arg("words"), nb::arg("freqs"), nb::arg("max_chars"), nb::arg("min_count"), nb::arg("top_k"));
}

// ================================================================================================
// Other tokenizer families (issue 4): WordPiece and character-level BPE models, the pair trainer
// they share, and the word splitters (cpp/pre_split.h). The Python side (tokenforge/pipeline.py)
// normalizes; `encode_text(s)` split and encode natively, `encode_words`/`encode_batch` take pieces
// split in Python (regex or no pre-tokenizer). Ids come back with the GIL released for the work.
// ================================================================================================

namespace {

// Views of the UTF-8 of each str in `words`, a list (the views point into its items, which the
// caller's list keeps alive).
std::vector<std::string_view> views_of(nb::handle words) {
  if (!PyList_Check(words.ptr())) throw nb::type_error("words must be a list of str");
  PyObject* fast = PySequence_Fast(words.ptr(), "words must be a list of str");
  if (!fast) throw nb::python_error();
  nb::object guard = nb::steal(fast);
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  std::vector<std::string_view> views;
  views.reserve(size_t(n));
  for (Py_ssize_t i = 0; i < n; ++i) views.push_back(utf8_of(items[i]));
  return views;
}

// Encodes the words of one text, each distinct word once (texts repeat their words a lot).
template <class EncodeWord>
void encode_words_cached(const std::vector<std::string_view>& words, std::vector<uint32_t>& out, EncodeWord encode_word) {
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> seen;  // word -> (offset, length) in out
  for (std::string_view w : words) {
    auto it = seen.find(w);
    if (it != seen.end()) {
      size_t off = it->second.first, len = it->second.second;
      for (size_t k = 0; k < len; ++k) {
        uint32_t id = out[off + k];  // copied first: push_back may reallocate
        out.push_back(id);
      }
      continue;
    }
    size_t before = out.size();
    encode_word(w, out);
    seen.emplace(w, std::make_pair(uint32_t(before), uint32_t(out.size() - before)));
  }
}

// Hugging Face's character classes for the word splitters, set once at import by
// tokenforge/pre_tokenizers.py (immutable afterwards).
std::unique_ptr<WordClassTable> g_word_classes;

const WordClassTable& word_classes() {
  if (!g_word_classes) throw nb::value_error("the word classes are not set (import tokenforge.pre_tokenizers)");
  return *g_word_classes;
}

std::vector<std::string_view> split_view(const WordClassTable& t, int how, std::string_view text) {
  std::vector<std::string_view> words;
  split_words(t, WordSplit(how), bytes_of(text), text.size(),
              [&](size_t b, size_t e) { words.push_back(text.substr(b, e - b)); });
  return words;
}

void check_split(int how) {
  if (how < 0 || how > 3) throw nb::value_error("unknown word split");
}

// encode_text / encode_texts for a model with encode_into(words, out): split natively, then encode.
template <class M>
nb::list encode_text_impl(const M& m, nb::handle text, int how) {
  check_split(how);
  const WordClassTable& t = word_classes();
  std::string_view v = utf8_of(text);
  std::vector<uint32_t> out;
  std::string error;
  {
    nb::gil_scoped_release release;
    error = m.encode_into(split_view(t, how, v), out);
  }
  m.finish(error);
  return to_list(out);
}

template <class M>
nb::list encode_texts_impl(const M& m, nb::list texts, int how, size_t num_threads) {
  check_split(how);
  const WordClassTable& t = word_classes();
  std::vector<std::string_view> views;
  for (nb::handle x : texts) views.push_back(utf8_of(x));
  std::vector<std::vector<uint32_t>> results(views.size());
  std::vector<std::string> errors(views.size());
  {
    nb::gil_scoped_release release;
    parallel_for(views.size(), num_threads, [&](size_t i) { errors[i] = m.encode_into(split_view(t, how, views[i]), results[i]); });
  }
  for (const auto& e : errors) m.finish(e);
  nb::list out;
  for (const auto& r : results) out.append(to_list(r));
  return out;
}

struct PyWordPiece {
  std::unique_ptr<WordPieceModel> model;

  PyWordPiece(const std::vector<std::pair<uint32_t, std::string>>& tokens, const std::string& prefix, uint32_t unk_id,
              size_t max_chars) {
    std::string error;
    model = WordPieceModel::create(tokens, prefix, unk_id, max_chars, &error);
    if (!model) throw nb::value_error(error.c_str());
  }

  std::string encode_into(const std::vector<std::string_view>& words, std::vector<uint32_t>& out) const {
    encode_words_cached(words, out, [&](std::string_view w, std::vector<uint32_t>& o) {
      model->encode_word(bytes_of(w), w.size(), o);
    });
    return {};
  }
  void finish(const std::string&) const {}
  nb::list encode_text(nb::handle text, int how) const { return encode_text_impl(*this, text, how); }
  nb::list encode_texts(nb::list texts, int how, size_t threads) const { return encode_texts_impl(*this, texts, how, threads); }

  nb::list encode_words(nb::handle words) const {
    std::vector<std::string_view> views = views_of(words);
    std::vector<uint32_t> out;
    {
      nb::gil_scoped_release release;
      encode_into(views, out);
    }
    return to_list(out);
  }

  nb::list encode_batch(nb::list batch, size_t num_threads) const {
    std::vector<std::vector<std::string_view>> views;
    for (nb::handle words : batch) views.push_back(views_of(words));
    std::vector<std::vector<uint32_t>> results(views.size());
    {
      nb::gil_scoped_release release;
      parallel_for(views.size(), num_threads, [&](size_t i) { encode_into(views[i], results[i]); });
    }
    nb::list out;
    for (const auto& r : results) out.append(to_list(r));
    return out;
  }
};

struct PyCharBpe {
  std::unique_ptr<CharBpeModel> model;

  PyCharBpe(const std::vector<std::pair<uint32_t, std::string>>& tokens,
            const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>& merges, const std::string& end_marker,
            const std::string& start_marker, bool attached, int64_t unk_id) {
    CharBpeConfig config{end_marker, start_marker, attached, unk_id};
    std::string error;
    model = CharBpeModel::create(tokens, merges, config, &error);
    if (!model) throw nb::value_error(error.c_str());
  }

  // Returns an empty string on success, else the unknown character.
  std::string encode_into(const std::vector<std::string_view>& words, std::vector<uint32_t>& out) const {
    std::string bad_char;
    encode_words_cached(words, out, [&](std::string_view w, std::vector<uint32_t>& o) {
      size_t bad = 0;
      if (bad_char.empty() && !model->encode_word(bytes_of(w), w.size(), o, &bad)) {
        size_t b = static_cast<uint8_t>(w[bad]);
        size_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        bad_char = std::string(w.substr(bad, len));
      }
    });
    return bad_char;
  }

  void finish(const std::string& bad) const {
    if (!bad.empty()) raise_unknown(bad);
  }
  nb::list encode_text(nb::handle text, int how) const { return encode_text_impl(*this, text, how); }
  nb::list encode_texts(nb::list texts, int how, size_t threads) const { return encode_texts_impl(*this, texts, how, threads); }

  static void raise_unknown(const std::string& c) {
    throw nb::value_error(("the character '" + c + "' is not in the vocabulary and the model has no unknown token").c_str());
  }

  nb::list encode_words(nb::handle words) const {
    std::vector<std::string_view> views = views_of(words);
    std::vector<uint32_t> out;
    std::string bad;
    {
      nb::gil_scoped_release release;
      bad = encode_into(views, out);
    }
    if (!bad.empty()) raise_unknown(bad);
    return to_list(out);
  }

  nb::list encode_batch(nb::list batch, size_t num_threads) const {
    std::vector<std::vector<std::string_view>> views;
    for (nb::handle words : batch) views.push_back(views_of(words));
    std::vector<std::vector<uint32_t>> results(views.size());
    std::vector<std::string> bad(views.size());
    {
      nb::gil_scoped_release release;
      parallel_for(views.size(), num_threads, [&](size_t i) { bad[i] = encode_into(views[i], results[i]); });
    }
    for (const auto& b : bad)
      if (!b.empty()) raise_unknown(b);
    nb::list out;
    for (const auto& r : results) out.append(to_list(r));
    return out;
  }
};

nb::tuple py_train_pairs(std::vector<std::string> symbols, std::vector<std::vector<uint32_t>> words,
                         std::vector<uint64_t> counts, int score, uint64_t min_frequency, size_t max_new_tokens,
                         std::vector<std::string> markers, std::string strip_prefix) {
  if (words.size() != counts.size()) throw nb::value_error("words and counts differ in length");
  for (const auto& w : words)
    for (uint32_t s : w)
      if (s >= symbols.size()) throw nb::value_error("a word uses a symbol id that is not in the alphabet");
  TrainerConfig config;
  config.score = score == 1 ? TrainerConfig::kWordPiece : TrainerConfig::kCount;
  config.min_frequency = min_frequency;
  config.max_new_tokens = max_new_tokens;
  config.markers = std::move(markers);
  config.strip_prefix = std::move(strip_prefix);
  TrainerResult result;
  {
    nb::gil_scoped_release release;
    result = train_pairs(std::move(symbols), std::move(words), counts, config);
  }
  return nb::make_tuple(result.new_tokens, result.merges);
}

void set_word_classes(const WordClassTable::Ranges& word, const WordClassTable::Ranges& space,
                      const WordClassTable::Ranges& punct) {
  g_word_classes = std::make_unique<WordClassTable>(word, space, punct);
}

nb::list py_split_words(nb::handle text, int how) {
  check_split(how);
  std::string_view v = utf8_of(text);
  std::vector<std::string_view> words = split_view(word_classes(), how, v);
  nb::list out;
  for (auto w : words) out.append(nb::steal(PyUnicode_DecodeUTF8(w.data(), Py_ssize_t(w.size()), "strict")));
  return out;
}

// The pre-token count of many texts: {piece: count}.
nb::dict py_count_words(nb::list texts, int how) {
  check_split(how);
  const WordClassTable& t = word_classes();
  std::vector<std::string_view> views;
  for (nb::handle x : texts) views.push_back(utf8_of(x));
  std::unordered_map<std::string_view, uint64_t> counts;
  {
    nb::gil_scoped_release release;
    for (auto v : views)
      split_words(t, WordSplit(how), bytes_of(v), v.size(), [&](size_t b, size_t e) { ++counts[v.substr(b, e - b)]; });
  }
  nb::dict out;
  for (const auto& [w, c] : counts) {
    nb::object key = nb::steal(PyUnicode_DecodeUTF8(w.data(), Py_ssize_t(w.size()), "strict"));
    out[key] = nb::int_(c);
  }
  return out;
}

}  // namespace

void bind_other_models(nb::module_& m) {
  m.def("set_word_classes", &set_word_classes, nb::arg("word"), nb::arg("space"), nb::arg("punct"));
  m.def("split_words", &py_split_words, nb::arg("text"), nb::arg("how"));
  m.def("count_words", &py_count_words, nb::arg("texts"), nb::arg("how"));
  nb::class_<PyWordPiece>(m, "WordPiece")
      .def(nb::init<const std::vector<std::pair<uint32_t, std::string>>&, const std::string&, uint32_t, size_t>(),
           nb::arg("tokens"), nb::arg("prefix"), nb::arg("unk_id"), nb::arg("max_chars"))
      .def("encode_words", &PyWordPiece::encode_words, nb::arg("words"))
      .def("encode_batch", &PyWordPiece::encode_batch, nb::arg("batch"), nb::arg("num_threads"))
      .def("encode_text", &PyWordPiece::encode_text, nb::arg("text"), nb::arg("how"))
      .def("encode_texts", &PyWordPiece::encode_texts, nb::arg("texts"), nb::arg("how"), nb::arg("num_threads"));
  nb::class_<PyCharBpe>(m, "CharBpe")
      .def(nb::init<const std::vector<std::pair<uint32_t, std::string>>&,
                    const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>&, const std::string&,
                    const std::string&, bool, int64_t>(),
           nb::arg("tokens"), nb::arg("merges"), nb::arg("end_marker"), nb::arg("start_marker"), nb::arg("attached"),
           nb::arg("unk_id"))
      .def("encode_words", &PyCharBpe::encode_words, nb::arg("words"))
      .def("encode_batch", &PyCharBpe::encode_batch, nb::arg("batch"), nb::arg("num_threads"))
      .def("encode_text", &PyCharBpe::encode_text, nb::arg("text"), nb::arg("how"))
      .def("encode_texts", &PyCharBpe::encode_texts, nb::arg("texts"), nb::arg("how"), nb::arg("num_threads"));
  m.def("train_pairs", &py_train_pairs, nb::arg("symbols"), nb::arg("words"), nb::arg("counts"), nb::arg("score"),
        nb::arg("min_frequency"), nb::arg("max_new_tokens"), nb::arg("markers"), nb::arg("strip_prefix"));
}
