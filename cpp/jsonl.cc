// See jsonl.h. The JSON grammar is RFC 8259's; the parser validates the whole record in one pass
// and unescapes the strings of the field on the way (the last member of a name wins, as in
// json.loads).
#include "jsonl.h"

#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "unicode.h"

namespace tokenforge {

namespace {

// Writes code point cp as UTF-8 at w; returns the end.
inline char* put_utf8(uint32_t cp, char* w) {
  if (cp < 0x80) {
    *w++ = char(cp);
  } else if (cp < 0x800) {
    *w++ = char(0xC0 | (cp >> 6));
    *w++ = char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *w++ = char(0xE0 | (cp >> 12));
    *w++ = char(0x80 | ((cp >> 6) & 0x3F));
    *w++ = char(0x80 | (cp & 0x3F));
  } else {
    *w++ = char(0xF0 | (cp >> 18));
    *w++ = char(0x80 | ((cp >> 12) & 0x3F));
    *w++ = char(0x80 | ((cp >> 6) & 0x3F));
    *w++ = char(0x80 | (cp & 0x3F));
  }
  return w;
}

inline int hex_value(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether none of 8 bytes is '"', '\\', a control character or non-ASCII (the common case inside
// a string, skipped 8 bytes at a time).
inline bool plain8(const uint8_t* p) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  uint64_t w;
  std::memcpy(&w, p, 8);
  uint64_t quote = w ^ (kOnes * '"'), backslash = w ^ (kOnes * '\\');
  uint64_t special = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((w - kOnes * 0x20) & ~w) | w;
  return !(special & kHigh);
}

// The field of a record, as the parser found it.
struct Record {
  std::string& text;
  bool found = false, is_string = false, lone = false;
};

constexpr int kMaxDepth = 64;  // deeper records go to the Python reader (which has its own limit)

struct Parser {
  const uint8_t* s;
  size_t n;
  size_t i = 0;

  void skip_space() {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }

  bool literal(const char* word) {
    size_t len = std::strlen(word);
    if (n - i < len || std::memcmp(s + i, word, len) != 0) return false;
    i += len;
    return true;
  }

  // A string starting at s[i] == '"'; on success i is past the closing quote and *escaped tells
  // whether it has a backslash. With `out`, its value is appended there as UTF-8, and *lone is set
  // if it holds a lone surrogate escape (valid JSON, but not UTF-8: the Python reader decides).
  // The value is written through a pointer into room made first: an escape is never shorter than
  // what it stands for (2 bytes for 1, 6 for at most 3, 12 for 4), so the rest of the line is
  // enough (session 35: the strings of real JSON lines, where non-ASCII text is mostly \uXXXX
  // escapes, were appended a run and a character at a time).
  bool string(bool* escaped, std::string* out = nullptr, bool* lone = nullptr) {
    ++i;
    *escaped = false;
    const size_t base = out ? out->size() : 0;
    if (out) out->resize(base + (n - i));
    char* w = out ? out->data() + base : nullptr;
    for (;;) {
      const size_t run = i;  // the bytes s[run, i) are copied as they are
      i = plain_end(i);
      while (i < n && s[i] >= 0x80) {  // UTF-8 as it is, checked
        const size_t len = utf8_sequence(s, n, i);
        if (!len) return fail(out, base);
        i = plain_end(i + len);
      }
      if (w) {
        std::memcpy(w, s + run, i - run);
        w += i - run;
      }
      if (i >= n) return fail(out, base);
      const uint8_t c = s[i];
      if (c == '"') {
        ++i;
        if (out) out->resize(size_t(w - out->data()));
        return true;
      }
      if (c < 0x20) return fail(out, base);
      *escaped = true;  // (a backslash)
      if (!escape(&w, lone)) return fail(out, base);
    }
  }

  bool fail(std::string* out, size_t base) {
    if (out) out->resize(base);
    return false;
  }

  // The first position from at on that holds '"', '\\', a control character or a byte of a
  // non-ASCII character (n if none): 16 bytes at a time with SSE2 (a signed compare with 0x20
  // catches the controls and the bytes from 0x80 at once), else 8.
  size_t plain_end(size_t at) const {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    for (; at + 16 <= n; at += 16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + at));
      const __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, quote), _mm_cmpeq_epi8(b, backslash)),
                                           _mm_cmplt_epi8(b, space));
      if (const int mask = _mm_movemask_epi8(special)) return at + size_t(__builtin_ctz(unsigned(mask)));
    }
