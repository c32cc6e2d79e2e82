// Helpers shared by the binding files (the only files that include nanobind): str and ids at the
// seam, Python ints made once, numpy arrays that own their vector, and native threads.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "parallel.h"
#include "split_regex.h"
#include "str_utf8.h"

namespace tokenforge::py {

namespace nb = nanobind;

// A split pattern outside the native engine's subset (Python: `_core.UnsupportedPattern`, a
// ValueError); the caller falls back to the `regex` module.
struct UnsupportedPatternError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A disallowed special token occurs in the text (Python: `_core.DisallowedSpecial`, a ValueError
// whose argument is the token's index in the encoder's specials, as a str).
struct DisallowedSpecialError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The UTF-8 of a str, cached inside the str object by CPython. Raises UnicodeEncodeError for lone
// surrogates; the Python layer catches that and retries with them replaced, as tiktoken does.
inline std::string_view utf8_of(nb::handle text) {
  if (!PyUnicode_Check(text.ptr())) throw nb::type_error("text must be a str");
  Py_ssize_t size;
  const char* p = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (!p) throw nb::python_error();
  return {p, size_t(size)};
}

// How a str holds its text: kind 0 when `data` is its UTF-8 already (a compact ASCII str, or a
// str CPython has converted for another call), else CPython's bytes per code point (1, 2 or 4),
// to be converted (cpp/str_utf8.h). Raises TypeError for anything but a str.
struct StrForm {
  const void* data;
  size_t length;  // in code points (bytes for kind 0)
  int kind;

  explicit StrForm(PyObject* o) {
    if (!PyUnicode_Check(o)) throw nb::type_error("text must be a str");
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(o) < 0) throw nb::python_error();
#endif
    length = size_t(PyUnicode_GET_LENGTH(o));
    kind = 0;
    if (PyUnicode_IS_ASCII(o)) {
      data = PyUnicode_DATA(o);
    } else if (PyUnicode_IS_COMPACT(o) && reinterpret_cast<PyCompactUnicodeObject*>(o)->utf8) {
      auto* compact = reinterpret_cast<PyCompactUnicodeObject*>(o);
      data = compact->utf8;
      length = size_t(compact->utf8_length);
    } else {
      data = PyUnicode_DATA(o);
      kind = PyUnicode_KIND(o);
    }
  }
  // Code points [begin, end) of str o (begin <= end <= its length): a part of a long text that a
  // batch encodes on its own (streaming.cut_long_texts).
  StrForm(PyObject* o, size_t begin, size_t end) : StrForm(o) {
    if (PyUnicode_IS_ASCII(o)) {
      data = static_cast<const char*>(data) + begin;
    } else {
      kind = PyUnicode_KIND(o);  // (not the str's cached UTF-8: code point offsets do not index it)
      data = static_cast<const char*>(PyUnicode_DATA(o)) + begin * size_t(kind);
    }
    length = end - begin;
  }
  // The most bytes its UTF-8 can take.
  size_t utf8_room() const { return kind == 0 ? length : length * size_t(kind == 1 ? 2 : kind == 2 ? 3 : 4); }
  // Its UTF-8, converted into out[0 .. utf8_room()) if need be; false at a lone surrogate.
  bool utf8(char* out, std::string_view* view) const {
    if (kind == 0) {
      *view = {static_cast<const char*>(data), length};
      return true;
    }
    size_t size = utf8_from_ucs(data, kind, length, reinterpret_cast<uint8_t*>(out));
    if (size == SIZE_MAX) return false;
    *view = {out, size};
    return true;
  }
};

// The UTF-8 of a str, made here into a buffer the caller keeps (cpp/str_utf8.h) rather than by
// PyUnicode_AsUTF8AndSize, which keeps its copy inside the str for as long as the str lives
// (memory the caller did not ask for, and fresh pages for every new str). A str with a lone
// surrogate goes to utf8_of, which raises UnicodeEncodeError. The view stays valid until the
// buffer's next use: a caller must be done with it before it makes Python objects (a garbage
// collection can run a finalizer that encodes on this thread).
class Utf8Buffer {
 public:
  // A buffer kept for many calls (thread_utf8) is made at least 16 MiB, of address space only:
  // the kernel gives a page when it is written. One sized by each larger text was allocated again
  // for it, in new pages to fault in (and the block it freed often went to the next result list,
  // which then faulted in new pages too). A buffer for one text of a batch is made to measure.
  static constexpr size_t kKeptRoom = size_t(1) << 24;
  explicit Utf8Buffer(size_t first_room = 0) : first_room_(first_room) {}
  std::string_view of(nb::handle text) {
    StrForm form(text.ptr());
    std::string_view view;
    if (!utf8(form, &view)) return utf8_of(text);
    return view;
  }
  // The UTF-8 of a str read before (no Python call: any thread), converted here if need be;
  // false at a lone surrogate. The buffer is not cleared first (a std::string resized per text
  // wrote zeros over three bytes per character of every non-ASCII text of a batch).
  bool utf8(const StrForm& form, std::string_view* view) {
    size_t room = form.utf8_room();
    if (form.kind != 0 && room > capacity_) {
      data_.reset();  // (first, so that the old and the new buffer are never both held)
      room = std::max(room, first_room_);
      data_.reset(new char[room]);
      capacity_ = room;
    }
    return form.utf8(data_.get(), view);
  }
  // Frees a buffer grown past 64 MiB (one huge text must not keep its memory).
  void trim() {
    if (capacity_ > (size_t(1) << 26)) {
      data_.reset();
      capacity_ = 0;
    }
  }

