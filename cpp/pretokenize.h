// Hand-written scanners for the named split patterns (GPT-2, cl100k, o200k).
//
// Each scanner returns where the piece starting at byte i ends, exactly as the pattern's regex would
// with leftmost-first alternation (the semantics of tiktoken's regex engine), treating s[0..n) as the
// whole text: `$` and lookaheads see n as the end. The derivation of each branch from the regex is
// written beside it in pretokenize.cc; the tests check every scanner against tiktoken and the regex
// module.
#pragma once
#include <cstddef>
#include <cstdint>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <algorithm>
#include <type_traits>

#include "block_scan.h"
#include "unicode.h"

namespace tokenforge {

enum class SplitPattern : int { kGpt2 = 0, kCl100k = 1, kO200k = 2 };

using PieceScanner = size_t (*)(const uint8_t* s, size_t n, size_t i);

PieceScanner scanner_for(SplitPattern pattern);

// ASCII fast paths. Most pieces of most text are ASCII words, maybe after one space or mark. These
// functions scan bytes against a table and return the piece's end, or 0 to hand over to the full
// scanner as soon as a byte is not ASCII (a non-ASCII letter or mark could continue the word).
// The scanners call them first, and for_each_piece inlines them into the loop over pieces.
namespace ascii_fast {

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

inline bool letter(uint8_t b) { return b < 0x80 && (kAsciiClass[b] & kLetter); }

// The end of the run from e of the bytes b with (b | Fold) in [Lo, Lo + 26): ASCII letters
// (Fold 0x20, Lo 'a'), capitals (0, 'A') or small letters (0, 'a'). With SSE2 (x86-64's
// baseline) 16 bytes are classified at once and the run's end is a count of trailing ones: no
// branch per byte, and no mispredicted loop exit at the end of every word. The bytes are shifted
// so that the 26 wanted values land on -128..-103 and one signed compare tests the range (bytes
// >= 0x80 land on -65..30, never in it). The byte loop finishes the last 15 bytes of the text, and
// is the whole loop without SSE2.
template <uint8_t Fold, uint8_t Lo>
inline size_t ascii_run(const uint8_t* s, size_t n, size_t e) {
#ifdef __SSE2__
  const __m128i fold = _mm_set1_epi8(char(Fold)), shift = _mm_set1_epi8(char(0x80 - Lo)),
                limit = _mm_set1_epi8(char(-128 + 26));
  for (; e + 16 <= n; e += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + e));
    __m128i in = _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(v, fold), shift), limit);
    unsigned outside = ~unsigned(_mm_movemask_epi8(in)) & 0xFFFFu;
    if (outside) return e + size_t(__builtin_ctz(outside));
  }
#endif
  while (e < n && unsigned(uint8_t(s[e] | Fold) - Lo) < 26u) ++e;
  return e;
}
inline size_t letter_run(const uint8_t* s, size_t n, size_t e) { return ascii_run<0x20, 'a'>(s, n, e); }
inline size_t upper_run(const uint8_t* s, size_t n, size_t e) { return ascii_run<0, 'A'>(s, n, e); }
inline size_t lower_run(const uint8_t* s, size_t n, size_t e) { return ascii_run<0, 'a'>(s, n, e); }
// The one-character prefix [^\r\n\p{L}\p{N}] of cl100k's and o200k's letter branches, in ASCII.
inline bool letter_prefix(uint8_t b) {
  return b < 0x80 && !(kAsciiClass[b] & (kLetter | kNumber)) && b != '\r' && b != '\n';
}
// Where the letters start if the piece at i is an ASCII word after at most one prefix character
// (never an apostrophe: cl100k's contraction branch comes first); else i.
inline size_t word_start(const uint8_t* s, size_t n, size_t i) {
  if (letter_prefix(s[i]) && s[i] != '\'' && i + 1 < n && letter(s[i + 1])) return i + 1;
  return i;
}

// cl100k's `[^\r\n\p{L}\p{N}]?+\p{L}++` over ASCII.
inline size_t cl100k_word(const uint8_t* s, size_t n, size_t i) {
  size_t w = word_start(s, n, i);
  if (!letter(s[w])) return 0;
  size_t e = letter_run(s, n, w + 1);
  return e == n || s[e] < 0x80 ? e : 0;
}

// o200k's letter branches A and B over ASCII letters: A takes the capitals then the small letters
// after them; without small letters A fails (no capital is in its W class) and B takes the
// capitals. Either ends with an optional contraction.
inline size_t o200k_word(const uint8_t* s, size_t n, size_t i) {
  size_t w = word_start(s, n, i);
  if (!letter(s[w])) return 0;
  size_t e = lower_run(s, n, upper_run(s, n, w));
  if (e < n && s[e] >= 0x80) return 0;
  if (size_t ce = contraction_end(s, n, e, /*ignore_case=*/true)) return ce;
  return e;
}