#endif
    while (at + 8 <= n && plain8(s + at)) at += 8;
    for (; at < n; ++at) {
      const uint8_t c = s[at];
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return at;
    }
    return n;
  }

  // Four hex digits at s[at], or -1.
  int32_t hex4(size_t at) const {
    if (n - at < 4) return -1;
    int32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int h = hex_value(s[at + k]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  // The escape at s[i] == '\\': written at *w (when w is set) and i moved past it.
  bool escape(char** w, bool* lone) {
    if (i + 1 >= n) return false;
    char plain;
    switch (s[i + 1]) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        int32_t cp = hex4(i + 2);
        if (cp < 0) return false;
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && n - i >= 6 && s[i] == '\\' && s[i + 1] == 'u') {
          int32_t low = hex4(i + 2);
          if (low >= 0xDC00 && low <= 0xDFFF) {  // a surrogate pair: one character
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            i += 6;
          }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) {
          if (lone) *lone = true;
        } else if (*w) {
          *w = put_utf8(uint32_t(cp), *w);
        }
        return true;
      }
      default:
        return false;
    }
    if (*w) *(*w)++ = plain;
    i += 2;
    return true;
  }

  bool number() {
    if (s[i] == '-') ++i;
    if (i >= n) return false;
    if (s[i] == '0') {
      ++i;
    } else if (s[i] >= '1' && s[i] <= '9') {
      while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    } else {
      return false;
    }
    if (i < n && s[i] == '.') {
      ++i;
      size_t start = i;
      while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == start) return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
      size_t start = i;
      while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == start) return false;
    }
    return true;
  }

  bool value(int depth) {
    if (i >= n) return false;
    bool escaped;
    switch (s[i]) {
      case '"':
        return string(&escaped);
      case '{':
        return object(depth + 1, {}, nullptr);
      case '[': {
        if (depth + 1 > kMaxDepth) return false;
        ++i;
        skip_space();
        if (i < n && s[i] == ']') {
          ++i;
          return true;
        }
        while (true) {
          skip_space();
          if (!value(depth + 1)) return false;
          skip_space();
          if (i >= n) return false;
          if (s[i] == ']') {
            ++i;
            return true;
          }
          if (s[i] != ',') return false;
          ++i;
        }
      }
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) && number();
    }
  }

  // An object starting at s[i] == '{'. With a `record` (top level only), the last value of its
  // field is recorded there, and a key with escapes fails (it might spell the field).
  bool object(int depth, std::string_view field, Record* record) {
    if (depth > kMaxDepth) return false;
    ++i;
    skip_space();
    if (i < n && s[i] == '}') {
      ++i;
      return true;
    }
    while (true) {
      skip_space();
      if (i >= n || s[i] != '"') return false;
      size_t key_start = i + 1;
      bool escaped;
      if (!string(&escaped)) return false;
      bool is_field = false;
      if (record && !escaped) {
        is_field = i - 1 - key_start == field.size() && std::memcmp(s + key_start, field.data(), field.size()) == 0;
      } else if (record) {  // a key with escapes: compared unescaped (one with a lone surrogate: kOther)
        std::string key;
        bool lone = false;
        size_t end = i;
        i = key_start - 1;
        string(&escaped, &key, &lone);
        i = end;
        if (lone) return false;
        is_field = key == field;
      }
      skip_space();
      if (i >= n || s[i] != ':') return false;
      ++i;
      skip_space();
      if (is_field) {
        record->found = true;
        record->is_string = i < n && s[i] == '"';
        record->lone = false;
        if (record->is_string) {
          record->text.clear();
          if (!string(&escaped, &record->text, &record->lone)) return false;
        } else if (!value(depth)) {
          return false;
        }
      } else if (!value(depth)) {
        return false;
      }
      skip_space();
      if (i >= n) return false;
      if (s[i] == '}') {
        ++i;
        return true;
      }
      if (s[i] != ',') return false;
      ++i;
    }
  }
};

}  // namespace

RecordKind read_jsonl_record(const uint8_t* s, size_t n, std::string_view field, std::string& text) {
  bool blank = true;
  for (size_t k = 0; k < n && blank; ++k)
    blank = s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r' || s[k] == '\v' || s[k] == '\f';
  if (blank) return RecordKind::kBlank;
  Parser p{s, n};
  p.skip_space();
  if (p.i >= n || s[p.i] != '{') return RecordKind::kOther;
  Record record{text};
  if (!p.object(1, field, &record)) return RecordKind::kOther;
  p.skip_space();
  if (p.i != n || !record.found || !record.is_string || record.lone) return RecordKind::kOther;
  return RecordKind::kText;
}

}  // namespace tokenforge
