#include "longest_match.h"

#include <algorithm>
#include <cstring>

#include "hash_maps.h"

namespace tokenforge {

namespace {
inline uint64_t load_le(const uint8_t* s, size_t n) {  // n <= 8 bytes, zero-padded
  uint64_t v = 0;
  std::memcpy(&v, s, n);
  return v;
}
inline size_t short_hash(uint64_t bytes, size_t length) { return size_t(hash_u64(bytes ^ (uint64_t(length) << 59))); }
inline uint64_t long_hash(const uint8_t* s, size_t n) {
  uint64_t h = n;
  for (size_t i = 0; i < n; i += 8) h = hash_u64(h ^ load_le(s + i, std::min<size_t>(8, n - i)));
  return h;
}
}  // namespace

std::unique_ptr<LongestMatchModel> LongestMatchModel::create(
    const std::vector<std::pair<uint32_t, std::string>>& tokens, std::string* error) {
  std::unique_ptr<LongestMatchModel> m(new LongestMatchModel());
  m->two_.assign(65536, 0);
  size_t shorts = 0, longs = 0;
  for (const auto& [id, t] : tokens) {
    if (t.empty() || id >= kLonger || t.size() > kMaxLength) {
      *error = "token " + std::to_string(id) + (t.empty() ? " is empty"
                                                : id >= kLonger ? ": ids must be below 2**31"
                                                                : ": longer than " + std::to_string(kMaxLength) + " bytes");
      return nullptr;
    }
    m->max_length_ = std::max(m->max_length_, t.size());
    shorts += std::min<size_t>(t.size(), 8) - std::min<size_t>(t.size(), 2);
    longs += t.size() > 8 ? t.size() - 8 : 0;
  }
  m->short_.assign(table_size_for(shorts), Short{});
  m->long_.assign(table_size_for(longs), Long{});
  // Every prefix gets the "longer" flag; each whole token its id. A prefix shared by many tokens is
  // added once per token (the same key: found, flags merged).
  for (const auto& [id, t] : tokens) {
    // a long token's bytes once in the arena: its prefixes past 8 bytes point at them
    const uint32_t at = uint32_t(m->arena_.size());
    if (t.size() > 8) m->arena_ += t;
    for (size_t n = 1; n < t.size(); ++n) m->add(t, n, kLonger, at);
    m->add(t, t.size(), id + 1, at);
  }
  m->compact();
  for (const auto& [id, t] : tokens)  // (two tokens of the same bytes would have merged their ids)
    if ((m->find(reinterpret_cast<const uint8_t*>(t.data()), t.size()) & ~kLonger) != id + 1) {
      *error = "two tokens have the same bytes (id " + std::to_string(id) + ")";
      return nullptr;
    }
  for (int b = 0; b < 256; ++b)
    if (!(m->one_[b] & ~kLonger)) {
      *error = "byte " + std::to_string(b) + " is not a token";
      return nullptr;
    }
  return m;
}

void LongestMatchModel::add(const std::string& token, size_t length, uint32_t entry, uint32_t at) {
  const uint8_t* s = reinterpret_cast<const uint8_t*>(token.data());
  if (length == 1) {
    one_[s[0]] |= entry;
    return;
  }
  if (length == 2) {
    two_[s[0] | s[1] << 8] |= entry;
    return;
  }
  if (length <= 8) {
    const uint64_t bytes = load_le(s, length);
    const size_t mask = short_.size() - 1;
    for (size_t i = short_hash(bytes, length) & mask;; i = (i + 1) & mask) {
      Short& e = short_[i];
      if (e.length == 0) {
        e = Short{bytes, entry, uint32_t(length)};
        return;
      }
      if (e.bytes == bytes && e.length == length) {
        e.entry |= entry;
        return;
      }
    }
  }
  const uint64_t h = long_hash(s, length);
  const size_t mask = long_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Long& e = long_[i];
    if (e.length == 0) {
      e = Long{h, entry, uint32_t(length), at};
      return;
    }
    if (e.hash == h && e.length == length && std::memcmp(arena_.data() + e.at, s, length) == 0) {
      e.entry |= entry;
      return;
    }
  }
}

