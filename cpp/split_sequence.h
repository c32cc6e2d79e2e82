// A Sequence of Split pre-tokenizers with Hugging Face's "isolated" behavior (DeepSeek V3's three
// splits, for one), run natively: `_core.SplitSequence`, and the engine's split stage for it.
//
// Each stage splits every piece of the stage before it as a text of its own (so `^`, `$` and
// lookarounds see the piece's ends, as in tokenizers): the pattern's matches and the gaps between
// them each become a piece, empty pieces are dropped.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "split_regex.h"

namespace tokenforge {

class SplitSequence {
 public:
  explicit SplitSequence(std::vector<std::shared_ptr<const SplitRegex>> stages) : stages_(std::move(stages)) {}

  // Byte offsets (begin, end) of the final pieces of s[0..n), in order, replacing `pieces`.
  void byte_pieces(const uint8_t* s, size_t n, std::vector<std::pair<size_t, size_t>>& pieces) const {
    std::vector<std::pair<size_t, size_t>> next;
    pieces.clear();
    if (n > 0) pieces.emplace_back(0, n);
    for (const auto& re : stages_) {
      next.clear();
      next.reserve(pieces.size() * 2);
      for (auto [b, e] : pieces) {
        size_t prev = b;
        re->for_each_match(s + b, e - b, [&](size_t mb, size_t me) {
          mb += b;
          me += b;
          if (prev < mb) next.emplace_back(prev, mb);
          if (mb < me) next.emplace_back(mb, me);
          prev = me;
        });
        if (prev < e) next.emplace_back(prev, e);
      }
      pieces.swap(next);
    }
  }

 private:
  std::vector<std::shared_ptr<const SplitRegex>> stages_;
};

}  // namespace tokenforge
