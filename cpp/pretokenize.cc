#include "pretokenize.h"

#include "unicode.h"

namespace tokenforge {
namespace {
using ascii_fast::contraction_end;

inline bool is_other(uint8_t cls) { return !(cls & (kLetter | kNumber | kSpace)); }  // [^\s\p{L}\p{N}]
inline bool is_crlf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

// End of the run of characters whose class has any bit of `mask`, starting at i.
inline size_t run_of(const uint8_t* s, size_t n, size_t i, uint8_t mask) {
  while (i < n) {
    Char c = decode_char(s, n, i);
    if (!(c.cls & mask)) break;
    i += c.len;
  }
  return i;
}

// Whether s[i] may start one of the three-byte letters the blocks know (block_scan.h: E3..ED).
inline bool may_start_known_letter(const uint8_t* s, size_t i) { return uint8_t(s[i] - 0xE3) <= 0xED - 0xE3; }

// The end of the bytes from i on that `known` (64 bytes at a time) says are known: a run of
// Chinese or Japanese letters is often a whole clause, and these skip it without decoding it.
template <uint64_t (*KnownSse2)(const uint8_t*), uint64_t (*KnownWide)(const uint8_t*)>
inline size_t known_run_end(const uint8_t* s, size_t n, size_t i) {
#ifdef __SSE2__
  const bool wide = block_scan::wide_blocks();
  while (i + 64 <= n) {
    uint64_t known = wide ? KnownWide(s + i) : KnownSse2(s + i);
    if (~known) return i + size_t(__builtin_ctzll(~known));
    i += 64;
  }
#else
  (void)s;
  (void)n;
#endif
  return i;
}

// run_of(..., kLetter) from i, whose character is c: the letters the blocks know skipped first.
inline size_t letters_from(const uint8_t* s, size_t n, size_t i, const Char& c) {
  if (c.len == 3 && may_start_known_letter(s, i))
    i = known_run_end<block_scan::letter_bytes_sse2, block_scan::letter_bytes_wide>(s, n, i);
  return run_of(s, n, i, kLetter);
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
  if (c.cls & kLetter) return letters_from(s, n, j, c);
  if (c.cls & kNumber) return run_of(s, n, j, kNumber);
  if (is_other(c.cls)) return run_of_other(s, n, j);
  return whitespace_piece(s, n, i, NewlineBranch::kNone);
}

// cl100k:  '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//          |\s++$|\s*[\r\n]|\s+(?!\S)|\s
size_t scan_cl100k(const uint8_t* s, size_t n, size_t i) {
  if (size_t e = ascii_fast::cl100k_word(s, n, i)) return e;
  if (size_t e = contraction_end(s, n, i, /*ignore_case=*/true)) return e;
  Char c = decode_char(s, n, i);
  if (c.cls & kLetter) return letters_from(s, n, i, c);
  size_t after = i + c.len;
  if (!(c.cls & kNumber) && !is_crlf(c.cp) && after < n) {
    // One possessive prefix character (any space but CR/LF, or punctuation, or a mark) then letters.
    Char next = decode_char(s, n, after);
    if (next.cls & kLetter) return letters_from(s, n, after, next);
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
  bool skipped = false;
  while (k < n) {
    Char c = decode_char(s, n, k);
    if (!(c.cls & kUpperish)) break;
    if (!skipped && c.len == 3 && (c.cls & kLowerish) && may_start_known_letter(s, k)) {
      // Letters without case (in U and in W) that the blocks know: skipped at once (once per piece)
      skipped = true;
      size_t e = known_run_end<block_scan::caseless_bytes_sse2, block_scan::caseless_bytes_wide>(s, n, k);
      if (e > k) {
        k = last_w_end = e;
        continue;
      }
    }
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
size_t scan_o200k(const uint8_t* s, size_t n, size_t i) {
  if (size_t e = ascii_fast::o200k_word(s, n, i)) return e;
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
