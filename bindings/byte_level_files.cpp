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

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common.h"
#include "hash_maps.h"

namespace nb = nanobind;

namespace {

// GPT-2's alphabet: the byte a character stands for, or -1 (characters from U+0144 on are none),
// and the character of each byte.
struct Alphabet {
  int16_t byte_of[0x144];
  uint16_t char_of[256];
  Alphabet() {
    for (auto& b : byte_of) b = -1;
    int shifted = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char_of[b] = uint16_t(printable ? b : 256 + shifted++);
      byte_of[char_of[b]] = int16_t(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

// Whether no id is listed twice: one bit per id when the ids are dense (every real vocabulary),
// else sorted (a few huge ids must not cost a bit per id below them).
bool unique_ids(std::vector<uint32_t>& ids) {
  uint32_t top = 0;
  for (uint32_t i : ids) top = std::max(top, i);
  if (size_t(top) < 8 * ids.size() + 1024) {
    std::vector<bool> seen(size_t(top) + 1);
    for (uint32_t i : ids) {
      if (seen[i]) return false;
      seen[i] = true;
    }
    return true;
  }
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

// The ranks {bytes: id} of model.vocab without the added tokens (`special`, each either absent
// from the vocabulary or there with its own id), or None. A token with a character outside GPT-2's
// alphabet makes it None, unless `decode_only` is a dict: the token then goes there ({id: token};
// Command-R's emoji: the merges never make them, tokenizers' ByteLevel decoder gives their UTF-8).
nb::object byte_level_vocab(nb::dict vocab, nb::dict special, nb::object decode_only) {
  PyObject* outside = decode_only.is_none() ? nullptr : decode_only.ptr();
  if (outside && !PyDict_Check(outside)) throw nb::type_error("decode_only: a dict or None");
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
  // made at its final size (a growing dict of 151k entries was rebuilt eight times)
  nb::dict ranks = nb::steal<nb::dict>(_PyDict_NewPresized(PyDict_GET_SIZE(vocab.ptr())));
  if (!ranks.is_valid()) throw nb::python_error();
  std::vector<uint32_t> ids;  // every entry's id: one id twice makes the vocabulary not plain
  ids.reserve(size_t(PyDict_GET_SIZE(vocab.ptr())));
  std::string buf;
  pos = 0;
  while (PyDict_Next(vocab.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_Check(key) || !PyLong_CheckExact(value)) return nb::none();
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || id < 0 || id >= 0xFFFFFFFFll) return nb::none();
    ids.push_back(uint32_t(id));
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
    bool spelled = true;
    for (Py_ssize_t i = 0; i < n && spelled; ++i) {
      const Py_UCS4 c = PyUnicode_READ(kind, data, i);
      spelled = c < 0x144 && abc.byte_of[c] >= 0;
      if (spelled) buf[size_t(i)] = char(abc.byte_of[c]);
    }
    if (!spelled) {  // a token outside GPT-2's alphabet: decode-only if asked for, else not plain
      if (!outside) return nb::none();
      if (PyDict_SetItem(outside, value, key)) throw nb::python_error();
      continue;
    }
    nb::object b = nb::steal(PyBytes_FromStringAndSize(buf.data(), n));
    if (!b.is_valid()) throw nb::python_error();
    if (PyDict_SetItem(ranks.ptr(), b.ptr(), value)) throw nb::python_error();
  }
  if (!unique_ids(ids)) return nb::none();
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

// The bytes of a merge written "left right" (one space, GPT-2's alphabet otherwise), appended to
// out; *split: out's size where the right part starts. False for anything else.
bool decode_merge(PyObject* s, std::string& out, size_t* split) {
  const Alphabet& abc = alphabet();
  const int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  bool spaced = false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Py_UCS4 c = PyUnicode_READ(kind, data, i);
    if (c == ' ') {
      if (spaced) return false;
      spaced = true;
      *split = out.size();
    } else if (c >= 0x144 || abc.byte_of[c] < 0) {
      return false;
    } else {
      out.push_back(char(abc.byte_of[c]));
    }
  }
  return spaced;
}

// The tokens' bytes -> their index in the ranks, for byte_level_merges: an open-addressing table
// whose 24-byte slots hold a token's first 16 bytes, its length and its index (a lookup of a token
// of up to 16 bytes reads one slot, no pointer to follow; a longer one compares the rest through
// `longer`). cpp/hash_maps.h's keyed hashes, so a vocabulary cannot be made to collide. Lookups come
// in two steps, `probe` (hash and prefetch) then `find`, so that a batch of them waits for memory
// once instead of one after the other.
class TokenTable {
 public:
  static constexpr uint32_t kNone = ~uint32_t(0);
  explicit TokenTable(size_t n) : slots_(tokenforge::table_size_for(n)), mask_(slots_.size() - 1), longer_(n) {}

  // Fills the table with tokens[i] (bytes that stay alive) -> i: every hash first,
  // then each slot prefetched some tokens ahead of its insertion (an insertion is otherwise a
  // cache miss waited for).
  void build(const std::vector<std::string_view>& tokens) {
    std::vector<Probe> probes;
    probes.reserve(tokens.size());
    for (std::string_view t : tokens) {
      uint8_t buf[16] = {0};
      std::memcpy(buf, t.data(), std::min(t.size(), size_t(16)));
      probes.push_back(probe(buf, reinterpret_cast<const uint8_t*>(t.data()), t.size(), false));
    }
    constexpr size_t kAhead = 16;
    for (size_t k = 0; k < probes.size(); ++k) {
      if (k + kAhead < probes.size()) __builtin_prefetch(&slots_[probes[k + kAhead].hash & mask_], 1);
      const Probe& pr = probes[k];
      if (pr.key.len == 0) continue;  // never looked up (a merge's parts are not empty); the engine refuses it
      size_t i = pr.hash & mask_;
      while (slots_[i].len) i = (i + 1) & mask_;  // the keys are distinct (a dict's)
      slots_[i] = Slot{pr.key.lo, pr.key.hi, pr.key.len, uint32_t(k)};
      if (pr.key.len > 16) longer_[k] = pr.p;
    }
  }

  struct Probe {
    tokenforge::ShortKey key;
    uint64_t hash;
    const uint8_t* p;
  };
  // p[0..len), p readable 16 bytes on; prefetches the first slot
  Probe probe(const uint8_t* p, size_t len) const { return probe(p, p, len, true); }

  uint32_t find(const Probe& pr) const {
    for (size_t i = pr.hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.len == 0) return kNone;
      if (s.lo == pr.key.lo && s.hi == pr.key.hi && s.len == pr.key.len &&
          (s.len <= 16 || std::memcmp(longer_[s.index] + 16, pr.p + 16, s.len - 16) == 0))
        return s.index;
    }
  }

 private:
  struct Slot {
    uint64_t lo = 0, hi = 0;
    uint32_t len = 0;  // 0: empty (no token is empty here)
    uint32_t index = 0;
  };
  Probe probe(const uint8_t* first16, const uint8_t* p, size_t len, bool prefetch) const {
    Probe pr;
    pr.key = tokenforge::short_key_unchecked(first16, std::min(len, size_t(16)));
    pr.key.len = uint32_t(len);
    pr.hash = len <= 16 ? tokenforge::hash_short(pr.key) : tokenforge::hash_bytes(p, len);
    pr.p = p;
    if (prefetch) __builtin_prefetch(&slots_[pr.hash & mask_]);
    return pr;
  }
  std::vector<Slot> slots_;
  size_t mask_;
  std::vector<const uint8_t*> longer_;  // by index: the bytes of the tokens longer than 16
};

// Whether no id appears twice: a bitmap when the ids are dense enough (they are in real files),
// else an open-addressing set.
bool all_distinct(const std::vector<uint32_t>& ids, uint32_t max_id) {
  if (size_t(max_id) < 64 * ids.size() + 4096) {
    std::vector<uint64_t> bits(size_t(max_id) / 64 + 1, 0);
    for (uint32_t id : ids) {
      const uint64_t bit = uint64_t(1) << (id & 63);
      if (bits[id >> 6] & bit) return false;
      bits[id >> 6] |= bit;
    }
    return true;
  }
  std::vector<uint32_t> slots(tokenforge::table_size_for(ids.size()), ~uint32_t(0));  // no id is 2^32 - 1
  const size_t mask = slots.size() - 1;
  for (uint32_t id : ids) {
    size_t i = size_t(tokenforge::hash_u64(id)) & mask;
    for (; slots[i] != ~uint32_t(0); i = (i + 1) & mask)
      if (slots[i] == id) return false;
    slots[i] = id;
  }
  return true;
}

// The rules (left id, right id, merged id) of model.merges written "left right" or [left, right],
// every part and their concatenation a token of ranks ({bytes: id}, from byte_level_vocab), no pair
// twice; or None. None also unless the ranks are plain (bytes -> int ids in [0, 2^32 - 1), each
// id once): models/byte_bpe.Merges vouches for that, and ByteBPE then skips its own checks. The
// rules are packed as native uint32 triples in one bytes object (a tuple per merge, converted back
// for the engine, was a tenth of loading a 64k-merge tokenizer.json). No byte pairs are made
// (models/byte_bpe.Merges makes them from the ids when asked).
// The merges are read in batches: each batch's parts are decoded and their table slots prefetched
// first, then looked up (three lookups per merge into a table larger than the caches were most of
// the time; Python dict lookups by new str keys before that).
nb::object byte_level_merges(nb::list merges, nb::dict ranks) {
  const size_t num_tokens = size_t(PyDict_GET_SIZE(ranks.ptr()));
  std::vector<std::string_view> token_bytes;  // by the table's indices, as ids
  token_bytes.reserve(num_tokens);
  std::vector<uint32_t> id_values;
  id_values.reserve(num_tokens);
  uint32_t max_id = 0;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(ranks.ptr(), &pos, &key, &value)) {
    if (!PyBytes_CheckExact(key) || !PyLong_CheckExact(value)) return nb::none();
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || id < 0 || id >= 0xFFFFFFFFll) return nb::none();
    // the bytes stay alive in ranks while the table is used
    token_bytes.emplace_back(PyBytes_AS_STRING(key), size_t(PyBytes_GET_SIZE(key)));
    id_values.push_back(uint32_t(id));
    max_id = std::max(max_id, uint32_t(id));
  }
  if (!all_distinct(id_values, max_id)) return nb::none();
  TokenTable table(num_tokens);
  table.build(token_bytes);
  const size_t n = merges.size();
  std::vector<uint32_t> rules(3 * n);  // (left id, right id, merged id) per merge
  // the pairs seen, as (left, right) indices + 1 (0: empty), open addressing
  size_t seen_cap = 16;
  while (seen_cap < 2 * n) seen_cap *= 2;
  std::vector<uint64_t> seen(seen_cap, 0);
  auto first_time = [&](uint32_t a, uint32_t b) {
    const uint64_t v = (uint64_t(a) + 1) << 32 | (uint64_t(b) + 1);
    for (size_t k = (v * 0x9E3779B97F4A7C15ull) >> 20 & (seen_cap - 1);; k = (k + 1) & (seen_cap - 1)) {
      if (seen[k] == v) return false;
      if (seen[k] == 0) return seen[k] = v, true;
    }
  };
  constexpr size_t kBatch = 16;
  struct Parsed {
    size_t at, split, total;  // in `bytes`: the merge's bytes start at `at`, the right part at at + split
  };
  std::string bytes;
  Parsed parsed[kBatch];
  TokenTable::Probe probes[kBatch][3];
  for (size_t start = 0; start < n; start += kBatch) {
    const size_t count = std::min(kBatch, n - start);
    bytes.clear();
    for (size_t j = 0; j < count; ++j) {  // decode the batch
      PyObject* m = PyList_GET_ITEM(merges.ptr(), Py_ssize_t(start + j));
      const size_t at = bytes.size();
      size_t split;
      if (PyUnicode_CheckExact(m)) {
        if (!decode_merge(m, bytes, &split)) return nb::none();
        split -= at;
      } else if (PyList_CheckExact(m) && PyList_GET_SIZE(m) == 2 && PyUnicode_CheckExact(PyList_GET_ITEM(m, 0)) &&
                 PyUnicode_CheckExact(PyList_GET_ITEM(m, 1))) {
        PyObject *a = PyList_GET_ITEM(m, 0), *b = PyList_GET_ITEM(m, 1);
        if (!decode_chars(a, 0, PyUnicode_GET_LENGTH(a), bytes)) return nb::none();
        split = bytes.size() - at;
        if (!decode_chars(b, 0, PyUnicode_GET_LENGTH(b), bytes)) return nb::none();
      } else {
        return nb::none();
      }
      const size_t total = bytes.size() - at;
      if (split == 0 || split == total) return nb::none();  // an empty part
      parsed[j] = Parsed{at, split, total};
    }
    bytes.append(16, '\0');  // keys read 16 bytes from any start
    const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
    for (size_t j = 0; j < count; ++j) {  // hash and prefetch
      const Parsed& q = parsed[j];
      probes[j][0] = table.probe(base + q.at, q.split);
      probes[j][1] = table.probe(base + q.at + q.split, q.total - q.split);
      probes[j][2] = table.probe(base + q.at, q.total);
    }
    for (size_t j = 0; j < count; ++j) {  // look up
      const uint32_t a = table.find(probes[j][0]), b = table.find(probes[j][1]), ab = table.find(probes[j][2]);
      if (a == TokenTable::kNone || b == TokenTable::kNone || ab == TokenTable::kNone) return nb::none();
      if (!first_time(a, b)) return nb::none();
      uint32_t* rule = &rules[3 * (start + j)];
      rule[0] = id_values[a], rule[1] = id_values[b], rule[2] = id_values[ab];
    }
  }
  return nb::bytes(reinterpret_cast<const char*>(rules.data()), rules.size() * sizeof(uint32_t));
}

// [the token of id i spelled in GPT-2's alphabet, or None] for i < n, from ranks {token bytes: id}
// (ids at or above n left out; the first token of an id kept): ByteBPE.tokens_up_to, which the
// dataset's fingerprint asks for every id at each run (o200k: 175 ms one id_to_token at a time).
nb::list spelled_by_id(nb::dict ranks, size_t n) {
  const Alphabet& a = alphabet();
  PyObject* list = PyList_New(Py_ssize_t(n));
  if (!list) throw nb::python_error();
  nb::list out = nb::steal<nb::list>(list);
  for (size_t i = 0; i < n; ++i) {
    Py_INCREF(Py_None);
    PyList_SET_ITEM(list, Py_ssize_t(i), Py_None);
  }
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(ranks.ptr(), &pos, &key, &value)) {
    if (!PyBytes_Check(key) || !PyLong_Check(value)) throw nb::type_error("ranks must map bytes to int ids");
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || id < 0 || size_t(id) >= n || PyList_GET_ITEM(list, Py_ssize_t(id)) != Py_None) continue;
    const auto* b = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(key));
    const Py_ssize_t len = PyBytes_GET_SIZE(key);
    uint16_t widest = 0;
    for (Py_ssize_t k = 0; k < len; ++k) widest = std::max(widest, a.char_of[b[k]]);
    PyObject* spelled = PyUnicode_New(len, widest);
    if (!spelled) throw nb::python_error();
    const int kind = PyUnicode_KIND(spelled);
    void* data = PyUnicode_DATA(spelled);
    for (Py_ssize_t k = 0; k < len; ++k) PyUnicode_WRITE(kind, data, k, a.char_of[b[k]]);
    Py_DECREF(Py_None);
    PyList_SET_ITEM(list, Py_ssize_t(id), spelled);
  }
  return out;
}