// The short table was sized for every prefix of every token; most are shared, so it is placed
// again in a table sized for the distinct ones (RWKV: 212k -> 91k, 8 -> 4 MB): less memory to miss.
void LongestMatchModel::compact() {
  size_t used = 0;
  for (const Short& e : short_) used += e.length != 0;
  std::vector<Short> old(table_size_for(used));
  old.swap(short_);
  const size_t mask = short_.size() - 1;
  for (const Short& e : old) {
    if (e.length == 0) continue;
    size_t i = short_hash(e.bytes, e.length) & mask;
    while (short_[i].length != 0) i = (i + 1) & mask;
    short_[i] = e;
  }
}

uint32_t LongestMatchModel::find(const uint8_t* s, size_t length) const {
  if (length == 1) return one_[s[0]];
  if (length == 2) return two_[s[0] | s[1] << 8];
  if (length > 8) return find_long(s, length);
  const uint64_t bytes = load_le(s, length);
  const size_t mask = short_.size() - 1;
  for (size_t i = short_hash(bytes, length) & mask;; i = (i + 1) & mask) {
    const Short& e = short_[i];
    if (e.length == 0) return 0;
    if (e.bytes == bytes && e.length == length) return e.entry;
  }
}

uint32_t LongestMatchModel::find_long(const uint8_t* s, size_t length) const {
  const uint64_t h = long_hash(s, length);
  const size_t mask = long_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Long& e = long_[i];
    if (e.length == 0) return 0;
    if (e.hash == h && e.length == length && std::memcmp(arena_.data() + e.at, s, length) == 0) return e.entry;
  }
}

void LongestMatchModel::encode(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const {
  const size_t mask = short_.size() - 1;
  size_t i = 0;
  while (i < n) {
    const uint8_t* p = s + i;
    const size_t left = n - i;
    uint32_t entry = one_[p[0]];
    uint32_t best = (entry & ~kLonger) - 1;  // (every byte is a token)
    size_t best_length = 1;
    if ((entry & kLonger) && left >= 2) {
      entry = two_[p[0] | p[1] << 8];
      if (entry & ~kLonger) best = (entry & ~kLonger) - 1, best_length = 2;
      if ((entry & kLonger) && left >= 3) {
        // The slots of the prefixes of 3..8 bytes, asked for together: they do not depend on each
        // other, so the walk below waits on memory about once, not once per byte.
        const size_t last = std::min<size_t>(8, left);
        const uint64_t word = load_le(p, last);
        size_t slot[9];
        for (size_t len = 3; len <= last; ++len) {
          const uint64_t bytes = len == 8 ? word : word & ((uint64_t(1) << (8 * len)) - 1);
          slot[len] = short_hash(bytes, len) & mask;
          __builtin_prefetch(&short_[slot[len]]);
        }
        size_t len = 3;
        for (; len <= last; ++len) {
          const uint64_t bytes = len == 8 ? word : word & ((uint64_t(1) << (8 * len)) - 1);
          entry = 0;
          for (size_t k = slot[len];; k = (k + 1) & mask) {
            const Short& e = short_[k];
            if (e.length == 0) break;
            if (e.bytes == bytes && e.length == len) {
              entry = e.entry;
              break;
            }
          }
          if (entry & ~kLonger) best = (entry & ~kLonger) - 1, best_length = len;
          if (!(entry & kLonger)) break;
        }
        if (len > last && last == 8) {  // prefixes longer than 8 bytes
          for (len = 9; len <= left && len <= max_length_; ++len) {
            entry = find_long(p, len);
            if (entry & ~kLonger) best = (entry & ~kLonger) - 1, best_length = len;
            if (!(entry & kLonger)) break;
          }
        }
      }
    }
    out.push_back(best);
    i += best_length;
  }
}

}  // namespace tokenforge