// The pieces that are not words, over ASCII, for cl100k (Cl100k true) and o200k: digits
// `\p{N}{1,3}`, punctuation ` ?[^\s\p{L}\p{N}]+` then `[\r\n]*` (cl100k) or `[\r\n/]*` (o200k),
// and runs of whitespace (the branches `\s++$`, `\s*[\r\n]`, `\s+(?!\S)`, `\s`, in each pattern's
// order, as whitespace_piece in pretokenize.cc). Called where the word path found no word; 0
// hands over to the full scanner whenever a byte that decides the piece is not ASCII (a non-ASCII
// digit, mark, letter or space could extend or change it) and at an apostrophe (contractions).
inline bool other(uint8_t b) { return b < 0x80 && !(kAsciiClass[b] & (kLetter | kNumber | kSpace)); }
inline bool space(uint8_t b) { return b < 0x80 && (kAsciiClass[b] & kSpace); }

template <bool Cl100k>
inline size_t non_word(const uint8_t* s, size_t n, size_t i) {
  uint8_t b = s[i];
  if (b >= 0x80 || b == '\'' || (i + 1 < n && s[i + 1] >= 0x80)) return 0;
  if (unsigned(b - '0') < 10u) {
    size_t e = i + 1;
    while (e < n && e < i + 3 && unsigned(s[e] - '0') < 10u) ++e;
    return e < i + 3 && e < n && s[e] >= 0x80 ? 0 : e;
  }
  size_t j = b == ' ' && i + 1 < n && other(s[i + 1]) ? i + 1 : i;
  if (other(s[j])) {
    size_t e = j + 1;
    while (e < n && other(s[e])) ++e;
    while (e < n && (s[e] == '\r' || s[e] == '\n' || (!Cl100k && s[e] == '/'))) ++e;
    return e < n && s[e] >= 0x80 ? 0 : e;
  }
  if (!space(b)) return 0;
  size_t e = i, last_crlf_end = 0;
  while (e < n && space(s[e])) {
    ++e;
    if (s[e - 1] == '\r' || s[e - 1] == '\n') last_crlf_end = e;
  }
  if (e < n && s[e] >= 0x80) return 0;
  if (!Cl100k && last_crlf_end) return last_crlf_end;  // o200k: \s*[\r\n]+ before the end of text
  if (e == n) return n;
  if (Cl100k && last_crlf_end) return last_crlf_end;
  return e - 1 > i ? e - 1 : e;  // \s+(?!\S) leaves the last space to the next piece; else \s
}

inline size_t cl100k_piece(const uint8_t* s, size_t n, size_t i) {
  if (size_t e = cl100k_word(s, n, i)) return e;
  return letter(s[word_start(s, n, i)]) ? 0 : non_word<true>(s, n, i);
}
inline size_t o200k_piece(const uint8_t* s, size_t n, size_t i) {
  if (size_t e = o200k_word(s, n, i)) return e;
  return letter(s[word_start(s, n, i)]) ? 0 : non_word<false>(s, n, i);
}

}  // namespace ascii_fast

inline size_t no_fast_path(const uint8_t*, size_t, size_t) { return 0; }

// The piece at i the byte-at-a-time way: where it ends, by the ASCII path, else the scanner.
template <size_t (*Fast)(const uint8_t*, size_t, size_t)>
inline size_t slow_piece_end(PieceScanner scan, const uint8_t* s, size_t n, size_t i) {
  size_t e = Fast(s, n, i);
  return e ? e : scan(s, n, i);
}

// When the pieces of a text go the block way (pieces_ending_in): the bytes before `slow_until` go
// the slow way, and after a block in which no piece ended, the next `backoff` bytes (at least the
// piece at hand). A clause of Chinese or Japanese letters is one piece of often more than 64
// bytes, so in such text most blocks end no piece and cost as much as scanning their bytes; the
// backoff grows eightfold with each such block in a row (up to 4096 bytes), and a block that ends
// a piece sets it back to one piece. (Japanese manual pages: 11% of the encoding time went to
// blocks that ended no piece.)
struct BlockPace {
  size_t slow_until = 0;
  size_t backoff = 1;
};