// {id: token} of a vocabulary {token: id} whose tokens are non-empty str and whose ids are ints in
// [0, 2^32 - 1), each once; None otherwise (the Python loops then name the problem). One pass in
// place of the column checks (types, min, max, a reversed dict) that each cost a pass in Python.
nb::object vocab_by_id(nb::handle vocab) {
  if (!PyDict_CheckExact(vocab.ptr())) return nb::none();
  nb::dict by_id;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(vocab.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_CheckExact(key) || PyUnicode_GET_LENGTH(key) == 0 || !PyLong_CheckExact(value)) return nb::none();
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || id < 0 || id >= 0xFFFFFFFFll) return nb::none();
    if (PyDict_SetItem(by_id.ptr(), value, key)) throw nb::python_error();
  }
  if (PyDict_GET_SIZE(by_id.ptr()) != PyDict_GET_SIZE(vocab.ptr())) return nb::none();  // an id twice
  return by_id;
}

// Whether a vocabulary {token: id} passes vocab_by_id's checks (non-empty str tokens, int ids in
// [0, 2^32 - 1), each id once), without making the reversed dict: a model makes that only when
// something asks for a token by id (decoding), so loading a file does not pay for it.
bool vocab_checked(nb::handle vocab) {
  if (!PyDict_CheckExact(vocab.ptr())) return false;
  std::vector<uint32_t> ids;
  ids.reserve(size_t(PyDict_GET_SIZE(vocab.ptr())));
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(vocab.ptr(), &pos, &key, &value)) {
    if (!PyUnicode_CheckExact(key) || PyUnicode_GET_LENGTH(key) == 0 || !PyLong_CheckExact(value)) return false;
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow || id < 0 || id >= 0xFFFFFFFFll) return false;
    ids.push_back(uint32_t(id));
  }
  return unique_ids(ids);
}

