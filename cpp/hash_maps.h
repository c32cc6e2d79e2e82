// Small open-addressing hash maps for the hot lookups: short tokens -> id, byte strings -> id, and
// id pairs -> merge; one table (OpenTable) under all three.
// std::unordered_map allocates per node and hashes through std::hash; these keep one flat array.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "huge_pages.h"

namespace tokenforge {

// The hash of every table below is keyed by a secret drawn once per process, so a file cannot be
// crafted to make its keys collide (hash flooding: a vocabulary of colliding tokens turned each
// lookup into a scan of the table). The mixing is wyhash's: 64x64 -> 128-bit multiplies of the
// input xored with the secret, folded; without the secret, colliding inputs cannot be chosen.
struct HashSecret {
  uint64_t s0, s1, s2, s3;
};
HashSecret make_hash_secret();
inline const HashSecret kHashSecret = make_hash_secret();

inline uint64_t hash_mum(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return uint64_t(r) ^ uint64_t(r >> 64);
}

inline uint64_t hash_read64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

inline uint64_t hash_bytes(const uint8_t* p, size_t n) {
  const HashSecret& k = kHashSecret;
  uint64_t h = k.s0 ^ hash_mum(uint64_t(n) ^ k.s1, k.s2);
  while (n > 16) {
    h = hash_mum(hash_read64(p) ^ k.s1, hash_read64(p + 8) ^ h);
    p += 16;
    n -= 16;
  }
  uint64_t a = 0, b = 0;
  if (n > 8) {
    a = hash_read64(p);
    std::memcpy(&b, p + 8, n - 8);
  } else {
    std::memcpy(&a, p, n);
  }
  return hash_mum(a ^ k.s2 ^ h, hash_mum(b ^ k.s3, h ^ k.s1));
}

// A keyed mix of a 64-bit key (the pair tables' hash).
inline uint64_t hash_u64(uint64_t x) {
  const HashSecret& k = kHashSecret;
  return hash_mum(x ^ k.s1, hash_mum(x ^ k.s2, k.s3));
}

inline size_t table_size_for(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;  // load factor at most 1/2
  return cap;
}

// A byte string of 1..16 bytes as two little-endian words, zero-padded, and its length: most
// pieces and most merge candidates fit, and comparing two keys is comparing three integers.
struct ShortKey {
  static constexpr size_t kMaxLen = 16;
  uint64_t lo, hi;
  uint32_t len;
};

// The masks that keep the first n bytes of two little-endian words, n = 0..16 (a table: no branch
// on n, which varies from piece to piece and is mispredicted).
struct KeyMask {
  uint64_t lo, hi;
};
constexpr uint64_t low_bytes_mask(size_t n) { return n >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * n)) - 1; }
constexpr KeyMask key_mask(size_t n) { return {low_bytes_mask(n), low_bytes_mask(n > 8 ? n - 8 : 0)}; }
inline constexpr KeyMask kKeyMasks[17] = {key_mask(0),  key_mask(1),  key_mask(2),  key_mask(3),  key_mask(4),
                                          key_mask(5),  key_mask(6),  key_mask(7),  key_mask(8),  key_mask(9),
                                          key_mask(10), key_mask(11), key_mask(12), key_mask(13), key_mask(14),
                                          key_mask(15), key_mask(16)};

// The key of p[0..n), 1 <= n <= 16, reading 16 bytes from p: the caller guarantees they are
// readable (a padded buffer, or a position at least 16 bytes before the end of the text).
inline ShortKey short_key_unchecked(const uint8_t* p, size_t n) {
  const KeyMask& m = kKeyMasks[n];
  return {hash_read64(p) & m.lo, hash_read64(p + 8) & m.hi, uint32_t(n)};
}

// The same for p[0..n) inside a buffer that ends at `end`, near which 16 bytes may not be readable.
inline ShortKey short_key(const uint8_t* p, size_t n, const uint8_t* end) {
  if (end - p >= 16) return short_key_unchecked(p, n);
  uint8_t buf[16] = {0};
  std::memcpy(buf, p, n);
  return short_key_unchecked(buf, n);
}

// One keyed multiply (the secret as for hash_bytes, so a vocabulary cannot be built to collide).
inline uint64_t hash_short(const ShortKey& k) {
  const HashSecret& s = kHashSecret;
  return hash_mum(k.lo ^ s.s0, k.hi ^ s.s1 ^ (uint64_t(k.len) << 56));
}

