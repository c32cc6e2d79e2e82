#include "pre_split.h"

namespace tokenforge {

WordClassTable::WordClassTable(const Ranges& word, const Ranges& space, const Ranges& punct) : table_(0x110000, 0) {
  auto fill = [&](const Ranges& rs, uint8_t bit) {
    for (auto [a, b] : rs)
      for (uint32_t c = a; c <= b && c < table_.size(); ++c) table_[c] |= bit;
  };
  fill(word, kWordChar);
  fill(space, kSpaceChar);
  fill(punct, kPunctChar);
}

}  // namespace tokenforge
