#include "counter.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "hash_maps.h"
#include "parallel.h"
#include "unicode.h"

namespace tokenforge {

// ------------------------------------------------------------------------------------------------
// PieceCounts

// A slot's ref packs the key's arena offset (36 bits), its length (20 bits; kLong: the length is
// stored as 8 bytes in the arena before the key) and 8 bits of its hash, to skip most comparisons.
namespace {
constexpr uint64_t kLong = (1u << 20) - 1;
inline uint64_t tag_of(uint64_t h) { return h >> 56; }
}  // namespace

void PieceCounts::key_of(uint64_t ref, const uint8_t** p, size_t* n) const {
  uint64_t offset = ref >> 28, len = (ref >> 8) & kLong;
  const uint8_t* base = reinterpret_cast<const uint8_t*>(arena_.data()) + offset;
  if (len == kLong) {
    uint64_t long_len;
    std::memcpy(&long_len, base, 8);
    *p = base + 8;
    *n = size_t(long_len);
  } else {
    *p = base;
    *n = size_t(len);
  }
}

void PieceCounts::add(const uint8_t* p, size_t n, uint64_t count) {
  if (count == 0) return;
  uint64_t h = hash_bytes(p, n);
  if (!slots_.empty()) {
    size_t mask = slots_.size() - 1;
    uint64_t tag = tag_of(h);
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!s.count) break;
      if ((s.ref & 0xFF) != tag) continue;
      const uint8_t* k;
      size_t len;
      key_of(s.ref, &k, &len);
      if (len == n && std::memcmp(k, p, n) == 0) {
        s.count += count;
        return;
      }
    }
  }
  insert_new(h, p, n, count);
}

void PieceCounts::insert_new(uint64_t hash, const uint8_t* p, size_t n, uint64_t count) {
  if ((size_ + 1) * 10 > slots_.size() * 7) grow();
  size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].count) i = (i + 1) & mask;
  uint64_t offset = arena_.size();
  if (offset >> 36) throw std::length_error("more than 64 GB of unique pieces");
  uint64_t len = n;
  if (n >= kLong) {
    len = kLong;
    uint64_t long_len = n;
    arena_.append(reinterpret_cast<const char*>(&long_len), 8);
  }
  slots_[i] = Slot{count, (offset << 28) | (len << 8) | tag_of(hash)};
  arena_.append(reinterpret_cast<const char*>(p), n);
  ++size_;
}

void PieceCounts::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (!s.count) continue;
    const uint8_t* k;
    size_t len;
    key_of(s.ref, &k, &len);
    size_t i = hash_bytes(k, len) & mask;
    while (slots_[i].count) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void PieceCounts::add_all(const PieceCounts& other) {
  other.for_each([&](const uint8_t* p, size_t n, uint64_t c) { add(p, n, c); });
}

void PieceCounts::clear() {
  std::vector<Slot>().swap(slots_);
  std::string().swap(arena_);
  size_ = 0;
}

// ------------------------------------------------------------------------------------------------
// PieceCounter

PieceCounter::PieceCounter(std::shared_ptr<const SplitRegex> split, std::vector<SpecialToken> specials)
    : split_(std::move(split)), specials_(std::move(specials)), matcher_(specials_), all_(specials_.size(), 1) {
  for (const auto& t : specials_) {
    if (t.bytes.find('\n') != std::string::npos) newline_cuts_ = false;
    if (t.bytes.find(' ') != std::string::npos) space_cuts_ = false;
  }
}

bool PieceCounter::is_special(const uint8_t* p, size_t n) const {
  for (const auto& t : specials_)
    if (t.bytes.size() == n && std::memcmp(t.bytes.data(), p, n) == 0) return true;
  return false;
}

namespace {
inline bool is_ascii_letter(uint8_t b) { return (b | 0x20) >= 'a' && (b | 0x20) <= 'z'; }

// The class of the character that ends just before e (e > 0); kSpace when it is not a whole valid
// character (then no cut is made there).
inline uint8_t class_before(const uint8_t* s, size_t e) {
  size_t i = e - 1;
  for (int k = 0; k < 3 && i > 0 && (s[i] & 0xC0) == 0x80; ++k) --i;
  Char ch = decode_char(s, e, i);
  return i + ch.len == e && ch.cp != 0xFFFD ? ch.cls : uint8_t(kSpace);
}
}  // namespace

