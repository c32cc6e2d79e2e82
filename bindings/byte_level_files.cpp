// Reading the byte-level vocabularies of JSON files (tokenizer.json): GPT-2's characters to bytes,
// and the merges to byte pairs and ids, over whole tables instead of Python code per token. Each
// function returns None when anything is unusual; the Python reader (formats/huggingface.py) then
// goes through the table entry by entry and names the problem. And the counts that check a fast
// JSON parser's result against the text (formats/_common.parse_json).
#include <algorithm>
#include <cstring>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common.h"
#include "hash_maps.h"

namespace nb = nanobind;

namespace {

// GPT-2's alphabet: the byte a character stands for, or -1 (characters from U+0144 on are none).
struct Alphabet {
  int16_t byte_of[0x144];
  Alphabet() {
    for (auto& b : byte_of) b = -1;
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_of[printable ? b : 256 + shifted++] = int16_t(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

// The ranks {bytes: id} of model.vocab without the added tokens (`special`, each either absent
// from the vocabulary or there with its own id), or None.
nb::object byte_level_vocab(nb::dict vocab, nb::dict special) {
  const Alphabet& abc = alphabet();
  std::unordered_set<long long> special_ids;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(special.ptr(), &pos, &key, &value)) {
    if (!PyLong_CheckExact(value)) return nb::none();
    special_ids.insert(PyLong_AsLongLong(value));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return nb::none();
    }
  }
  nb::dict ranks;
  std::string buf;
  pos = 0;
  while (PyDict_Next(vocab.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_Check(key) || !PyLong_CheckExact(value)) return nb::none();
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || id < 0) return nb::none();
    PyObject* sp = PyDict_GetItemWithError(special.ptr(), key);
    if (sp) {
      if (PyLong_AsLongLong(sp) == id) continue;  // the added token's own entry
      return nb::none();
    }
    if (PyErr_Occurred()) throw nb::python_error();
    if (special_ids.count(id)) return nb::none();
    const Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    const int kind = PyUnicode_KIND(key);
    const void* data = PyUnicode_DATA(key);
    buf.resize(size_t(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      const Py_UCS4 c = PyUnicode_READ(kind, data, i);
      if (c >= 0x144 || abc.byte_of[c] < 0) return nb::none();
      buf[size_t(i)] = char(abc.byte_of[c]);
    }
    nb::object b = nb::steal(PyBytes_FromStringAndSize(buf.data(), n));
    if (!b.is_valid()) throw nb::python_error();
    if (PyDict_SetItem(ranks.ptr(), b.ptr(), value)) throw nb::python_error();
  }
  return ranks;
}

// The bytes a GPT-2 spelling stands for, appended to out; false if a character is outside the alphabet.
bool decode_chars(PyObject* s, Py_ssize_t begin, Py_ssize_t end, std::string& out) {
  const Alphabet& abc = alphabet();
  const int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  for (Py_ssize_t i = begin; i < end; ++i) {
    const Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (c >= 0x144 || abc.byte_of[c] < 0) return false;
    out.push_back(char(abc.byte_of[c]));
  }
  return true;
}

// (pairs [(left bytes, right bytes)], rules [(left id, right id, merged id)]) of model.merges
// written "left right" or [left, right], every part and their concatenation a token of ranks
// ({bytes: id}, from byte_level_vocab), no pair twice; or None. The parts are decoded to bytes and
// looked up in a native table: Python dict lookups by new str keys were 9/10 of the time.
nb::object byte_level_merges(nb::list merges, nb::dict ranks) {
  // the tokens' bytes in an open-addressing table of 8-byte slots (32 bits of a seeded hash and the
  // token's index; cpp/hash_maps.h's hash, so a vocabulary cannot be made to collide): a probe reads
  // a token's bytes only when the hash bits agree
  struct Token {
    const char* data;  // the bytes object's buffer (borrowed from ranks)
    size_t size;
    PyObject* bytes;
    PyObject* id;
  };
  std::vector<Token> tokens;
  tokens.reserve(size_t(PyDict_GET_SIZE(ranks.ptr())));
  size_t cap = 16;
  while (cap < 2 * size_t(PyDict_GET_SIZE(ranks.ptr()))) cap *= 2;
  std::vector<uint64_t> slots(cap, 0);
  auto hash = [](const char* p, size_t len) { return tokenforge::hash_bytes(reinterpret_cast<const uint8_t*>(p), len); };
  auto tag_of = [](uint64_t h) { return (h >> 32 | 1) << 32; };
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(ranks.ptr(), &pos, &key, &value)) {
    if (!PyBytes_CheckExact(key)) return nb::none();
    const char* d = PyBytes_AS_STRING(key);
    const size_t len = size_t(PyBytes_GET_SIZE(key));
    const uint64_t h = hash(d, len);
    size_t k = h & (cap - 1);
    while (slots[k]) k = (k + 1) & (cap - 1);  // dict keys are distinct
    slots[k] = tag_of(h) | tokens.size();
    tokens.push_back(Token{d, len, key, value});
  }
  auto find = [&](std::string_view v) -> const Token* {
    const uint64_t h = hash(v.data(), v.size()), tag = tag_of(h);
    for (size_t k = h & (cap - 1);; k = (k + 1) & (cap - 1)) {
      const uint64_t slot = slots[k];
      if (!slot) return nullptr;
      if ((slot & ~0xFFFFFFFFull) != tag) continue;
      const Token& t = tokens[slot & 0xFFFFFFFFull];
      if (t.size == v.size() && std::memcmp(t.data, v.data(), v.size()) == 0) return &t;
    }
  };
  const size_t n = merges.size();
  nb::object pairs = nb::steal(PyList_New(Py_ssize_t(n)));
  nb::object rules = nb::steal(PyList_New(Py_ssize_t(n)));
  if (!pairs.is_valid() || !rules.is_valid()) throw nb::python_error();
  // the pairs seen, as (left, right) slots of the table (0: empty), open addressing
  size_t seen_cap = 16;
  while (seen_cap < 2 * n) seen_cap *= 2;
  std::vector<uint64_t> seen(seen_cap, 0);
  auto first_time = [&](const Token* a, const Token* b) {
    const uint64_t v = (uint64_t(a - tokens.data()) + 1) << 32 | uint64_t(b - tokens.data() + 1);
    for (size_t k = (v * 0x9E3779B97F4A7C15ull) >> 20 & (seen_cap - 1);; k = (k + 1) & (seen_cap - 1)) {
      if (seen[k] == v) return false;
      if (seen[k] == 0) return seen[k] = v, true;
    }
  };
  std::string both;
  for (size_t k = 0; k < n; ++k) {
    PyObject* m = PyList_GET_ITEM(merges.ptr(), Py_ssize_t(k));
    both.clear();
    size_t split;  // bytes of the left part
    if (PyUnicode_CheckExact(m)) {
      const Py_ssize_t len = PyUnicode_GET_LENGTH(m);
      const Py_ssize_t space = PyUnicode_FindChar(m, ' ', 0, len, 1);
      if (space == -2) throw nb::python_error();
      if (space <= 0 || space == len - 1 || PyUnicode_FindChar(m, ' ', space + 1, len, 1) != -1) return nb::none();
      if (!decode_chars(m, 0, space, both)) return nb::none();
      split = both.size();
      if (!decode_chars(m, space + 1, len, both)) return nb::none();
    } else if (PyList_CheckExact(m) && PyList_GET_SIZE(m) == 2 && PyUnicode_CheckExact(PyList_GET_ITEM(m, 0)) &&
               PyUnicode_CheckExact(PyList_GET_ITEM(m, 1))) {
      PyObject *a = PyList_GET_ITEM(m, 0), *b = PyList_GET_ITEM(m, 1);
      if (!decode_chars(a, 0, PyUnicode_GET_LENGTH(a), both)) return nb::none();
      split = both.size();
      if (!decode_chars(b, 0, PyUnicode_GET_LENGTH(b), both)) return nb::none();
    } else {
      return nb::none();
    }
    if (split == 0 || split == both.size()) return nb::none();  // an empty part
    const std::string_view all(both);
    const Token *ia = find(all.substr(0, split)), *ib = find(all.substr(split)), *iab = find(all);
    if (!ia || !ib || !iab) return nb::none();
    if (!first_time(ia, ib)) return nb::none();
    PyObject* pair = PyTuple_Pack(2, ia->bytes, ib->bytes);
    PyObject* rule = PyTuple_Pack(3, ia->id, ib->id, iab->id);
    if (!pair || !rule) {
      Py_XDECREF(pair);
      Py_XDECREF(rule);
      throw nb::python_error();
    }
    PyList_SET_ITEM(pairs.ptr(), Py_ssize_t(k), pair);
    PyList_SET_ITEM(rules.ptr(), Py_ssize_t(k), rule);
  }
  return nb::make_tuple(pairs, rules);
}

// JSON read by a faster parser (orjson) is checked against its text: the number of object members
// (a ':' outside strings each) and of numbers written with a fraction or an exponent. A parser that
// keeps one of two equal keys has fewer members, one that reads a big integer as a float has more
// floats; either way the caller reads the text again with Python's json, which says what it found.
// The third count, the deepest nesting of arrays and objects, is read first: orjson 3.8 overflows
// the C stack on 100,000 nested objects, so deep text never reaches it.
nb::tuple json_text_shape(nb::bytes data) {
  const char* s = data.c_str();
  const size_t n = data.size();
  size_t members = 0, floats = 0, depth = 0, deepest = 0;
  bool unterminated = false;
  {
    nb::gil_scoped_release release;
    for (size_t i = 0; i < n; ++i) {
      const char c = s[i];
      if (c == '"') {  // to the closing quote: one not preceded by an odd run of backslashes
        const size_t open = i;
        for (;;) {
          const void* q = std::memchr(s + i + 1, '"', n - i - 1);
          if (!q) {  // unterminated: not JSON
            unterminated = true;
            break;
          }
          i = size_t(static_cast<const char*>(q) - s);
          size_t slashes = 0;
          while (i - slashes - 1 > open && s[i - slashes - 1] == '\\') ++slashes;
          if (slashes % 2 == 0) break;
        }
        if (unterminated) break;
      } else if (c == ':') {
        ++members;
      } else if (c == '[' || c == '{') {
        deepest = std::max(deepest, ++depth);
      } else if (c == ']' || c == '}') {
        depth -= depth > 0;
      } else if (c == '-' || (c >= '0' && c <= '9')) {
        bool fraction = false;
        for (; i < n && (s[i] == '-' || s[i] == '+' || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                         (s[i] >= '0' && s[i] <= '9'));
             ++i)
          fraction = fraction || s[i] == '.' || s[i] == 'e' || s[i] == 'E';
        floats += fraction;
        --i;
      }
    }
  }
  if (unterminated) return nb::make_tuple(-1, -1, -1);
  return nb::make_tuple(members, floats, deepest);
}

// The first two counts of a parsed JSON value (dicts, lists, str, int, float, bool, None), walked with
// an explicit stack; (-1, -1) past 200 levels of nesting (orjson reads any depth, where json.loads
// raises RecursionError: the caller then lets json.loads say so).
nb::tuple json_value_shape(nb::handle value) {
  constexpr size_t kMaxDepth = 200;
  long long members = 0, floats = 0;
  std::vector<std::pair<PyObject*, size_t>> stack = {{value.ptr(), 0}};
  while (!stack.empty()) {
    auto [v, depth] = stack.back();
    stack.pop_back();
    if (PyFloat_CheckExact(v)) {
      ++floats;
      continue;
    }
    const bool dict = PyDict_CheckExact(v);
    if (!dict && !PyList_CheckExact(v)) continue;
    if (depth >= kMaxDepth) return nb::make_tuple(-1, -1);
    if (dict) {
      members += PyDict_GET_SIZE(v);
      PyObject *key, *item;
      Py_ssize_t pos = 0;
      while (PyDict_Next(v, &pos, &key, &item))
        if (!PyUnicode_CheckExact(item) && !PyLong_CheckExact(item)) stack.push_back({item, depth + 1});
    } else {
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); ++i) {
        PyObject* item = PyList_GET_ITEM(v, i);
        if (!PyUnicode_CheckExact(item) && !PyLong_CheckExact(item)) stack.push_back({item, depth + 1});
      }
    }
  }
  return nb::make_tuple(members, floats);
}

}  // namespace

void bind_byte_level_files(nb::module_& m) {
  m.def("json_text_shape", &json_text_shape, nb::arg("data"));
  m.def("json_value_shape", &json_value_shape, nb::arg("value").none());
  m.def("byte_level_vocab", &byte_level_vocab, nb::arg("vocab"), nb::arg("special"));
  m.def("byte_level_merges", &byte_level_merges, nb::arg("merges"), nb::arg("ranks"));
}