 private:
  size_t first_room_;
  std::unique_ptr<char[]> data_;
  size_t capacity_ = 0;
};

// A batch's strs, read while the GIL is held and turned into UTF-8 by whichever thread encodes
// each one (StrForm): the conversions run in parallel instead of one after another on the
// caller's thread. Holds a reference to every str (another Python thread may empty the list
// while the GIL is released).
// 16,384 characters; the tests set 1 (every batch on the threads it asks for), so that small
// batches still run the threaded paths (_core._set_characters_per_thread).
inline std::atomic<size_t>& characters_per_thread() {
  static std::atomic<size_t> grain{16384};
  return grain;
}

// The CPUs this process may run on (its affinity mask: what taskset or a container's cpuset
// allow), at least 1.
inline size_t usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());  // (more than CPU_SETSIZE CPUs)
}

// The threads for a batch of `characters` characters (or bytes): at most `wanted`, at most one
// per CPU the process may run on, and a second and each further one only for every
// characters_per_thread() characters. Starting a thread and handing it a piece cache costs 30-70
// us, the time of encoding 5-10 KB, so a batch of a few short texts is faster on the caller's
// thread alone (session 18: 8 texts of 500 characters took 350 us with 8 threads, 60 us now).
// More threads than CPUs take turns on them, each with a piece cache of its own to warm up:
// tiktoken's default of 8 threads on this 2-CPU machine encoded English 20-25% slower than 2
// threads (session 24, 48M characters in batches of 1.5M, numpy and lists). With the grain set
// to 1 (the tests), a batch runs on exactly the threads it asks for.
inline size_t batch_threads(size_t characters, size_t wanted) {
  size_t grain = characters_per_thread().load(std::memory_order_relaxed);
  if (grain <= 1) return wanted;
  size_t threads = std::min(wanted, characters / grain);
  if (threads > 1) threads = std::min(threads, usable_cpus());  // (a system call: not for small batches)
  return std::max<size_t>(1, threads);
}

// Lowers x to i if i is smaller (the first of several threads' findings wins).
inline void at_most(std::atomic<size_t>& x, size_t i) {
  for (size_t seen = x.load(); i < seen && !x.compare_exchange_weak(seen, i);) {
  }
}

