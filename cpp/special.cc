#include "special.h"

#include <algorithm>
#include <cstring>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
        nodes_[next].depth = nodes_[node].depth + 1;
        auto& kids = nodes_[node].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, 0)), {b, next});
      }
      node = next;
    }
    if (nodes_[node].token < 0) nodes_[node].token = int(t);  // of equal tokens, the first
  }
  for (int b = 0; b < 256; ++b)
    if (first_byte_[b]) {
      if (num_starts_ < kFewStarts) starts_[num_starts_] = uint8_t(b);
      ++num_starts_;
    }
  for (auto [b0, first] : nodes_[0].children) {  // the first two bytes of every token
    auto add = [&](uint8_t b1, bool any) {
      if (num_pairs_ < kFewStarts) {
        pair_first_[num_pairs_] = b0;
        pair_second_[num_pairs_] = b1;
        pair_any_[num_pairs_] = any;
      }
      ++num_pairs_;
    };
    if (nodes_[first].token >= 0) {
      add(0, true);  // a token of one byte: any byte may follow
      continue;
    }
    for (auto [b1, second] : nodes_[first].children) add(b1, false);
  }
  // Failure and dictionary links, breadth first (a node's links come from shallower nodes).
  std::vector<int> queue{0};
  for (size_t k = 0; k < queue.size(); ++k) {
    int u = queue[k];
    for (auto [b, v] : nodes_[u].children) {
      int f = 0;
      if (u != 0) {
        f = nodes_[u].fail;
        while (f && child(f, b) < 0) f = nodes_[f].fail;
        int c = child(f, b);
        f = c >= 0 ? c : 0;
      }
      nodes_[v].fail = f;
      nodes_[v].output = nodes_[f].token >= 0 ? f : nodes_[f].output;
      queue.push_back(v);
    }
  }
}

int SpecialMatcher::child(int node, uint8_t b) const {
  const auto& kids = nodes_[node].children;
  auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(b, 0));
  return it != kids.end() && it->first == b ? it->second : -1;
}

int SpecialMatcher::step(int node, uint8_t b) const {
  while (true) {
    int c = child(node, b);
    if (c >= 0) return c;
    if (node == 0) return 0;
    node = nodes_[node].fail;
  }
}

size_t SpecialMatcher::skip_to_start(const uint8_t* s, size_t n, size_t j) const {
#ifdef __SSE2__
  // Two bytes at once where the first byte alone is common (a space, a newline, or several first
  // bytes); a lone first byte such as '<' (tiktoken's special tokens) keeps memchr, faster still.
  const bool common_start = num_starts_ > 1 || starts_[0] == ' ' || starts_[0] == '\n' || starts_[0] == '\t';
  if (common_start && num_pairs_ > 0 && num_pairs_ <= kFewStarts) {
    __m128i first[kFewStarts], second[kFewStarts], any[kFewStarts];
    for (size_t k = 0; k < kFewStarts; ++k) {
      const size_t p = k < num_pairs_ ? k : 0;  // (unused slots repeat the first pair)
      first[k] = _mm_set1_epi8(char(pair_first_[p]));
      second[k] = _mm_set1_epi8(char(pair_second_[p]));
      any[k] = pair_any_[p] ? _mm_set1_epi8(char(0xFF)) : _mm_setzero_si128();
    }
    for (; j + 17 <= n; j += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j));
      const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j + 1));  // the byte after each
      __m128i eq = _mm_setzero_si128();
      for (size_t k = 0; k < kFewStarts; ++k) {
        const __m128i second_ok = _mm_or_si128(_mm_cmpeq_epi8(w, second[k]), any[k]);
        eq = _mm_or_si128(eq, _mm_and_si128(_mm_cmpeq_epi8(v, first[k]), second_ok));
      }
      if (int mask = _mm_movemask_epi8(eq)) return j + size_t(__builtin_ctz(unsigned(mask)));
    }
    while (j < n && !first_byte_[s[j]]) ++j;  // (the last 16 bytes: by the first byte alone)
    return j;
  }
#endif
  if (num_starts_ == 1) {
    const void* hit = std::memchr(s + j, starts_[0], n - j);
    return hit ? size_t(static_cast<const uint8_t*>(hit) - s) : n;
  }
#ifdef __SSE2__
  if (num_starts_ <= kFewStarts) {
    __m128i want[kFewStarts];
    for (size_t k = 0; k < kFewStarts; ++k) want[k] = _mm_set1_epi8(char(starts_[k < num_starts_ ? k : 0]));
    for (; j + 16 <= n; j += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + j));
      __m128i eq = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, want[0]), _mm_cmpeq_epi8(v, want[1])),
                                _mm_or_si128(_mm_cmpeq_epi8(v, want[2]), _mm_cmpeq_epi8(v, want[3])));
      if (int mask = _mm_movemask_epi8(eq)) return j + size_t(__builtin_ctz(unsigned(mask)));
    }
  }
#endif
  while (j < n && !first_byte_[s[j]]) ++j;
  return j;
}

SpecialMatcher::Match SpecialMatcher::find_next(const uint8_t* s, size_t n, size_t from,
                                                const std::vector<char>& mask) const {
  Match best;
  if (empty()) return best;
  int state = 0;
  for (size_t j = from; j < n; ++j) {
    if (state == 0) {  // nothing in progress: skip to a byte that can start a token
      j = skip_to_start(s, n, j);
      if (j == n) break;
    }
    state = step(state, s[j]);
    // The tokens ending at j, longest first (the dictionary links go to shorter and shorter
    // suffixes): the first one considered starts first, so none after it can be better (inside a
    // run of spaces every shorter run is a suffix: walking them all was quadratic in the run).
    for (int u = nodes_[state].token >= 0 ? state : nodes_[state].output; u >= 0; u = nodes_[u].output) {
      int t = nodes_[u].token;
      size_t len = nodes_[u].depth, start = j + 1 - len;
      if (start < from || !mask[size_t(t)]) continue;
      if (best.index < 0 || start < best.pos || (start == best.pos && len > best.len)) best = {start, len, t};
      break;
    }
    // Done when no token still in progress could start at or before the best match.
    if (best.index >= 0 && j + 1 - nodes_[state].depth > best.pos) return best;
  }
  return best;
}

}  // namespace tokenforge