// The pieces ending in the 64 bytes from s + i (64 must be readable), as a mask: bit k set when a
// piece ends at s + i + k; the pieces run from i to the first set bit, from there to the next, and
// so on. 0 when none is certain: the piece at i goes the slow way. Moves pace->slow_until past a
// block that stopped early or ended no piece.
template <block_scan::BlockStarts (*Starts)(const uint8_t*)>
inline uint64_t pieces_ending_in(const uint8_t* s, size_t i, BlockPace* pace) {
#ifdef __SSE2__
  block_scan::BlockStarts b = Starts(s + i);
  uint64_t inner = b.starts & ~uint64_t(1) & ((uint64_t(1) << b.trusted) - 1);  // (trusted < 64)
  // A block that stops within its first 16 bytes at a foreign byte (other scripts, mostly) is
  // not worth its cost: the next 64 bytes go the slow way. (At a contraction: the next piece.)
  if (b.trusted < 16) pace->slow_until = b.foreign_soon ? i + 64 : i + 1;
  if (inner) {
    pace->backoff = 1;
    return inner;
  }
  pace->slow_until = std::max(pace->slow_until, i + pace->backoff);
  pace->backoff = std::min<size_t>(pace->backoff * 8, 4096);
  return 0;
#else
  (void)s;
  pace->slow_until = i + 1;
  return 0;
#endif
}

// The loop over pieces for the named patterns: 64 bytes at a time as masks (block_scan.h) while
// 64 bytes remain, the pieces it leaves (and the last bytes) by the ASCII path, then the scanner.
// (Encoder::encode_ordinary runs the same loop with its own work per block.)
template <block_scan::BlockStarts (*Starts)(const uint8_t*), size_t (*Fast)(const uint8_t*, size_t, size_t), class F>
void for_each_piece_fast(PieceScanner scan, const uint8_t* s, size_t n, F&& f) {
  size_t i = 0;
  BlockPace pace;
  while (i + 64 <= n) {
    uint64_t ends = i < pace.slow_until ? 0 : pieces_ending_in<Starts>(s, i, &pace);
    if (!ends) {
      size_t e = slow_piece_end<Fast>(scan, s, n, i);
      f(i, e);
      i = e;
      continue;
    }
    for (size_t begin = i; ends; ends &= ends - 1) {
      size_t e = begin + size_t(__builtin_ctzll(ends));
      f(i, e);
      i = e;
    }
  }
  for (size_t e; i < n; i = e) f(i, e = slow_piece_end<Fast>(scan, s, n, i));
}

// The block scanner and the ASCII path of a named pattern, as types (a C++17 lambda cannot take
// template arguments): decltype(starts)::value and decltype(fast)::value.
template <block_scan::BlockStarts (*Starts)(const uint8_t*)>
using StartsFn = std::integral_constant<block_scan::BlockStarts (*)(const uint8_t*), Starts>;
template <size_t (*Fast)(const uint8_t*, size_t, size_t)>
using FastFn = std::integral_constant<size_t (*)(const uint8_t*, size_t, size_t), Fast>;

// If scan is one of the named patterns' scanners, calls run(StartsFn<...>{}, FastFn<...>{}) with
// its block scanner (the AVX-512BW one where it runs: block_scan.h) and its ASCII path, and
// returns true; else returns false. The one place that pairs the named patterns with their loops.
template <class Run>
bool with_named_pattern(PieceScanner scan, Run&& run) {
  using namespace block_scan;
  if (!scan) return false;
  const bool wide = wide_blocks();
  if (scan == scanner_for(SplitPattern::kCl100k)) {
    if (wide) run(StartsFn<cl100k_piece_starts_wide>{}, FastFn<ascii_fast::cl100k_piece>{});
    else run(StartsFn<cl100k_piece_starts>{}, FastFn<ascii_fast::cl100k_piece>{});
  } else if (scan == scanner_for(SplitPattern::kO200k)) {
    if (wide) run(StartsFn<o200k_piece_starts_wide>{}, FastFn<ascii_fast::o200k_piece>{});
    else run(StartsFn<o200k_piece_starts>{}, FastFn<ascii_fast::o200k_piece>{});
  } else if (scan == scanner_for(SplitPattern::kGpt2)) {
    if (wide) run(StartsFn<gpt2_piece_starts_wide>{}, FastFn<no_fast_path>{});
    else run(StartsFn<gpt2_piece_starts>{}, FastFn<no_fast_path>{});
  } else {
    return false;
  }
  return true;
}

// Calls f(begin, end) for every piece of s[0..n), in order.
template <class F>
void for_each_piece(PieceScanner scan, const uint8_t* s, size_t n, F&& f) {
  if (with_named_pattern(scan, [&](auto starts, auto fast) {
        for_each_piece_fast<decltype(starts)::value, decltype(fast)::value>(scan, s, n, f);
      }))
    return;
  for (size_t i = 0; i < n;) {
    size_t e = scan(s, n, i);
    f(i, e);
    i = e;
  }
}

}  // namespace tokenforge
