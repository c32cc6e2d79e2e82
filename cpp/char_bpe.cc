#include "char_bpe.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <queue>
#include <unordered_set>

namespace tokenforge {

namespace {
inline size_t utf8_len(uint8_t b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }
}  // namespace

void CharBpeModel::add_merges(const uint32_t* rules, size_t count) {
  pairs_.reserve(count);
  for (size_t r = 0; r < count; ++r)
    pairs_.insert(rules[3 * r], rules[3 * r + 1], {uint32_t(r), rules[3 * r + 2]});  // a repeated pair keeps its first rank
}

std::unique_ptr<CharBpeModel> CharBpeModel::create(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                                   const std::vector<std::tuple<uint32_t, uint32_t, uint32_t>>& merges,
                                                   const CharBpeConfig& config, std::string* error) {
  std::unique_ptr<CharBpeModel> m(new CharBpeModel());
  m->config_ = config;
  size_t total = 0;
  for (const auto& t : tokens) total += t.second.size();
  m->arena_.reserve(total);
  std::vector<size_t> offsets;
  for (const auto& t : tokens) {
    offsets.push_back(m->arena_.size());
    m->arena_ += t.second;
  }
  const uint8_t* base = reinterpret_cast<const uint8_t*>(m->arena_.data());
  m->by_text_.reserve(tokens.size());
  std::fill(std::begin(m->ascii_ids_), std::end(m->ascii_ids_), int64_t(-1));
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].second.empty()) {
      *error = "token " + std::to_string(tokens[i].first) + " is empty";
      return nullptr;
    }
    if (!m->by_text_.insert(base + offsets[i], uint32_t(tokens[i].second.size()), tokens[i].first)) {
      *error = "two tokens have the same text: " + tokens[i].second;
      return nullptr;
    }
    const std::string& text = tokens[i].second;
    if (text.size() == 1 && uint8_t(text[0]) < 0x80) m->ascii_ids_[uint8_t(text[0])] = tokens[i].first;
  }
  m->pairs_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    auto [l, rt, mg] = merges[r];
    m->pairs_.insert(l, rt, {uint32_t(r), mg});  // a repeated pair keeps its first (best) rank
  }
  for (int b = 0; b < 256; ++b) {
    m->byte_ids_[b] = -1;
    if (!config.byte_fallback) continue;  // (256 snprintf calls were a tenth of loading a small file)
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    uint32_t id;
    if (m->by_text_.find(reinterpret_cast<const uint8_t*>(name), 6, &id)) m->byte_ids_[b] = int64_t(id);
  }
  if (!config.attached) {
    uint32_t id;
    if (!config.start_marker.empty()) {
      if (!m->by_text_.find(reinterpret_cast<const uint8_t*>(config.start_marker.data()), config.start_marker.size(), &id)) {
        *error = "the start-of-word marker " + config.start_marker + " is not in the vocabulary";
        return nullptr;
      }
      m->start_id_ = id;
    }
    if (!config.end_marker.empty()) {
      if (!m->by_text_.find(reinterpret_cast<const uint8_t*>(config.end_marker.data()), config.end_marker.size(), &id)) {
        *error = "the end-of-word marker " + config.end_marker + " is not in the vocabulary";
        return nullptr;
      }
      m->end_id_ = id;
    }
  }
  return m;
}

