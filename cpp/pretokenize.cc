#include "pretokenize.h"

#include "unicode.h"

namespace tokenforge {
namespace {

inline bool is_other(uint8_t cls) { return !(cls & (kLetter | kNumber | kSpace)); }  // [^\s\p{L}\p{N}]
inline bool is_crlf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// ASCII fast paths. Most pieces of most text are ASCII words, maybe after one space or mark: these
// scan bytes against a table and hand over to the general code (return 0) as soon as a byte is
// not ASCII, since a non-ASCII letter or mark could continue the word.
inline bool ascii_letter(uint8_t b) { return b < 0x80 && (kAsciiClass[b] & kLetter); }
inline bool ascii_upper(uint8_t b) { return b - 'A' < 26u; }
inline bool ascii_lower(uint8_t b) { return b - 'a' < 26u; }
// The one-character prefix [^\r\n\p{L}\p{N}] of cl100k's and o200k's letter branches, in ASCII.
inline bool ascii_letter_prefix(uint8_t b) {
  return b < 0x80 && !(kAsciiClass[b] & (kLetter | kNumber)) && b != '\r' && b != '\n';
}
// Where the letters start if the piece at i is an ASCII word with at most an ASCII prefix; else i
// when s[i] is not the start of one (the caller then checks ascii_letter(s[start])).
inline size_t ascii_word_start(const uint8_t* s, size_t n, size_t i) {
  if (ascii_letter_prefix(s[i]) && s[i] != '\'' && i + 1 < n && ascii_letter(s[i + 1])) return i + 1;
  return i;
}

// End of the run of characters whose class has any bit of `mask`, starting at i.
inline size_t run_of(const uint8_t* s, size_t n, size_t i, uint8_t mask) {
  while (i < n) {
    Char c = decode_char(s, n, i);
    if (!(c.cls & mask)) break;
    i += c.len;
  }
  return i;
}

inline size_t run_of_other(const uint8_t* s, size_t n, size_t i) {
  while (i < n) {
    Char c = decode_char(s, n, i);
    if (!is_other(c.cls)) break;
    i += c.len;
  }
  return i;
}

// At most `limit` characters of \p{N} from i.
inline size_t digits_upto(const uint8_t* s, size_t n, size_t i, int limit) {
  for (int k = 0; k < limit && i < n; ++k) {
    Char c = decode_char(s, n, i);
    if (!(c.cls & kNumber)) break;
    i += c.len;
  }
  return i;
}

// The contraction after an apostrophe at i: "'s", "'d", "'m", "'t", "'ll", "'ve", "'re".
// Returns the end of the match or 0 when there is none. With ignore_case the letters match in any
// case, and 's' also matches U+017F LATIN SMALL LETTER LONG S, its Unicode simple case fold.
inline size_t contraction_end(const uint8_t* s, size_t n, size_t i, bool ignore_case) {
  if (i + 1 >= n || s[i] != '\'') return 0;
  auto lower = [&](uint8_t b) -> uint8_t { return ignore_case && b >= 'A' && b <= 'Z' ? b + 32 : b; };
  uint8_t a = lower(s[i + 1]);
  if (a == 's' || a == 'd' || a == 'm' || a == 't') return i + 2;
  if (ignore_case && s[i + 1] == 0xC5 && i + 2 < n && s[i + 2] == 0xBF) return i + 3;  // 'ſ
  if (i + 2 < n) {
    uint8_t b = lower(s[i + 2]);
    if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e')) return i + 3;
  }
  return 0;
}

// The whitespace branches, for a whitespace run s[i..j):
//   `\s++$` / `\s+(?!\S)` at the end of text  -> the whole run
//   `\s*[\r\n]` / `\s*[\r\n]+`              -> up to and including the run's last CR/LF
//   `\s+(?!\S)` before a non-space            -> the run minus its last character, if that leaves one
//   `\s` / `\s+`                               -> the single character
// cl100k tries the end-of-text branch before the CR/LF one; o200k the other way round; GPT-2 has no
// CR/LF branch.
enum class NewlineBranch { kNone, kAfterEnd, kBeforeEnd };

inline size_t whitespace_piece(const uint8_t* s, size_t n, size_t i, NewlineBranch newline) {
  size_t j = i, last_start = i, last_crlf_end = 0;
  while (j < n) {
    Char c = decode_char(s, n, j);
    if (!(c.cls & kSpace)) break;
    last_start = j;
    j += c.len;
    if (is_crlf(c.cp)) last_crlf_end = j;
  }
  if (j == i) return i + decode_char(s, n, i).len;  // not whitespace: unreachable, but never stall
  if (newline == NewlineBranch::kBeforeEnd && last_crlf_end) return last_crlf_end;
  if (j == n) return n;
  if (newline == NewlineBranch::kAfterEnd && last_crlf_end) return last_crlf_end;
  if (last_start > i) return last_start;
  return j;  // a single character
}

// r50k / GPT-2:  '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
size_t scan_gpt2(const uint8_t* s, size_t n, size_t i) {
  if (size_t e = contraction_end(s, n, i, /*ignore_case=*/false)) return e;
  Char c = decode_char(s, n, i);
  size_t j = i;
  if (c.cp == ' ' && i + 1 < n) {  // the optional leading space of branches 2-4
    Char next = decode_char(s, n, i + 1);
    if (!(next.cls & kSpace)) {
      j = i + 1;
      c = next;
    }
  }
  if (c.cls & kLetter) return run_of(s, n, j, kLetter);
  if (c.cls & kNumber) return run_of(s, n, j, kNumber);
  if (is_other(c.cls)) return run_of_other(s, n, j);
  return whitespace_piece(s, n, i, NewlineBranch::kNone);
}

// cl100k:  '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//          |\s++$|\s*[\r\n]|\s+(?!\S)|\s
size_t scan_cl100k(const uint8_t* s, size_t n, size_t i) {
  size_t w = ascii_word_start(s, n, i);  // not after an apostrophe: the contraction comes first
  if (ascii_letter(s[w])) {  // \p{L}++ over ASCII letters, unless a non-ASCII byte may continue it
    size_t e = w + 1;
    while (e < n && ascii_letter(s[e])) ++e;
    if (e == n || s[e] < 0x80) return e;
  }
  if (size_t e = contraction_end(s, n, i, /*ignore_case=*/true)) return e;
  Char c = decode_char(s, n, i);
  if (c.cls & kLetter) return run_of(s, n, i, kLetter);
  size_t after = i + c.len;
  if (!(c.cls & kNumber) && !is_crlf(c.cp)) {
    // One possessive prefix character (any space but CR/LF, or punctuation, or a mark) then letters.
    if (after < n && (decode_char(s, n, after).cls & kLetter)) return run_of(s, n, after, kLetter);
  }
  if (c.cls & kNumber) return digits_upto(s, n, i, 3);
  size_t j = i;
  if (c.cp == ' ' && after < n && is_other(decode_char(s, n, after).cls)) j = after;
  if (j != i || is_other(c.cls)) {
    size_t e = run_of_other(s, n, j);
    while (e < n && (s[e] == '\r' || s[e] == '\n')) ++e;
    return e;
  }
  return whitespace_piece(s, n, i, NewlineBranch::kAfterEnd);
}

// o200k, branches A and B (the letter branches), starting after the optional prefix at p:
//   A: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+   (U* W+)
//   B: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*   (U+ W*)
// Both end with an optional case-insensitive contraction. Returns 0 when the branch fails.
//
// A, derived from backtracking: U* greedily takes the run of U to k. If the character at k is in W,
// W+ takes the W run from k. Otherwise U* gives back characters one at a time until W+ can start,
// i.e. at the last character of the U run that is also in W (Lm, Lo or a mark), and W+ ends right
// after it (the characters after it in the run are not in W). If there is none, A fails.
size_t o200k_branch_a(const uint8_t* s, size_t n, size_t p) {
  size_t k = p, last_w_end = 0;
  while (k < n) {
    Char c = decode_char(s, n, k);
    if (!(c.cls & kUpperish)) break;
    k += c.len;
    if (c.cls & kLowerish) last_w_end = k;
  }
  size_t e;
  if (k < n && (decode_char(s, n, k).cls & kLowerish)) {
    e = run_of(s, n, k, kLowerish);
  } else if (last_w_end) {
    e = last_w_end;
  } else {
    return 0;
  }
  if (size_t ce = contraction_end(s, n, e, /*ignore_case=*/true)) return ce;
  return e;
}

size_t o200k_branch_b(const uint8_t* s, size_t n, size_t p) {
  size_t k = run_of(s, n, p, kUpperish);
  if (k == p) return 0;
  size_t e = run_of(s, n, k, kLowerish);
  if (size_t ce = contraction_end(s, n, e, /*ignore_case=*/true)) return ce;
  return e;
}

// o200k:  A|B|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// where A and B each start with an optional [^\r\n\p{L}\p{N}] prefix (greedy: tried first).
// Branches A and B over ASCII letters from p (s[p] is one): A takes the capitals then the small
// letters after them; without small letters A fails (no capital is in W) and B takes the
// capitals. Returns 0 when a non-ASCII byte ends a run (a mark or letter could continue it).
size_t o200k_ascii_word(const uint8_t* s, size_t n, size_t p) {
  size_t e = p;
  while (e < n && ascii_upper(s[e])) ++e;
  while (e < n && ascii_lower(s[e])) ++e;
  if (e < n && s[e] >= 0x80) return 0;
  if (size_t ce = contraction_end(s, n, e, /*ignore_case=*/true)) return ce;
  return e;
}

size_t scan_o200k(const uint8_t* s, size_t n, size_t i) {
  size_t w = ascii_word_start(s, n, i);
  if (ascii_letter(s[w])) {
    if (size_t e = o200k_ascii_word(s, n, w)) return e;
  }
  constexpr uint8_t kWordish = kUpperish | kLowerish;  // can start U* / U+ / W+
  Char c = decode_char(s, n, i);
  size_t after = i + c.len;
  bool prefix_ok = !(c.cls & (kLetter | kNumber)) && !is_crlf(c.cp);
  // The branches with the prefix need a letter or mark after it; those without need one at i.
  bool with_prefix = prefix_ok && after < n && (decode_char(s, n, after).cls & kWordish);
  bool without_prefix = c.cls & kWordish;
  if (with_prefix) {
    if (size_t e = o200k_branch_a(s, n, after)) return e;
  }
  if (without_prefix) {
    if (size_t e = o200k_branch_a(s, n, i)) return e;
  }
  if (with_prefix) {
    if (size_t e = o200k_branch_b(s, n, after)) return e;
  }
  if (without_prefix) {
    if (size_t e = o200k_branch_b(s, n, i)) return e;
  }
  if (c.cls & kNumber) return digits_upto(s, n, i, 3);
  size_t j = i;
  if (c.cp == ' ' && after < n && is_other(decode_char(s, n, after).cls)) j = after;
  if (j != i || is_other(c.cls)) {
    size_t e = run_of_other(s, n, j);
    while (e < n && (s[e] == '\r' || s[e] == '\n' || s[e] == '/')) ++e;
    return e;
  }
  return whitespace_piece(s, n, i, NewlineBranch::kBeforeEnd);
}

}  // namespace

PieceScanner scanner_for(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2: return scan_gpt2;
    case SplitPattern::kCl100k: return scan_cl100k;
    case SplitPattern::kO200k: return scan_o200k;
  }
  return scan_gpt2;
}

}  // namespace tokenforge