// JSON read by a faster parser (orjson) is checked against its text: the number of object members
// (a ':' outside strings each) and of numbers written with a fraction or an exponent. A parser that
// keeps one of two equal keys has fewer members, one that reads a big integer as a float has more
// floats; either way the caller reads the text again with Python's json, which says what it found.
// The third count, the deepest nesting of arrays and objects, is read first: orjson 3.8 overflows
// the C stack on 100,000 nested objects, so deep text never reaches it.
// The first '"' in [p, end), or null: 16 bytes at a time with SSE2 (the strings of a tokenizer.json
// are mostly a few bytes long, and a call to memchr for each cost more than its search).
inline const char* next_quote(const char* p, const char* end) {
#ifdef __SSE2__
  const __m128i quote = _mm_set1_epi8('"');
  for (; end - p >= 16; p += 16) {
    const int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), quote));
    if (mask) return p + __builtin_ctz(unsigned(mask));
  }
#endif
  return static_cast<const char*>(std::memchr(p, '"', size_t(end - p)));
}

inline bool json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The first position from i on that is not JSON whitespace (n if none): 16 bytes at a time with
// SSE2 (a pretty-printed tokenizer.json is half indentation: Qwen3's 11 MB, 46% spaces).
inline size_t after_spaces(const char* s, size_t i, size_t n) {
#ifdef __SSE2__
  const __m128i space = _mm_set1_epi8(' '), newline = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                tab = _mm_set1_epi8('\t');
  for (; i + 16 <= n; i += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i blank = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, space), _mm_cmpeq_epi8(b, newline)),
                                       _mm_or_si128(_mm_cmpeq_epi8(b, cr), _mm_cmpeq_epi8(b, tab)));
    const unsigned other = ~unsigned(_mm_movemask_epi8(blank)) & 0xFFFFu;
    if (other) return i + size_t(__builtin_ctz(other));
  }