bool CharBpeModel::encode_word(const uint8_t* w, size_t n, std::vector<uint32_t>& out, size_t* bad) const {
  if (n == 0) return true;
  thread_local std::vector<uint32_t> symbols;  // (one buffer per thread: a word is short, an allocation was not)
  symbols.clear();
  if (start_id_ >= 0) symbols.push_back(uint32_t(start_id_));
  thread_local std::string buf;
  bool unk_pending = false;
  for (size_t i = 0; i < n;) {
    size_t len = std::min(utf8_len(w[i]), n - i);
    bool first = i == 0, last = i + len == n;
    const uint8_t* p = w + i;
    size_t plen = len;
    if (config_.attached && ((first && !config_.start_marker.empty()) || (last && !config_.end_marker.empty()))) {
      buf.clear();
      if (first) buf += config_.start_marker;
      buf.append(reinterpret_cast<const char*>(w + i), len);
      if (last) buf += config_.end_marker;
      p = reinterpret_cast<const uint8_t*>(buf.data());
      plen = buf.size();
    }
    uint32_t id;
    if (plen == 1 && ascii_ids_[p[0] & 0x7F] >= 0 && p[0] < 0x80) {  // (an ASCII character: a table, not a hash)
      if (unk_pending) symbols.push_back(uint32_t(config_.unk_id)), unk_pending = false;
      symbols.push_back(uint32_t(ascii_ids_[p[0]]));
    } else if (by_text_.find(p, plen, &id)) {
      if (unk_pending) symbols.push_back(uint32_t(config_.unk_id)), unk_pending = false;
      symbols.push_back(id);
    } else if (config_.byte_fallback && std::all_of(p, p + plen, [&](uint8_t b) { return byte_ids_[b] >= 0; })) {
      for (size_t k = 0; k < plen; ++k) symbols.push_back(uint32_t(byte_ids_[p[k]]));  // (a pending unknown waits)
    } else if (config_.unk_id >= 0) {
      if (unk_pending && !config_.fuse_unk) symbols.push_back(uint32_t(config_.unk_id));
      unk_pending = true;
    } else if (!config_.drop_unknown) {
      *bad = i;
      return false;
    }
    i += len;
  }
  if (unk_pending) symbols.push_back(uint32_t(config_.unk_id));
  if (end_id_ >= 0) symbols.push_back(uint32_t(end_id_));
  merge(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  return true;
}

void CharBpeModel::merge(std::vector<uint32_t>& symbols) const {
  size_t n = symbols.size();
  if (n < 2) return;
  if (n <= kShortWord) {
    // A short word (most are): scan the pairs for the lowest rank, leftmost on ties, merge it, again.
    // The same merges as the heap below, without its allocations (they were most of a word's time).
    uint32_t* s = symbols.data();
    while (n > 1) {
      uint32_t best_rank = UINT32_MAX, merged = 0;
      size_t at = 0;
      for (size_t i = 0; i + 1 < n; ++i)
        if (const auto* m = pairs_.find(s[i], s[i + 1]); m && m->rank < best_rank) best_rank = m->rank, merged = m->merged, at = i;
      if (best_rank == UINT32_MAX) break;
      s[at] = merged;
      std::copy(s + at + 2, s + n, s + at + 1);
      --n;
    }
    symbols.resize(n);
    return;
  }
  std::vector<int64_t> prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = int64_t(i) - 1;
    next[i] = i + 1 < n ? int64_t(i + 1) : -1;
  }
  struct Item {
    uint32_t rank;
    uint32_t pos;
    uint32_t merged;
    bool operator<(const Item& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Item> heap;
  for (size_t i = 0; i + 1 < n; ++i)
    if (const auto* m = pairs_.find(symbols[i], symbols[i + 1])) heap.push({m->rank, uint32_t(i), m->merged});
  while (!heap.empty()) {
    Item top = heap.top();
    heap.pop();
    size_t pos = top.pos;
    if (!alive[pos] || next[pos] < 0) continue;
    size_t right = size_t(next[pos]);
    const auto* m = pairs_.find(symbols[pos], symbols[right]);
    if (!m || m->rank != top.rank || m->merged != top.merged) continue;  // stale
    symbols[pos] = top.merged;
    alive[right] = 0;
    next[pos] = next[right];
    if (next[right] >= 0) prev[size_t(next[right])] = int64_t(pos);
    if (prev[pos] >= 0) {
      size_t l = size_t(prev[pos]);
      if (const auto* pm = pairs_.find(symbols[l], symbols[pos])) heap.push({pm->rank, uint32_t(l), pm->merged});
    }
    if (next[pos] >= 0) {
      if (const auto* nm = pairs_.find(symbols[pos], symbols[size_t(next[pos])]))
        heap.push({nm->rank, uint32_t(pos), nm->merged});
    }
  }
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) symbols[k++] = symbols[i];
  symbols.resize(k);
}

// ------------------------------------------------------------------------------------------------
// Trainer

namespace {

inline uint64_t pair_key(uint32_t l, uint32_t r) { return (uint64_t(l) << 32) | r; }

size_t count_occurrences(const std::string& s, const std::string& marker) {
  if (marker.empty()) return 0;
  size_t n = 0;
  for (size_t pos = s.find(marker); pos != std::string::npos; pos = s.find(marker, pos + 1)) ++n;
  return n;
}

}  // namespace

TrainerResult train_pairs(std::vector<std::string> symbols, std::vector<std::vector<uint32_t>> words,
                          const std::vector<uint64_t>& counts, const TrainerConfig& config) {
  TrainerResult result;
  std::unordered_map<std::string, uint32_t> by_text;
  for (size_t i = 0; i < symbols.size(); ++i) by_text.emplace(symbols[i], uint32_t(i));
  std::vector<std::vector<size_t>> marker_count(config.markers.size());
  auto markers_in = [&](const std::string& s, size_t k) { return count_occurrences(s, config.markers[k]); };
  for (size_t k = 0; k < config.markers.size(); ++k)
    for (const auto& s : symbols) marker_count[k].push_back(markers_in(s, k));

  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;
  std::vector<int64_t> freq(symbols.size(), 0);
  for (size_t w = 0; w < words.size(); ++w) {
    const auto& s = words[w];
    int64_t c = int64_t(counts[w]);
    for (uint32_t t : s) freq[t] += c;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      uint64_t k = pair_key(s[i], s[i + 1]);
      pair_count[k] += c;
      auto& v = where[k];
      if (v.empty() || v.back() != w) v.push_back(uint32_t(w));
    }
  }

  auto less_text = [&](uint64_t a, uint64_t b) {  // true if pair a's texts sort before pair b's
    const std::string& al = symbols[a >> 32];
    const std::string& bl = symbols[b >> 32];
    int c = al.compare(bl);
    if (c != 0) return c < 0;
    return symbols[a & 0xFFFFFFFF].compare(symbols[b & 0xFFFFFFFF]) < 0;
  };
  std::unordered_set<uint64_t> forbidden;
  auto joined = [&](uint32_t l, uint32_t r) {
    const std::string& rs = symbols[r];
    if (!config.strip_prefix.empty() && rs.compare(0, config.strip_prefix.size(), config.strip_prefix) == 0)
      return symbols[l] + rs.substr(config.strip_prefix.size());
    return symbols[l] + rs;
  };
  auto allowed = [&](uint64_t k) {
    if (forbidden.count(k)) return false;
    uint32_t l = uint32_t(k >> 32), r = uint32_t(k & 0xFFFFFFFF);
    std::string j = joined(l, r);
    for (size_t m = 0; m < config.markers.size(); ++m) {
      if (markers_in(j, m) != marker_count[m][l] + marker_count[m][r]) {
        forbidden.insert(k);
        return false;
      }
    }
    return true;
  };

  // kCount: a lazy max-heap of (count, pair); an entry is checked against the live count when popped.
  struct Entry {
    int64_t count;
    uint64_t pair;
  };
  auto heap_less = [&](const Entry& a, const Entry& b) {
    if (a.count != b.count) return a.count < b.count;
    return less_text(b.pair, a.pair);
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(heap_less)> heap(heap_less);
  if (config.score == TrainerConfig::kCount)
    for (const auto& [k, c] : pair_count)
      if (c > 0) heap.push({c, k});

  std::vector<uint32_t> stamp(words.size(), 0);
  uint32_t step = 0;
  while (result.new_tokens.size() < config.max_new_tokens) {
    uint64_t best = 0;
    bool found = false;
    if (config.score == TrainerConfig::kCount) {
      while (!heap.empty()) {
        Entry e = heap.top();
        heap.pop();
        auto it = pair_count.find(e.pair);
        int64_t live = it == pair_count.end() ? 0 : it->second;
        if (live != e.count) {
          if (live > 0) heap.push({live, e.pair});
          continue;
        }
        if (live < int64_t(config.min_frequency) || live <= 0) break;
        if (!allowed(e.pair)) continue;
        best = e.pair;
        found = true;
        break;
      }
    } else {
      int64_t bc = 0;
      __int128 bfa = 1;  // best score = bc / bfa
      for (const auto& [k, c] : pair_count) {
        if (c <= 0 || c < int64_t(config.min_frequency)) continue;
        __int128 fa = __int128(freq[k >> 32]) * freq[k & 0xFFFFFFFF];
        if (found) {
          __int128 lhs = __int128(c) * bfa, rhs = __int128(bc) * fa;
          if (lhs < rhs) continue;
          if (lhs == rhs && (c < bc || (c == bc && !less_text(k, best)))) continue;
        }
        if (!allowed(k)) continue;
        best = k;
        bc = c;
        bfa = fa;
        found = true;
      }
    }
    if (!found) break;
    uint32_t l = uint32_t(best >> 32), r = uint32_t(best & 0xFFFFFFFF);
    std::string text = joined(l, r);
    uint32_t merged;
    auto it = by_text.find(text);
    if (it != by_text.end()) {
      merged = it->second;
    } else {
      merged = uint32_t(symbols.size());
      symbols.push_back(text);
      freq.push_back(0);
      for (size_t m = 0; m < config.markers.size(); ++m) marker_count[m].push_back(markers_in(text, m));
      by_text.emplace(text, merged);
      result.new_tokens.push_back(text);
    }
    result.merges.emplace_back(l, r, merged);

    // Apply the merge to every word that has the pair; recount those words' pairs.
    ++step;
    std::vector<uint32_t> affected = std::move(where[best]);
    where.erase(best);
    std::unordered_map<uint64_t, int64_t> delta;
    for (uint32_t w : affected) {
      if (stamp[w] == step) continue;
      stamp[w] = step;
      auto& s = words[w];
      bool has = false;
      for (size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == l && s[i + 1] == r) {
          has = true;
          break;
        }
      if (!has) continue;
      int64_t c = int64_t(counts[w]);
      for (size_t i = 0; i + 1 < s.size(); ++i) delta[pair_key(s[i], s[i + 1])] -= c;
      for (uint32_t t : s) freq[t] -= c;
      std::vector<uint32_t> ns;
      ns.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        if (i + 1 < s.size() && s[i] == l && s[i + 1] == r) {
          ns.push_back(merged);
          i += 2;
        } else {
          ns.push_back(s[i++]);
        }
      }
      s.swap(ns);
      for (uint32_t t : s) freq[t] += c;
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        uint64_t k = pair_key(s[i], s[i + 1]);
        delta[k] += c;
        auto& v = where[k];
        if (v.empty() || v.back() != w) v.push_back(w);
      }
    }
    for (const auto& [k, d] : delta) {
      if (d == 0) continue;
      int64_t& c = pair_count[k];
      c += d;
      if (d > 0 && config.score == TrainerConfig::kCount) heap.push({c, k});
      if (c <= 0) pair_count.erase(k);
    }
  }
  return result;
}

}  // namespace tokenforge