class BatchTexts {
 public:
  explicit BatchTexts(nb::handle texts) {
    PyObject* fast = PySequence_Fast(texts.ptr(), "texts must be a sequence of str");
    if (!fast) throw nb::python_error();
    nb::object guard = nb::steal(fast);
    size_t n = size_t(PySequence_Fast_GET_SIZE(fast));
    PyObject** items = PySequence_Fast_ITEMS(fast);
    strs_.reserve(n);
    forms_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      PyObject* text = items[i];
      if (PyTuple_Check(text)) {  // (str, begin, end): a part of a long text (streaming.cut_long_texts)
        size_t begin, end;
        if (PyTuple_GET_SIZE(text) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(text, 0)) ||
            !nb::try_cast(nb::handle(PyTuple_GET_ITEM(text, 1)), begin) ||
            !nb::try_cast(nb::handle(PyTuple_GET_ITEM(text, 2)), end))
          throw nb::type_error("a part of a text must be (str, begin, end)");
        text = PyTuple_GET_ITEM(text, 0);
        if (begin > end || end > size_t(PyUnicode_GET_LENGTH(text))) throw nb::value_error("a part out of its text");
        forms_.emplace_back(text, begin, end);
      } else {
        forms_.emplace_back(text);
      }
      strs_.push_back(nb::borrow(text));
    }
    surrogate_at_ = n;
  }
  size_t size() const { return forms_.size(); }
  // The threads for this batch (batch_threads below).
  size_t threads_for(size_t wanted) const { return batch_threads(characters(), wanted); }
  // Text i's characters (code points).
  size_t length(size_t i) const { return forms_[i].length; }
  // The texts' characters (code points) together.
  size_t characters() const {
    size_t characters = 0;
    for (const StrForm& f : forms_) characters += f.length;
    return characters;
  }
  // The UTF-8 of text i, converted into `scratch` if need be (any thread); false at a lone
  // surrogate, and the first such text in order (whichever thread read it) is remembered.
  bool utf8(size_t i, Utf8Buffer& scratch, std::string_view* out) const {
    if (scratch.utf8(forms_[i], out)) return true;
    at_most(surrogate_at_, i);
    return false;
  }
  // The first text utf8() refused for a lone surrogate, size() if none.
  size_t surrogate_at() const { return surrogate_at_; }
  // With the GIL: raises CPython's UnicodeEncodeError for that text, if there is one.
  void raise_surrogate() const {
    size_t i = surrogate_at_;
    if (i >= size()) return;
    utf8_of(strs_[i]);  // raises UnicodeEncodeError
    throw std::logic_error("a str with a surrogate converted to UTF-8");
  }

 private:
  std::vector<nb::object> strs_;
  std::vector<StrForm> forms_;
  mutable std::atomic<size_t> surrogate_at_;  // (see utf8)
};

// The calling thread's buffer (one per Python thread: the binding converts before it starts any
// worker thread, and each call uses the view only until it returns).
inline Utf8Buffer& thread_utf8() {
  thread_local Utf8Buffer buffer(Utf8Buffer::kKeptRoom);
  return buffer;
}

// The UTF-8 of a str in the thread's buffer for the length of one call (trimmed at its end).
struct CallUtf8 {
  explicit CallUtf8(nb::handle text) : view(thread_utf8().of(text)) {}
  ~CallUtf8() { thread_utf8().trim(); }
  CallUtf8(const CallUtf8&) = delete;
  CallUtf8& operator=(const CallUtf8&) = delete;
  std::string_view view;
};

inline const uint8_t* bytes_of(std::string_view v) { return reinterpret_cast<const uint8_t*>(v.data()); }

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
  PyObject* get(uint32_t id) const {
    PyObject* o = id < ints.size() ? ints[id] : nullptr;
    if (o) {
      Py_INCREF(o);
      return o;
    }
    return PyLong_FromUnsignedLong(id);
  }
  // A new list of the ids' ints, or null with a Python error set (out of memory). The int objects
  // of a text's ids are scattered over megabytes: the loop prefetches the table entry 128 ids
  // ahead and the object 64 ids ahead, so that the reference-count writes do not wait on memory
  // one at a time. (A turn of the loop is a few cycles: at 32 and 16 ids, until session 18, half
  // of its samples still waited on the object. ab_builds.py, 120 fresh slices of 40,000
  // characters, lists: 1.04-1.07 on English, the multilingual pages and code, cl100k and o200k;
  // 64 / 32 ids 1.03, 256 / 128 1.05 on cl100k code.)
  static constexpr size_t kTableAhead = 128, kIntAhead = 64;
  PyObject* to_list_or_null(const uint32_t* ids, size_t n) const {
    PyObject* list = PyList_New(Py_ssize_t(n));
    if (!list) return nullptr;
    PyObject* const* table = ints.data();
    size_t size = ints.size();
    if (size == 0) return fill_from(list, ids, 0, n);
    // The main loop without bound checks on the prefetches: an id beyond the table is prefetched
    // as the table's last entry (a prefetch never faults, whatever the address).
    size_t i = 0, last = size - 1;
    for (; i + kTableAhead < n; ++i) {
      __builtin_prefetch(table + std::min<size_t>(ids[i + kTableAhead], last));
      __builtin_prefetch(table[std::min<size_t>(ids[i + kIntAhead], last)], 1);
      uint32_t id = ids[i];
      PyObject* o = id < size ? table[id] : nullptr;
      if (o) {
        Py_INCREF(o);
      } else if (!(o = PyLong_FromUnsignedLong(id))) {
        Py_DECREF(list);  // (the items not set are null)
        return nullptr;
      }
      PyList_SET_ITEM(list, Py_ssize_t(i), o);
    }
    return fill_from(list, ids, i, n);
  }
  // Sets the items from i on through get(); null (and the list freed) if an int cannot be made.
  PyObject* fill_from(PyObject* list, const uint32_t* ids, size_t i, size_t n) const {
    for (; i < n; ++i) {
      PyObject* o = get(ids[i]);
      if (!o) {
        Py_DECREF(list);  // (the items not set are null)
        return nullptr;
      }
      PyList_SET_ITEM(list, Py_ssize_t(i), o);
    }
    return list;
  }
  PyObject* to_list_or_null(const std::vector<uint32_t>& ids) const { return to_list_or_null(ids.data(), ids.size()); }
  nb::list to_list(const uint32_t* ids, size_t n) const {
    PyObject* list = to_list_or_null(ids, n);
    if (!list) throw nb::python_error();
    return nb::steal<nb::list>(list);
  }
  nb::list to_list(const std::vector<uint32_t>& ids) const { return to_list(ids.data(), ids.size()); }
};

