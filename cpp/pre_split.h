// The word-splitting pre-tokenizers of the other tokenizer families (Whitespace, WhitespaceSplit,
// BERT, Punctuation), over a character-class table given at start-up.
//
// The classes are Hugging Face's (tokenforge/_hf_unicode.py: word = \w of its Whitespace
// pre-tokenizer, space, punctuation), passed in as code point ranges, so the pieces are HF's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tokenforge {

enum class WordSplit : int {
  kWhitespace = 0,       // \w+ | [^\w\s]+
  kWhitespaceSplit = 1,  // [^\s]+
  kBert = 2,             // punctuation alone | [^\s punct]+
  kPunctuation = 3,      // punctuation alone | [^punct]+
};

enum WordClass : uint8_t { kWordChar = 1, kSpaceChar = 2, kPunctChar = 4 };

class WordClassTable {
 public:
  using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive
  WordClassTable(const Ranges& word, const Ranges& space, const Ranges& punct);
  uint8_t at(uint32_t cp) const { return cp < table_.size() ? table_[cp] : 0; }

 private:
  std::vector<uint8_t> table_;
};

// Calls f(begin, end) with the byte offsets of every piece of s[0..n) (valid UTF-8), in order.
template <class F>
void split_words(const WordClassTable& t, WordSplit how, const uint8_t* s, size_t n, F&& f);

// One decoded character for the splitter: (code point, byte length). Invalid bytes: (0xFFFD, 1).
inline std::pair<uint32_t, size_t> next_char(const uint8_t* s, size_t n, size_t i) {
  uint8_t b = s[i];
  if (b < 0x80) return {b, 1};
  size_t len = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  if (b < 0xC0 || i + len > n) return {0xFFFD, 1};
  uint32_t cp = len == 2 ? (b & 0x1Fu) : len == 3 ? (b & 0x0Fu) : (b & 0x07u);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3Fu);
  return {cp, len};
}

template <class F>
void split_words(const WordClassTable& t, WordSplit how, const uint8_t* s, size_t n, F&& f) {
  // Each piece is a maximal run of characters of one "kind"; kind 0 is dropped (whitespace), and
  // kinds marked `single` make one piece per character (punctuation).
  auto kind_of = [&](uint8_t c) -> int {
    switch (how) {
      case WordSplit::kWhitespace:
        return (c & kWordChar) ? 1 : (c & kSpaceChar) ? 0 : 2;
      case WordSplit::kWhitespaceSplit:
        return (c & kSpaceChar) ? 0 : 1;
      case WordSplit::kBert:
        return (c & kSpaceChar) ? 0 : (c & kPunctChar) ? 3 : 1;
      case WordSplit::kPunctuation:
        return (c & kPunctChar) ? 3 : 1;
    }
    return 1;
  };
  size_t i = 0;
  while (i < n) {
    auto [cp, len] = next_char(s, n, i);
    int k = kind_of(t.at(cp));
    if (k == 0) {
      i += len;
      continue;
    }
    size_t start = i;
    i += len;
    if (k != 3) {
      while (i < n) {
        auto [cp2, len2] = next_char(s, n, i);
        if (kind_of(t.at(cp2)) != k) break;
        i += len2;
      }
    }
    f(start, i);
  }
}

}  // namespace tokenforge