// Open addressing with linear probing over one flat array of slots, at most half full, so a miss
// ends at the first empty slot after about 2.5 probes, in the same or the next cache line. The maps
// below differ only in their Slot, which is empty when default-constructed and has
//   bool empty() const;                  // an unused slot
//   uint64_t hash() const;               // its key's hash (stored, or computed from the key)
//   bool same_key(const Slot&) const;    // the two keys are equal
template <class Slot>
class OpenTable {
 public:
  // Room for n keys without growing; the keys already present are kept.
  void reserve(size_t n) {
    if (table_size_for(n) > slots_.size()) rehash(table_size_for(n));
  }

  // Returns false if the slot's key was already present (the old slot is kept).
  bool insert(const Slot& slot) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    return insert_slot(slot);
  }

  // The slot for which matches(slot) is true, probing from hash h; nullptr at the first empty
  // slot. matches() must be false for an empty slot.
  template <class Matches>
  const Slot* find(uint64_t h, Matches matches) const {
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (matches(s)) return &s;
      if (s.empty()) return nullptr;
    }
  }

  size_t size() const { return size_; }
  const std::vector<Slot, HugePageAllocator<Slot>>& slots() const { return slots_; }

 private:
  bool insert_slot(const Slot& slot) {
    size_t mask = slots_.size() - 1;
    for (size_t i = slot.hash() & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.empty()) {
        s = slot;
        ++size_;
        return true;
      }
      if (s.same_key(slot)) return false;
    }
  }

  void rehash(size_t capacity) {
    std::vector<Slot, HugePageAllocator<Slot>> old(capacity);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& s : old)
      if (!s.empty()) insert_slot(s);
  }

  std::vector<Slot, HugePageAllocator<Slot>> slots_ = std::vector<Slot, HugePageAllocator<Slot>>(16);  // a power of two (big tables in 2 MiB pages: huge_pages.h)
  size_t size_ = 0;
};

// Tokens of up to 16 bytes -> id, their bytes inline in the slot: a lookup is a multiply, a probe
// and an integer compare, with no pointer to follow (BytesMap keeps its keys elsewhere, one more
// cache miss per lookup).
class ShortTokenMap {
 public:
  void reserve(size_t n) { table_.reserve(n); }

  // Returns false if the key was already present (the old value is kept).
  bool insert(const ShortKey& k, uint32_t value) {
    filter_.clear();
    return table_.insert(Slot{k.lo, k.hi, k.len, value});
  }

  bool find(const ShortKey& k, uint64_t h, uint32_t* value) const {
    if (!maybe_present(h)) return false;
    const Slot* s = table_.find(h, [&](const Slot& s) { return s.same_key(k); });
    if (s) *value = s->value;
    return s != nullptr;
  }
  bool find(const ShortKey& k, uint32_t* value) const { return find(k, hash_short(k), value); }

  size_t size() const { return table_.size(); }

  // Builds the filter below; call after the last insert (before it, every key is maybe present).
  void finish() {
    size_t words = 1;
    while (words * 64 < size() * 8) words <<= 1;  // about 8 bits per key
    filter_.assign(words, 0);
    filter_shift_ = 64;
    for (size_t w = words; w > 1; w >>= 1) --filter_shift_;
    for (const Slot& s : table_.slots())
      if (!s.empty()) filter_[filter_word(s.hash())] |= filter_bits(s.hash());
  }

 private:
  // A blocked Bloom filter: two bits of one 64-bit word per key, 128 KiB for 100,000 tokens (it
  // stays in L2 where the table does not). Most merge candidates are not tokens; the filter
  // answers about 97% of those without touching the table.
  bool maybe_present(uint64_t h) const {
    if (filter_.empty()) return true;
    uint64_t bits = filter_bits(h);
    return (filter_[filter_word(h)] & bits) == bits;
  }
  size_t filter_word(uint64_t h) const { return filter_shift_ >= 64 ? 0 : size_t(h >> filter_shift_); }
  static uint64_t filter_bits(uint64_t h) { return (uint64_t(1) << (h & 63)) | (uint64_t(1) << ((h >> 6) & 63)); }