// Token ids from any sequence of ints; a negative or too-large id raises ValueError naming it.
inline std::vector<uint32_t> ids_of(nb::handle seq) {
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

// numpy arrays (bindings/numpy_arrays.cpp, numpy's C API, numpy loaded at the first array):
// numpy_of hands a vector to a new 1-D array without a copy (the array owns it from then on,
// also when this throws); numpy_copy makes a new array of n copied elements. For uint8_t,
// uint32_t, int64_t, uint64_t and double.
template <class T>
nb::object numpy_of(std::vector<T>* v);
template <class T>
nb::object numpy_copy(const T* data, size_t n);

// The merge rules of a Hugging Face BPE model whose tokens are plain text: `merges` a list of
// "left right" strs or [left, right] lists; id_of(UTF-8, &id) finds a token. The rules (left id,
// right id, merged id) in order into `rules`; false for anything else (a part or the join not a
// token, a malformed entry, and with `unique` a pair listed twice): the Python reader then names
// the problem. No Python string is made per merge: each is read as its UTF-8 (CPython keeps a str's
// UTF-8 once made), the join in a reused buffer.
template <class IdOf>
bool parse_text_merges(PyObject* merges, bool unique, std::vector<uint32_t>& rules, IdOf id_of) {
  if (!PyList_Check(merges)) return false;
  auto view_of = [](PyObject* s, std::string_view* out) {
    Py_ssize_t size;
    const char* text = PyUnicode_AsUTF8AndSize(s, &size);
    if (!text) PyErr_Clear();  // (a lone surrogate)
    *out = std::string_view(text ? text : "", text ? size_t(size) : 0);
    return text != nullptr;
  };
  auto found = [&](std::string_view part, uint32_t* out) { return !part.empty() && id_of(part, out); };
  const Py_ssize_t n = PyList_GET_SIZE(merges);
  rules.assign(3 * size_t(n), 0);
  std::string joined;
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* m = PyList_GET_ITEM(merges, k);
    std::string_view left, right;
    if (PyUnicode_CheckExact(m)) {
      std::string_view both;
      if (!view_of(m, &both)) return false;
      const size_t space = both.find(' ');  // (a space byte in UTF-8 is the space character)
      if (space == std::string_view::npos || both.find(' ', space + 1) != std::string_view::npos) return false;
      left = both.substr(0, space);
      right = both.substr(space + 1);
    } else if (PyList_CheckExact(m) && PyList_GET_SIZE(m) == 2 && PyUnicode_CheckExact(PyList_GET_ITEM(m, 0)) &&
               PyUnicode_CheckExact(PyList_GET_ITEM(m, 1))) {
      if (!view_of(PyList_GET_ITEM(m, 0), &left) || !view_of(PyList_GET_ITEM(m, 1), &right)) return false;
    } else {
      return false;
    }
    joined.assign(left).append(right);
    uint32_t* rule = &rules[3 * size_t(k)];
    if (!found(left, rule) || !found(right, rule + 1) || !found(joined, rule + 2)) return false;
  }
  if (unique) {
    std::vector<uint64_t> pairs(static_cast<size_t>(n));
    for (size_t k = 0; k < size_t(n); ++k) pairs[k] = uint64_t(rules[3 * k]) << 32 | rules[3 * k + 1];
    std::sort(pairs.begin(), pairs.end());
    if (std::adjacent_find(pairs.begin(), pairs.end()) != pairs.end()) return false;
  }
  return true;
}