#endif
  while (i < n && json_space(s[i])) ++i;
  return i;
}

nb::tuple json_text_shape(nb::bytes data) {
  const char* s = data.c_str();
  const size_t n = data.size();
  size_t members = 0, floats = 0, depth = 0, deepest = 0;
  bool unterminated = false;
  {
    nb::gil_scoped_release release;
    for (size_t i = 0; i < n; ++i) {
      const char c = s[i];
      if (json_space(c)) {
        i = after_spaces(s, i, n) - 1;  // (the loop's ++i moves to the first other byte)
      } else if (c == '"') {  // to the closing quote: one not preceded by an odd run of backslashes
        const size_t open = i;
        for (;;) {
          const void* q = next_quote(s + i + 1, s + n);
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


// The `count` strings of a GGUF array (each a little-endian uint64 length, then its UTF-8 bytes)
// from byte `pos` of `data` (any buffer: bytes, or the memory map of a model file): (a list of
// str, the position after them), or None when a string does not fit in the buffer or is not UTF-8
// (the Python reader, formats/gguf.py, then names the problem).
nb::object gguf_strings(nb::handle data, size_t pos, size_t count) {
  Py_buffer view;
  if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0) {
    PyErr_Clear();
    return nb::none();
  }
  struct Release {
    Py_buffer* view;
    ~Release() { PyBuffer_Release(view); }
  } release{&view};
  const auto* p = static_cast<const unsigned char*>(view.buf);
  const size_t end = size_t(view.len);
  if (pos > end || count > (end - pos) / 8) return nb::none();  // (8 bytes a string at least)
  nb::object out = nb::steal(PyList_New(Py_ssize_t(count)));
  if (!out.ptr()) throw nb::python_error();
  for (size_t i = 0; i < count; ++i) {
    if (end - pos < 8) return nb::none();
    uint64_t n = 0;
    for (int b = 7; b >= 0; --b) n = n << 8 | p[pos + b];
    pos += 8;
    if (n > end - pos) return nb::none();
    PyObject* s = PyUnicode_DecodeUTF8(reinterpret_cast<const char*>(p + pos), Py_ssize_t(n), nullptr);
    if (!s) {
      PyErr_Clear();
      return nb::none();
    }
    PyList_SET_ITEM(out.ptr(), Py_ssize_t(i), s);
    pos += n;
  }
  return nb::make_tuple(out, pos);
}
// The merge rules of a Hugging Face BPE model whose tokens are plain text (Llama-2-style files:
// no byte alphabet): `merges` "left right" strings or [left, right] lists, every part and the
// concatenation a key of `vocab` ({str: int id}); the rules (left id, right id, merged id) in order,
// packed as native uint32 triples (models/byte_bpe.Merges), a repeated pair listed again (the
// native loop keeps its first rank) unless `unique`. None for anything else (and, with `unique`,
// for a pair listed twice): the Python reader names the problem.
// The parts are looked up by their UTF-8 in a table of the vocabulary's (CPython keeps each str's
// UTF-8 once made): no Python string is made per merge (substrings, the join and their hashes were
// most of reading a small file's merges).
nb::object text_bpe_merges(nb::list merges, nb::dict vocab, bool unique) {
  tokenforge::BytesMap ids;
  ids.reserve(size_t(PyDict_GET_SIZE(vocab.ptr())));
  PyObject *key, *value;
  Py_ssize_t at = 0;
  while (PyDict_Next(vocab.ptr(), &at, &key, &value)) {
    if (!PyUnicode_CheckExact(key) || !PyLong_CheckExact(value)) return nb::none();
    int overflow = 0;
    const long long id = PyLong_AsLongLongAndOverflow(value, &overflow);
    Py_ssize_t size;
    const char* text = PyUnicode_AsUTF8AndSize(key, &size);
    if (!text) {  // a lone surrogate
      PyErr_Clear();
      return nb::none();
    }
    if (overflow || id < 0 || id >= 0xFFFFFFFFll) return nb::none();
    ids.insert(reinterpret_cast<const uint8_t*>(text), uint32_t(size), uint32_t(id));
  }
  std::vector<uint32_t> rules;
  if (!tokenforge::py::parse_text_merges(merges.ptr(), unique, rules, [&](std::string_view part, uint32_t* out) {
        return ids.find(reinterpret_cast<const uint8_t*>(part.data()), part.size(), out);
      }))
    return nb::none();
  return nb::steal(PyBytes_FromStringAndSize(reinterpret_cast<const char*>(rules.data()),
                                             Py_ssize_t(rules.size() * sizeof(uint32_t))));
}
}  // namespace

void bind_byte_level_files(nb::module_& m) {
  m.def("text_bpe_merges", &text_bpe_merges, nb::arg("merges"), nb::arg("vocab"), nb::arg("unique") = false);
  m.def("json_text_shape", &json_text_shape, nb::arg("data"));
  m.def("json_value_shape", &json_value_shape, nb::arg("value").none());
  m.def("byte_level_vocab", &byte_level_vocab, nb::arg("vocab"), nb::arg("special"), nb::arg("decode_only").none() = nb::none());
  m.def("byte_level_merges", &byte_level_merges, nb::arg("merges"), nb::arg("ranks"));
  m.def("vocab_by_id", &vocab_by_id, nb::arg("vocab"));
  m.def("spelled_by_id", &spelled_by_id, nb::arg("ranks"), nb::arg("n"));
  m.def("vocab_checked", &vocab_checked, nb::arg("vocab"));
  m.def("gguf_strings", &gguf_strings, nb::arg("data"), nb::arg("pos"), nb::arg("count"));
}