bool PieceCounter::cut_at(const uint8_t* s, size_t n, size_t c) const {
  if (c < 2 || c >= n) return false;
  if (s[c - 1] == '\n')
    return newline_cuts_ && !(class_before(s, c - 1) & kSpace) && (decode_char(s, n, c).cls & (kLetter | kNumber));
  return space_cuts_ && s[c] == ' ' && c + 1 < n && is_ascii_letter(s[c - 1]) && is_ascii_letter(s[c + 1]);
}

size_t PieceCounter::next_cut(const uint8_t* s, size_t n, size_t from) const {
  for (size_t c = std::max<size_t>(from, 2); c < n; ++c)
    if ((s[c - 1] == '\n' || s[c] == ' ') && cut_at(s, n, c)) return c;
  return n;
}

size_t PieceCounter::last_cut(const uint8_t* s, size_t n) const {
  for (size_t c = n; c-- > 2;)
    if ((s[c - 1] == '\n' || s[c] == ' ') && cut_at(s, n, c)) return c;
  // No cut by the rules: the end of the last special token (text is split on special tokens first).
  size_t cut = 0, pos = 0;
  while (true) {
    SpecialMatcher::Match m = matcher_.find_next(s, n, pos, all_);
    if (m.index < 0) break;
    pos = m.pos + m.len;
    if (pos < n) cut = pos;
  }
  return cut;
}

size_t PieceCounter::first_cut(const uint8_t* s, size_t n) const {
  size_t c = next_cut(s, n, 2);
  if (c < n) return c;
  SpecialMatcher::Match m = matcher_.find_next(s, n, 0, all_);
  return m.index >= 0 && m.pos + m.len < n ? m.pos + m.len : 0;
}

void PieceCounter::count_serial(const uint8_t* s, size_t n, PieceCounts& out) const {
  auto stretch = [&](size_t b, size_t e) {
    const uint8_t* t = s + b;
    split_->for_each_match(t, e - b, [&](size_t i, size_t j) { out.add(t + i, j - i, 1); });
  };
  size_t pos = 0;
  while (!matcher_.empty()) {
    SpecialMatcher::Match m = matcher_.find_next(s, n, pos, all_);
    if (m.index < 0) break;
    stretch(pos, m.pos);
    pos = m.pos + m.len;
  }
  stretch(pos, n);
}

void PieceCounter::count(const uint8_t* s, size_t n, size_t threads) {
  constexpr size_t kMinPerThread = 1 << 20;
  threads = std::max<size_t>(1, std::min(threads, n / kMinPerThread));
  if (threads == 1) {
    count_serial(s, n, counts_);
    return;
  }
  std::vector<size_t> bounds{0};
  for (size_t k = 1; k < threads; ++k) {
    size_t c = next_cut(s, n, std::max(bounds.back(), n / threads * k));
    if (c >= n) break;
    bounds.push_back(c);
  }
  bounds.push_back(n);
  size_t parts = bounds.size() - 1;
  std::vector<PieceCounts> local(parts > 0 ? parts - 1 : 0);
  // (parallel_for: a thread that cannot start or an exception is an error for the caller, not
  // the end of the process)
  parallel_for(parts, parts, [&](size_t k) {
    count_serial(s + bounds[k], bounds[k + 1] - bounds[k], k == 0 ? counts_ : local[k - 1]);
  });
  for (const auto& l : local) counts_.add_all(l);
}

void PieceCounter::count_each(const std::vector<std::pair<const uint8_t*, size_t>>& texts, size_t threads) {
  size_t total = 0;
  for (const auto& t : texts) total += t.second;
  threads = std::max<size_t>(1, std::min({threads, texts.size(), total / (1 << 18)}));
  if (threads == 1) {
    for (const auto& t : texts) count_serial(t.first, t.second, counts_);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<PieceCounts> local(threads);
  parallel_for(threads, threads, [&](size_t k) {  // each item is one thread's share of the texts
    for (size_t i; (i = next.fetch_add(1)) < texts.size();) count_serial(texts[i].first, texts[i].second, local[k]);
  });
  for (const auto& l : local) counts_.add_all(l);
}

}  // namespace tokenforge