// tokenforge::parallel_for (cpp/parallel.h) for the bindings' batches. This module is loaded with
// dlopen, so glibc allocates a thread's block of its thread_locals on the thread's first use of
// one, with malloc, and aborts the process if that fails. The worker threads use none on the byte-level path
// (their piece caches hang on a pthread key); the caller's block is made here, before the threads
// take the memory (a batch of 1000 threads under an address-space limit otherwise aborted 1 run in
// 12 when the caller's thread first touched one after the batch).
template <class F, class Between = NoStep>
void batch_parallel_for(size_t n, size_t threads, F f, Between between = Between()) {
  thread_utf8();
  tokenforge::parallel_for(n, threads, std::move(f), std::move(between));
}

// batch_parallel_for over the texts of `batch`, its long texts taken first (long_items_first,
// parallel.h): f(i) for every text i, in that order.
template <class F, class Between = NoStep>
void batch_parallel_for(const BatchTexts& batch, size_t threads, F f, Between between = Between()) {
  std::vector<size_t> order = tokenforge::long_items_first(batch.size(), threads, [&](size_t i) { return batch.length(i); });
  if (order.empty()) return batch_parallel_for(batch.size(), threads, std::move(f), std::move(between));
  batch_parallel_for(batch.size(), threads, [&](size_t k) { f(order[k]); }, std::move(between));
}

// Byte offsets into the UTF-8 text v turned into code point offsets, in place (spans in order).
inline void to_code_points(std::string_view v, std::vector<std::pair<size_t, size_t>>& spans) {
  size_t byte = 0, chars = 0;
  auto advance = [&](size_t to) {
    for (; byte < to; ++byte) chars += (uint8_t(v[byte]) & 0xC0) != 0x80;
    return chars;
  };
  for (auto& [b, e] : spans) {
    b = advance(b);
    e = advance(e);
  }
}

// A compiled split pattern from a regex string, raising UnsupportedPatternError outside the subset.
std::shared_ptr<const SplitRegex> compile_split_pattern(const std::string& pattern);

}  // namespace tokenforge::py
namespace tokenforge {
class Encoder;
class SplitSequence;
class SpecialMatcher;
}  // namespace tokenforge
namespace tokenforge::py {

// The C++ engine inside a `_core.Encoder` object (TypeError for anything else); it lives as long
// as the object, which the caller holds.
const Encoder& encoder_of(nb::handle core);

// The split sequence inside a `_core.SplitSequence` object (TypeError for anything else).
const SplitSequence& split_sequence_of(nb::handle seq);

// The matcher inside a `_core.LiteralFinder` object (TypeError for anything else).
const SpecialMatcher& literal_matcher_of(nb::handle finder);

// The split pattern argument of Encoder and PieceCounter: a regex str (compiled natively), None
// (no native splitting), or for compatibility the number of a named scanner (0 gpt2, 1 cl100k,
// 2 o200k).
inline std::shared_ptr<const SplitRegex> split_pattern_of(nb::handle pattern) {
  if (pattern.is_none()) return nullptr;
  if (PyUnicode_Check(pattern.ptr())) return compile_split_pattern(nb::cast<std::string>(pattern));
  if (PyLong_Check(pattern.ptr()) && !PyBool_Check(pattern.ptr())) {
    long v = PyLong_AsLong(pattern.ptr());
    if (v == -1) return nullptr;
    if (v < 0 || v > 2) throw nb::value_error("unknown native split pattern number");
    return named_split_regex(SplitPattern(v));
  }
  throw nb::type_error("pattern must be a str, None, or a named pattern's number");
}

}  // namespace tokenforge::py
