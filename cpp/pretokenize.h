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

namespace tokenforge {

enum class SplitPattern : int { kGpt2 = 0, kCl100k = 1, kO200k = 2 };

using PieceScanner = size_t (*)(const uint8_t* s, size_t n, size_t i);

PieceScanner scanner_for(SplitPattern pattern);

// Calls f(begin, end) for every piece of s[0..n), in order.
template <class F>
void for_each_piece(PieceScanner scan, const uint8_t* s, size_t n, F&& f) {
  for (size_t i = 0; i < n;) {
    size_t e = scan(s, n, i);
    f(i, e);
    i = e;
  }
}

}  // namespace tokenforge
