// The one file that knows about Python: converts str/bytes/lists at the seam and releases the GIL
// around the native work. Everything else lives in cpp/ and knows nothing of Python.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <string_view>
#include <thread>

#include "encoder.h"

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
      parallel_for(views.size(), num_threads, [&](size_t i) { encode_into(views[i], mask, results[i]); });
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
        enc->encode_ordinary(bytes_of(views[i]), views[i].size(), results[i]);
        if (suffix[i] >= 0) results[i].push_back(uint32_t(suffix[i]));
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
}

// ================================================================================================
// Training (issue 3): pre-token counting and the BPE merge loop (cpp/counter.h, cpp/trainer.h).
// The heavy calls release the GIL; Python drives the loop (file chunks, progress) between them.
// ================================================================================================
#include "counter.h"
#include "trainer.h"

namespace {

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