  struct Slot {  // ShortKey's fields and the value in 24 bytes (a ShortKey member would pad to 32)
    uint64_t lo = 0, hi = 0;
    uint32_t len = 0;  // 0: empty
    uint32_t value = 0;
    bool empty() const { return len == 0; }
    uint64_t hash() const { return hash_short({lo, hi, len}); }
    bool same_key(const ShortKey& k) const { return lo == k.lo && hi == k.hi && len == k.len; }
    bool same_key(const Slot& o) const { return same_key(ShortKey{o.lo, o.hi, o.len}); }
  };

  OpenTable<Slot> table_;
  std::vector<uint64_t> filter_;
  unsigned filter_shift_ = 64;
};

// Byte string -> uint32 value. Keys are not copied: they must outlive the map.
class BytesMap {
 public:
  void reserve(size_t n) { table_.reserve(n); }

  // Returns false if the key was already present (the old value is kept).
  bool insert(const uint8_t* key, uint32_t len, uint32_t value) {
    return table_.insert(Slot{hash_bytes(key, len), key, len, value});
  }

  bool find(const uint8_t* key, size_t len, uint32_t* value) const {
    return find_hashed(key, len, hash_bytes(key, len), value);
  }

  // find() with the key's hash_bytes() already computed.
  bool find_hashed(const uint8_t* key, size_t len, uint64_t h, uint32_t* value) const {
    const Slot* s = table_.find(h, [&](const Slot& s) { return s.same_key(h, key, len); });
    if (s) *value = s->value;
    return s != nullptr;
  }

  size_t size() const { return table_.size(); }

 private:
  struct Slot {
    uint64_t key_hash = 0;
    const uint8_t* key = nullptr;  // nullptr: empty
    uint32_t len = 0;
    uint32_t value = 0;
    bool empty() const { return key == nullptr; }
    uint64_t hash() const { return key_hash; }
    bool same_key(uint64_t h, const uint8_t* k, size_t n) const {
      return key_hash == h && len == n && key != nullptr && std::memcmp(key, k, n) == 0;
    }
    bool same_key(const Slot& o) const { return same_key(o.key_hash, o.key, o.len); }
  };

  OpenTable<Slot> table_;
};

// Token id -> a 32-bit value (tables built while loading a model; ids may be sparse, so no vector
// indexed by id).
class IdMap {
 public:
  void reserve(size_t n) { table_.reserve(n); }

  // Returns false if the id was already present (the old value is kept).
  bool insert(uint32_t id, uint32_t value) { return table_.insert(Slot{id, value}); }

  bool find(uint32_t id, uint32_t* value) const {
    const Slot* s = table_.find(hash_u64(id), [id](const Slot& s) { return s.id == id; });
    if (s) *value = s->value;
    return s != nullptr;
  }

 private:
  static constexpr uint32_t kEmpty = ~0u;  // not a token id (BytePairModel::create refuses it)
  struct Slot {
    uint32_t id = kEmpty;
    uint32_t value = 0;
    bool empty() const { return id == kEmpty; }
    uint64_t hash() const { return hash_u64(id); }
    bool same_key(const Slot& o) const { return id == o.id; }
  };

  OpenTable<Slot> table_;
};

// (left id, right id) -> (rank, merged id).
class PairMap {
 public:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Merge {
    uint32_t rank;
    uint32_t merged;
  };

  void reserve(size_t n) { table_.reserve(n); }

  // Returns false if the pair was already present (the old merge is kept).
  bool insert(uint32_t left, uint32_t right, Merge m) { return table_.insert(Slot{key(left, right), m}); }

  const Merge* find(uint32_t left, uint32_t right) const {
    uint64_t k = key(left, right);
    const Slot* s = table_.find(hash_u64(k), [k](const Slot& s) { return s.key == k; });
    return s ? &s->merge : nullptr;
  }

  size_t size() const { return table_.size(); }

 private:
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{0, 0};
    bool empty() const { return key == kEmpty; }
    uint64_t hash() const { return hash_u64(key); }
    bool same_key(const Slot& o) const { return key == o.key; }
  };
  static uint64_t key(uint32_t l, uint32_t r) { return (uint64_t(l) << 32) | r; }

  OpenTable<Slot> table_;
};

}  // namespace tokenforge
