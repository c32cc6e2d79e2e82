#include "special.h"

#include <algorithm>

namespace tokenforge {

SpecialMatcher::SpecialMatcher(const std::vector<SpecialToken>& tokens) : nodes_(1) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& bytes = tokens[t].bytes;
    if (bytes.empty()) continue;
    first_byte_[uint8_t(bytes[0])] = true;
    int node = 0;
    for (char ch : bytes) {
      uint8_t b = uint8_t(ch);
      int next = child(node, b);
      if (next < 0) {
        next = int(nodes_.size());
        nodes_.emplace_back();
        auto& kids = nodes_[node].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, 0)), {b, next});
      }
      node = next;
    }
    nodes_[node].token = int(t);
  }
}

int SpecialMatcher::child(int node, uint8_t b) const {
  const auto& kids = nodes_[node].children;
  auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, 0));
  return it != kids.end() && it->first == b ? it->second : -1;
}

SpecialMatcher::Match SpecialMatcher::match_at(const uint8_t* s, size_t n, size_t i,
                                               const std::vector<char>& mask) const {
  Match best;
  int node = 0;
  for (size_t j = i; j < n; ++j) {
    node = child(node, s[j]);
    if (node < 0) break;
    int t = nodes_[node].token;
    if (t >= 0 && mask[t]) best = {i, j + 1 - i, t};
  }
  return best;
}

SpecialMatcher::Match SpecialMatcher::find_next(const uint8_t* s, size_t n, size_t from,
                                                const std::vector<char>& mask) const {
  if (empty()) return {};
  for (size_t i = from; i < n; ++i) {
    if (!first_byte_[s[i]]) continue;
    Match m = match_at(s, n, i, mask);
    if (m.index >= 0) return m;
  }
  return {};
}

}  // namespace tokenforge
