#include "bpe.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <pthread.h>
#include <queue>
#include <type_traits>
#include <vector>

namespace tokenforge {

namespace {
constexpr uint32_t kNoRank = ~0u;
// Pieces up to this many bytes use the quadratic scan (fast for short pieces, as in tiktoken);
// longer ones the heap, which keeps pathological pieces (a megabyte of spaces) at O(n log n).
constexpr size_t kShortPiece = 40;
static_assert(kShortPiece < 256, "merge_short packs a part index in 8 bits");

// The big tier, for pieces that are not tokens, one for the process (SharedBigTier below; it was
// per thread until session 19): one 64-byte entry (one cache line) per piece of up to 30 bytes and
// 6 ids, 65536 entries (4 MiB: the working set of a language's frequent words) in sets of 4 (a
// piece's hash picks the set; a new entry takes the place of the set's oldest). The key's first 16
// bytes are kept as two zero-padded words, compared as integers like the short-token table's keys.
// Entries carry the serial number of the model that made them (never reused, unlike an address).
// Measured on multilingual text: twice the entries of the former 128-byte entries (54 bytes, 16
// ids) in the same memory raise the hit rate from 77% to 81%; the longer pieces it no longer keeps
// are 2% of the pieces, and 98% of the others have at most 6 ids. Sets of 4 instead of one entry
// per hash (the same memory): merged pieces 3.1% -> 2.3% of the pieces on 12 MB of multilingual
// text (a table of 4 million entries: 1.6%, the rest is first sightings and the long pieces of the
// tier below), 0.88% -> 0.84% on English.
constexpr size_t kCacheKey = 30, kCacheIds = 6, kCacheWays = 4, kCacheLines = 65536;
// The long tier: the merged pieces the big tier cannot hold (31 to 96 bytes, or 7 to 36 ids:
// runs of '-' or spaces in code and plain text, long words of other scripts, runs of CJK letters),
// 16384 entries of 256 bytes (4 MiB per thread) in sets of 4. Without it such pieces were merged
// again each time: in English text 0.05% of the pieces, but about 5% of the encoding time (perf);
// in Japanese and Chinese text, pieces of 30-43 characters. Session 9: 4096 entries of 512 bytes
// (128 bytes, 92 ids) in sets of 2 were too few for multilingual text: a 2 MB slice encoded again
// still merged ~1,400 of its pieces (callgrind: 91M -> 77M instructions per repeated slice; overall
// MB/s over repeated slices +17%). Pieces of more than 96 bytes or 36 ids are 0.8% of the pieces
// this tier sees; they are merged each time.
constexpr size_t kLongKey = 96, kLongIds = 36, kLongWays = 4, kLongLines = 16384;
std::atomic<uint64_t> next_serial{1};

// An array of n Ts on the stack when n <= Inline, else on the heap: merge_long's buffers for the
// pieces it sees most (31-256 bytes: words of other scripts, runs of CJK letters) cost no malloc.
// Ts are left uninitialized (new T[n], not make_unique, which zeroes them): a page of a large
// array is then touched only when used. merge_long's heap is sized for 2 entries per byte, 48 MB
// for a 3 MB piece, and a piece with few merges uses little of it (session 16: a million "鬱",
// one 3 MB piece of single-byte tokens, spent a third of its time zeroing 108 MB).
template <class T, size_t Inline>
class ScratchArray {
 public:
  explicit ScratchArray(size_t n) : data_(n <= Inline ? local_ : (heap_.reset(new T[n]), heap_.get())) {}
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  T local_[Inline];
  std::unique_ptr<T[]> heap_;
  T* data_;
};
}  // namespace

// The entries of the big and the long tier are left uninitialized (a tier's tags say which are
// filled), so a thread's cache costs memory only for the pages it uses (2 MiB ones where the
// kernel gives them: huge_pages.h).
struct alignas(64) BytePairModel::CacheLine {
  uint64_t lo, hi;  // key bytes 0..16, zero-padded
  uint64_t model;
  uint8_t len, count;
  uint8_t rest[kCacheKey - 16];  // key bytes 16..len
  uint32_t ids[kCacheIds];
};
static_assert(sizeof(BytePairModel::CacheLine) == 64, "one cache line per entry");

struct alignas(64) BytePairModel::LongLine {
  uint64_t model;
  uint16_t len;
  uint8_t count;
  uint32_t ids[kLongIds];
  uint8_t key[kLongKey];
};
static_assert(sizeof(BytePairModel::LongLine) == 256, "four cache lines per entry");
static_assert(sizeof(BytePairModel::HotEntry) == 32, "two hot entries per cache line");
static_assert(std::is_trivially_default_constructible<BytePairModel::CacheLine>::value &&
                  std::is_trivially_default_constructible<BytePairModel::LongLine>::value,
              "tier entries are not initialized");

namespace {
// A set-associative tier of `Lines` entries in sets of `Ways` (a piece's hash picks the set). Each
// entry has a 16-bit tag from other bits of the hash (0: empty) in a small array of its own, so
// a lookup reads only the entries whose tag matches: a miss, the common case on new text,
// usually reads no entry at all (4 or 2 more cache misses otherwise, each as dear as a merge step).
template <class Line, size_t Ways, size_t Lines>
struct Tier {
  struct Free {
    void operator()(Line* p) const { free_maybe_huge(p, sizeof(Line) * Lines); }
  };
  // Touched when a thread's cache is made (huge_pages.h): most of the 4 MiB is written late, only
  // for the pieces the tier keeps. (In ordinary pages instead, the multilingual pages, whose long
  // words use the tier most, were 2-3% slower: session 22.)
  std::unique_ptr<Line[], Free> lines{static_cast<Line*>(alloc_zeroed_maybe_huge(sizeof(Line) * Lines))};
  std::unique_ptr<uint16_t[]> tags{new (std::nothrow) uint16_t[Lines]()};
  std::unique_ptr<uint8_t[]> next_way{new (std::nothrow) uint8_t[Lines / Ways]()};  // per set: the way to fill next

  bool allocated() const { return lines && tags && next_way; }
  static size_t set_of(uint64_t h) { return (h & (Lines / Ways - 1)) * Ways; }  // (bits the hot tier does not use)
  static uint16_t tag_of(uint64_t h) { return uint16_t(h >> 16) | 1; }

  // The entry for hash h for which same(entry) holds, or null.
  template <class Same>
  const Line* find(uint64_t h, Same same) const {
    size_t set = set_of(h);
    uint16_t tag = tag_of(h);
    for (size_t way = 0; way < Ways; ++way)
      if (tags[set + way] == tag && same(lines[set + way])) return &lines[set + way];
    return nullptr;
  }
  // The entry to fill for hash h: its set's oldest (first in, first out, by a per-set counter;
  // keeping the set's entries in order of age instead moved 192 or 512 bytes, and wrote to each
  // of the set's lines, for every piece merged).
  Line& insert(uint64_t h) {
    size_t set = set_of(h), way = next_way[set / Ways];
    next_way[set / Ways] = uint8_t((way + 1) % Ways);
    tags[set + way] = tag_of(h);
    return lines[set + way];
  }
};
}  // namespace

struct BytePairModel::Tiers {
  Tier<LongLine, kLongWays, kLongLines> long_pieces;
};

namespace {
using CacheLine = BytePairModel::CacheLine;

// The big tier, shared by every thread of the process (session 19). Each batch thread had its
// own, so on new text each merged the pieces the others had merged already (on two threads over
// fresh English, `merge_short` took half as many samples again as on one), and each held 4 MiB
// more of the L3 this machine shares. Entries are read and written concurrently under a sequence
// number per set (a seqlock, as in Boehm's "Can seqlocks get along with programming language
// memory models?", 2012): a writer makes the number odd (compare-and-swap: one writer per set at a
// time; a writer that finds it odd skips its entry), writes, then makes it even again; a reader
// copies the entry and accepts the copy only if the number was even and unchanged around it.
// Every shared word is read and written with atomic operations (relaxed, ordered by the fences),
// so there is no data race, and a torn copy is never used: at worst a piece is merged again. No
// lock is ever waited for, so a fork() while a thread writes leaves the child a set that only
// misses. Entries carry their model's serial number, as before.
class SharedBigTier {
 public:
  // The process's tier, made at first use; null if its memory could not be allocated.
  static SharedBigTier* get() {
    static SharedBigTier* tier = make();
    return tier;
  }

  // Appends the ids of piece p[0..n) of `model` (first 16 bytes: k) and returns true if held.
  bool find(uint64_t h, uint64_t model, const ShortKey& k, const uint8_t* p, size_t n,
            std::vector<uint32_t>& out) const {
    const Set& set = sets_[set_of(h)];
    uint32_t before = __atomic_load_n(&set.sequence, __ATOMIC_ACQUIRE);
    if (before & 1) return false;  // being written
    uint16_t tag = tag_of(h);
    CacheLine line;
    bool found = false;
    for (size_t way = 0; way < kCacheWays && !found; ++way) {
      if (__atomic_load_n(&set.tags[way], __ATOMIC_RELAXED) != tag) continue;
      copy_in(set_of(h) * kCacheWays + way, line);
      found = line.model == model && line.len == n && line.lo == k.lo && line.hi == k.hi &&
              (n <= 16 || std::memcmp(line.rest, p + 16, n - 16) == 0);
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&set.sequence, __ATOMIC_RELAXED) != before || !found) return false;
    out.insert(out.end(), line.ids, line.ids + std::min<size_t>(line.count, kCacheIds));
    return true;
  }

  // Whether a piece of hash h was merged before, as far as the filter knows (see merged_once_).
  bool merged_before(uint64_t h) const {
    size_t bit = once_bit(h);
    return __atomic_load_n(&merged_once_[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63) & 1;
  }
  // Notes that a piece of hash h was merged (once); the filter is cleared when a quarter of its
  // bits are set. Plain atomic loads and stores, no read-modify-write: a bit another thread sets
  // at the same moment may be lost, which only delays that piece's entry by one merge. The marks
  // are counted by each thread (`unadded`, in its cache) and added to the process's count
  // kMarksPerAdd at a time (session 24: an atomic add of every mark to one counter, which shared a
  // cache line with the tier's pointers, made that line go back and forth between the cores of a
  // two-thread batch; perf put a third of cached_merge's time there).
  void mark_merged(uint64_t h, uint32_t& unadded) {
    size_t bit = once_bit(h);
    uint64_t word = __atomic_load_n(&merged_once_[bit >> 6], __ATOMIC_RELAXED);
    __atomic_store_n(&merged_once_[bit >> 6], word | uint64_t(1) << (bit & 63), __ATOMIC_RELAXED);
    if (++unadded < kMarksPerAdd) return;
    unadded = 0;
    if (__atomic_add_fetch(&marked_, kMarksPerAdd, __ATOMIC_RELAXED) % (kOnceBits / 4) == 0)
      for (size_t i = 0; i < kOnceBits / 64; ++i) __atomic_store_n(&merged_once_[i], 0, __ATOMIC_RELAXED);
  }

  // Keeps `line` (filled for hash h) in the place of its set's oldest entry, unless another
  // thread is writing to that set.
  void insert(uint64_t h, const CacheLine& line) {
    Set& set = sets_[set_of(h)];
    uint32_t sequence = __atomic_load_n(&set.sequence, __ATOMIC_RELAXED);
    if ((sequence & 1) || !__atomic_compare_exchange_n(&set.sequence, &sequence, sequence + 1, false,
                                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return;
    __atomic_thread_fence(__ATOMIC_RELEASE);  // (the odd number before any write below)
    size_t way = set.next_way;  // (only the writer of the set reads or writes next_way)
    set.next_way = uint8_t((way + 1) % kCacheWays);
    __atomic_store_n(&set.tags[way], tag_of(h), __ATOMIC_RELAXED);
    copy_out(line, set_of(h) * kCacheWays + way);
    __atomic_store_n(&set.sequence, sequence + 2, __ATOMIC_RELEASE);
  }

 private:
  struct alignas(16) Set {
    uint32_t sequence;  // odd while an entry of the set is being written
    uint8_t next_way;   // the way to fill next (first in, first out)
    uint16_t tags[kCacheWays];  // 16 bits of the hash per entry (0: empty), as Tier's
  };
  static constexpr size_t kSets = kCacheLines / kCacheWays;
  static size_t set_of(uint64_t h) { return h & (kSets - 1); }  // (bits the hot tier does not use)
  static uint16_t tag_of(uint64_t h) { return uint16_t(h >> 16) | 1; }

  // The entries are kept as words, each read or written atomically, and copied to and from a
  // CacheLine of the caller's.
  static constexpr size_t kWords = sizeof(CacheLine) / 8;
  void copy_in(size_t entry, CacheLine& to) const {
    uint64_t words[kWords];
    const uint64_t* from = &words_[entry * kWords];
    for (size_t i = 0; i < kWords; ++i) words[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
    std::memcpy(&to, words, sizeof to);
  }
  void copy_out(const CacheLine& from, size_t entry) {
    uint64_t words[kWords];
    std::memcpy(words, &from, sizeof words);
    uint64_t* to = &words_[entry * kWords];
    for (size_t i = 0; i < kWords; ++i) __atomic_store_n(&to[i], words[i], __ATOMIC_RELAXED);
  }

  static SharedBigTier* make() {
    auto* tier = new (std::nothrow) SharedBigTier;
    if (tier && tier->words_ && tier->sets_ && tier->merged_once_) return tier;
    delete tier;
    return nullptr;
  }
  // (The entries' pages touched at the first use in the process: huge_pages.h.)
  SharedBigTier()
      : words_(static_cast<uint64_t*>(alloc_zeroed_maybe_huge(sizeof(CacheLine) * kCacheLines))),
        sets_(new (std::nothrow) Set[kSets]()) {}
  ~SharedBigTier() {
    if (words_) free_maybe_huge(words_, sizeof(CacheLine) * kCacheLines);
  }

  uint64_t* words_;  // kWords per entry, uninitialized: a set's tags say which entries are filled
  std::unique_ptr<Set[]> sets_;
  // The pieces merged once: a bit per hash (a Bloom filter of one function, 64 KiB, in L2),
  // set at a piece's first merge. A piece enters the tier at its second merge, and the tier is
  // read only for pieces whose bit is set. Most merged pieces of English text are seen once in
  // millions of characters, and looking each up and writing its entry into the 4 MiB tier cost
  // more than the tier saved (session 20, fresh slices in turn: without the tier English 6-10%
  // faster, multilingual 2-8% slower).
  static constexpr size_t kOnceBits = size_t(1) << 19;
  static size_t once_bit(uint64_t h) { return (h * 0x9E3779B97F4A7C15ull) >> (64 - 19); }
  std::unique_ptr<uint64_t[]> merged_once_{new (std::nothrow) uint64_t[kOnceBits / 64]()};
  static constexpr uint32_t kMarksPerAdd = 256;
  static_assert((kOnceBits / 4) % kMarksPerAdd == 0, "the count passes each multiple of kOnceBits / 4");
  // Bits marked (with repeats), atomically added to, on a cache line of its own: the pointers
  // above are read by every thread on every lookup.
  alignas(64) uint64_t marked_ = 0;
};
static_assert(sizeof(CacheLine) % 8 == 0, "entries are copied as words");
}  // namespace

namespace {
constexpr size_t kHotBytes = sizeof(BytePairModel::HotEntry) * (BytePairModel::kHotEntries + BytePairModel::kVictimEntries);
BytePairModel::HotEntry no_entries[BytePairModel::kHotEntries + BytePairModel::kVictimEntries];  // (zeros, read only)
}  // namespace

BytePairModel::Cache::Cache(bool allocate) : hot(no_entries) {
  if (!allocate) return;
  void* block = alloc_zeroed_maybe_huge(kHotBytes);
  if (block == nullptr) return;
  hot = static_cast<HotEntry*>(block);
  tiers.reset(new (std::nothrow) Tiers);
  if (tiers && !tiers->long_pieces.allocated()) tiers.reset();
}
BytePairModel::Cache::~Cache() {
  if (hot != no_entries) free_maybe_huge(hot, kHotBytes);
}

namespace {

// Batch threads are mostly the parked threads of cpp/worker_pool.h, which keep their caches; but a
// batch that finds the pool in use, or asks for more threads, or runs where allocations can fail,
// starts threads of its own, and without care each would allocate and clear a 6.5 MiB cache and
// then miss on every piece. Instead such a thread hands its cache to
// this pool when it ends and the next thread takes it, warm. The pool is a few atomic slots,
// taken and filled by exchange: no lock, so a fork() at any moment leaves the child a usable pool
// (a cache being handed over by another thread is only lost to the child). Caches beyond the
// slots are freed.
constexpr size_t kPooledCaches = 8;
std::atomic<BytePairModel::Cache*> pooled_caches[kPooledCaches];

BytePairModel::Cache* take_pooled_cache() {
  for (auto& slot : pooled_caches)
    if (slot.load(std::memory_order_relaxed))
      if (BytePairModel::Cache* c = slot.exchange(nullptr, std::memory_order_acquire)) return c;
  return nullptr;
}

void give_back_cache(BytePairModel::Cache* c) {
  for (auto& slot : pooled_caches) {
    BytePairModel::Cache* empty = nullptr;
    if (slot.compare_exchange_strong(empty, c, std::memory_order_release, std::memory_order_relaxed)) return;
  }
  delete c;
}

// A thread that cannot allocate a cache (an address-space limit while a batch starts its threads)
// encodes without one: it reads this empty cache, which is never written to (every write is
// guarded by `tiers`), so it can be shared.
BytePairModel::Cache* no_cache() {
  static BytePairModel::Cache empty(false);  // made (and its memory touched) only when first needed
  return &empty;
}

// A new cache for the calling thread: a warm one from the pool, else a fresh one, else (no memory)
// the shared empty one.
BytePairModel::Cache* new_thread_cache() {
  BytePairModel::Cache* cache = take_pooled_cache();
  if (cache) return cache;
  cache = new (std::nothrow) BytePairModel::Cache(true);
  if (cache && !cache->tiers) {
    delete cache;
    cache = nullptr;
  }
  return cache ? cache : no_cache();
}

// Each thread's cache hangs on a pthread key, not on a C++ thread_local: this module is loaded
// with dlopen, so a thread's first use of one of its thread_locals makes glibc allocate the
// module's TLS block with malloc, and abort the process if that fails (an address-space limit
// while a batch starts many threads). pthread_getspecific never allocates, and a failed
// pthread_setspecific can be handled: the thread encodes without a cache. When the thread ends,
// its cache goes to the pool.
struct CacheKey {
  pthread_key_t key;
  bool ok;
  CacheKey() {
    ok = pthread_key_create(&key, [](void* c) {
           auto* cache = static_cast<BytePairModel::Cache*>(c);
           if (cache->tiers) give_back_cache(cache);  // not the shared empty one
         }) == 0;
  }
};

BytePairModel::Cache* thread_cache() {
  static CacheKey k;  // (a static, initialized once under a lock without thread-local storage)
  if (!k.ok) return no_cache();
  if (void* c = pthread_getspecific(k.key)) return static_cast<BytePairModel::Cache*>(c);
  BytePairModel::Cache* cache = new_thread_cache();
  if (pthread_setspecific(k.key, cache) != 0) {
    if (cache->tiers) give_back_cache(cache);
    return no_cache();
  }
  return cache;
}

using LongLine = BytePairModel::LongLine;

template <class Line>
void append_ids(const Line& line, std::vector<uint32_t>& out) {
  out.insert(out.end(), line.ids, line.ids + line.count);
}

// Fills a big-tier entry with the piece p[0..n) (first 16 bytes: k) and ids[0..count), count <= 6.
void fill(CacheLine& line, uint64_t model, const ShortKey& k, const uint8_t* p, size_t n, const uint32_t* ids,
          size_t count) {
  line.model = model;
  line.lo = k.lo;
  line.hi = k.hi;
  line.len = uint8_t(n);
  line.count = uint8_t(count);
  for (size_t i = 16; i < n; ++i) line.rest[i - 16] = p[i];  // (a loop: memcpy(n - 16) warns when n <= 16 is inlined)
  std::copy(ids, ids + count, line.ids);
}

// Fills a long-tier entry with the piece p[0..n) and ids[0..count), count <= 92.
void fill(LongLine& line, uint64_t model, const uint8_t* p, size_t n, const uint32_t* ids, size_t count) {
  line.model = model;
  line.len = uint16_t(n);
  line.count = uint8_t(count);
  std::memcpy(line.key, p, n);
  std::copy(ids, ids + count, line.ids);
}
}  // namespace

BytePairModel::Cache* BytePairModel::cache() const {
  Cache* c = thread_cache();
  if (c->hot_model != serial_ && c->tiers) {  // (never for the shared empty cache)  // a new epoch: the hot entries of the previous model go stale
    c->hot_model = serial_;
    if (++c->hot_epoch == 0) {  // wrapped after 2^16 switches: clear, so no old epoch can match
      for (size_t i = 0; i < kHotEntries + kVictimEntries; ++i) c->hot[i].tag = 0;  // (the victims follow)
      c->hot_epoch = 1;
    }
  }
  return c;
}

BytePairModel::BatchText::BatchText(bool on) {
  if (!on) return;
  cache_ = thread_cache();
  cache_->in_batch = true;
}

BytePairModel::BatchText::~BatchText() {
  if (cache_) cache_->in_batch = false;
}

namespace {
// Moves a hot entry of the current epoch to the victim entries, at its own hash's place. (Single
// bytes are not kept there: their miss costs no more than the victim lookup.)
void evict(BytePairModel::Cache* cache, const BytePairModel::HotEntry& e) {
  uint32_t len = (e.tag >> 16) & 0xFF;  // (more than 16 for a stretch: stretches are not kept)
  if ((e.tag & 0xFFFF) == cache->hot_epoch && len > 1 && len <= ShortKey::kMaxLen)
    cache->victims()[BytePairModel::victim_index(hash_short({e.lo, e.hi, len}))] = e;
}

void remember_hot(BytePairModel::Cache* cache, BytePairModel::HotEntry& e, const ShortKey& k, const uint32_t* ids,
                  size_t count, uint32_t flags = 0) {
  if (count > 4) return;
  if (count == 4 && ((ids[0] | ids[1] | ids[2] | ids[3]) >> 24)) return;
  uint16_t epoch = cache->hot_epoch;
  evict(cache, e);
  e.lo = k.lo;
  e.hi = k.hi;
  e.tag = BytePairModel::hot_tag(epoch, k.len) | flags | uint32_t(count) << 24;
  e.ids[0] = ids[0];
  e.ids[1] = count >= 2 ? ids[1] : 0;
  e.ids[2] = count >= 3 ? ids[2] : 0;
  if (count == 4) {  // four ids of 24 bits: the fourth in the three top bytes
    e.ids[0] |= ids[3] << 24;
    e.ids[1] |= (ids[3] >> 8) << 24;
    e.ids[2] |= (ids[3] >> 16) << 24;
  }
}
}  // namespace

std::unique_ptr<BytePairModel> BytePairModel::create(
    const std::vector<std::pair<uint32_t, std::string>>& tokens, const std::vector<MergeRule>& merges,
    bool whole_piece_lookup, std::string* error) {
  std::unique_ptr<BytePairModel> m(new BytePairModel());
  m->serial_ = next_serial.fetch_add(1);
  m->whole_piece_lookup_ = whole_piece_lookup;
  size_t long_bytes = 0, num_short = 0, num_long = 0;
  for (const auto& t : tokens) {
    if (t.second.empty()) {
      *error = "token " + std::to_string(t.first) + " has no bytes";
      return nullptr;
    }
    if (t.first == kNoRank) {  // the merge loops' "no merge" / "gone" marker
      *error = "token id " + std::to_string(t.first) + " is reserved (ids must be below 2^32 - 1)";
      return nullptr;
    }
    if (t.second.size() <= ShortKey::kMaxLen) {
      ++num_short;
    } else {
      ++num_long;
      long_bytes += t.second.size();
    }
  }
  m->short_tokens_.reserve(num_short);
  m->long_tokens_.reserve(num_long);
  m->arena_.reserve(long_bytes);  // never reallocated below: long_tokens_ points into it
  for (const auto& t : tokens) {
    const std::string& b = t.second;
    bool fresh;
    if (b.size() <= ShortKey::kMaxLen) {
      fresh = m->short_tokens_.insert(short_key(reinterpret_cast<const uint8_t*>(b.data()), b.size(),
                                                reinterpret_cast<const uint8_t*>(b.data()) + b.size()),
                                      t.first);
    } else {
      size_t at = m->arena_.size();
      m->arena_ += b;
      fresh = m->long_tokens_.insert(reinterpret_cast<const uint8_t*>(m->arena_.data()) + at, uint32_t(b.size()),
                                     t.first);
    }
    if (!fresh) {
      *error = "two tokens have the same bytes (ids " + std::to_string(t.first) + ")";
      return nullptr;
    }
  }
  m->short_tokens_.finish();
  for (int b = 0; b < 256; ++b) {
    uint8_t byte = uint8_t(b);
    if (!m->lookup(&byte, 1, &m->byte_id_[b])) {
      *error = "byte " + std::to_string(b) + " is not a token; every single byte must be one";
      return nullptr;
    }
  }
  m->two_byte_token_.assign(65536, kNoToken);
  for (const auto& t : tokens)
    if (t.second.size() == 2) m->two_byte_token_[uint8_t(t.second[0]) | (uint8_t(t.second[1]) << 8)] = t.first;
  m->rank_rule_ = merges.empty();
  if (m->rank_rule_) {
    m->build_low_pairs(tokens);
    m->find_whole_characters(tokens);
  }
  m->pairs_.reserve(merges.size());
  if (!m->rank_rule_) m->low_merges_.assign(size_t(kLowIds) * kLowIds, kLowMergeNone);
  for (size_t r = 0; r < merges.size(); ++r) {
    const MergeRule& rule = merges[r];
    // A repeated pair keeps its first (highest-priority) rank, as in Hugging Face tokenizers.
    PairMap::Merge merge{uint32_t(r), rule.merged};
    m->pairs_.insert(rule.left, rule.right, merge);
    if ((rule.left | rule.right) < kLowIds) {
      uint32_t& low = m->low_merges_[rule.left * kLowIds + rule.right];
      if (low == kLowMergeNone)
        low = r < 0xFFFF && rule.merged <= 0xFFFF ? uint32_t(r) << 16 | rule.merged : kLowMergeElsewhere;
    }
  }
  m->find_joined_bytes(tokens);
  if (!m->rank_rule_) m->find_whole_characters_of_pairs(tokens, merges);  // (also marks the rules' joined bytes)
  m->find_joined_characters(tokens);
  return m;
}

// Whole characters. In text of other scripts most of the merge loops' work was joining each
// character's two or three bytes, the same merges in every piece. A character c may instead start
// as its token t when every merge its bytes could take part in before they are t ranks above the
// merges that make t:
//   (a) c's bytes alone merge into t; R is the highest rank of those merges (t's own, or for
//       3 bytes the first pair's, if it ranks above t);
//   (b) no longer token containing c has a rank below R;
//   (c) no token joining part of c's bytes to the neighbouring byte (prev + c's first byte or two,
//       c's last byte or two + next) has a rank below R.
// Then while c is not yet t, one of its own merges (rank <= R) is always a candidate, so nothing
// ranked above R merges anywhere in the piece, and by (c) nothing joins part of c to a neighbour;
// c becomes t exactly as alone. Starting from t changes nothing else: the merges t could take part
// in early rank above R (b), after every merge the loop makes while c is still in bytes. The bounds
// are per neighbouring byte (c), not over every token, because tokens such as " \xd0" (a space and
// the first byte of most Cyrillic letters, rank 1301 in cl100k) would otherwise rule out almost
// every Cyrillic letter. 66-86% of the 2- and 3-byte characters of the multilingual corpus start
// whole (cl100k, o200k). The tests check the loops against tiktoken and the reference on text
// written to hit the bounds.
namespace {
bool continuation(uint8_t b) { return (b & 0xC0) == 0x80; }
size_t index2(const uint8_t* c) { return size_t(c[0] & 0x1F) << 6 | (c[1] & 0x3F); }
size_t index3(const uint8_t* c) { return size_t(c[0] & 0x0F) << 12 | size_t(c[1] & 0x3F) << 6 | (c[2] & 0x3F); }
}  // namespace

void BytePairModel::clear_whole_characters() {
  left_bound_.assign(256 * 64, kNoToken);
  right_bound2_.assign(64 * 256, kNoToken);
  right_bound3_.assign(64 * 256, kNoToken);
  char2_.assign(2048, {0, kNoToken});
  char3_.assign(65536, {0, kNoToken});
}

void BytePairModel::lower_left_bound(uint8_t prev, const uint8_t* part, size_t part_len, uint32_t rank) {
  // part: a 2- or 3-byte character's first byte, or a 3-byte character's first two
  if ((part_len == 1 && part[0] >= 0xC0 && part[0] < 0xF0) ||
      (part_len == 2 && part[0] >= 0xE0 && part[0] < 0xF0 && continuation(part[1]))) {
    uint32_t& bound = left_bound_[prev * 64 + (part[0] - 0xC0)];
    bound = std::min(bound, rank);
  }
}

void BytePairModel::lower_right_bound(const uint8_t* part, size_t part_len, uint8_t next, uint32_t rank) {
  auto lower = [rank](uint32_t& bound) { bound = std::min(bound, rank); };
  if (part_len == 1 && continuation(part[0])) {  // the last byte of a 2- or 3-byte character
    lower(right_bound2_[(part[0] - 0x80) * 256 + next]);
    lower(right_bound3_[(part[0] - 0x80) * 256 + next]);
  } else if (part_len == 2 && continuation(part[0]) && continuation(part[1])) {  // a 3-byte one's last two
    lower(right_bound3_[(part[1] - 0x80) * 256 + next]);
  }
}

void BytePairModel::find_whole_characters(const std::vector<std::pair<uint32_t, std::string>>& tokens) {
  clear_whole_characters();
  std::vector<uint32_t> inside2(2048, kNoToken), inside3(65536, kNoToken);  // (b): the lowest rank of a longer token
  for (const auto& token : tokens) {
    const uint8_t* t = reinterpret_cast<const uint8_t*>(token.second.data());
    size_t n = token.second.size();
    uint32_t rank = token.first;
    auto lower = [rank](uint32_t& bound) { bound = std::min(bound, rank); };
    if (n < 2) continue;
    // (c): the token ends with a character's first byte or two, or starts with its last byte or two
    lower_left_bound(t[n - 2], t + n - 1, 1, rank);
    if (n >= 3) lower_left_bound(t[n - 3], t + n - 2, 2, rank);
    lower_right_bound(t, 1, t[1], rank);
    if (n >= 3) lower_right_bound(t, 2, t[2], rank);
    for (size_t i = 0; i < n;) {  // the characters inside (every one starts at a first byte)
      size_t k = t[i] >= 0xC0 && t[i] < 0xE0 ? 2 : t[i] >= 0xE0 && t[i] < 0xF0 ? 3 : 1;
      if (k > 1 && i + k <= n && continuation(t[i + 1]) && (k == 2 || continuation(t[i + 2]))) {
        if (k != n) lower(k == 2 ? inside2[index2(t + i)] : inside3[index3(t + i)]);
        i += k;
      } else {
        ++i;
      }
    }
  }
  for (const auto& token : tokens) {
    const uint8_t* t = reinterpret_cast<const uint8_t*>(token.second.data());
    size_t n = token.second.size();
    uint32_t rank = token.first;
    if (n == 2 && t[0] >= 0xC0 && t[0] < 0xE0 && continuation(t[1])) {
      if (inside2[index2(t)] > rank) char2_[index2(t)] = {rank, rank};  // (its one merge makes it)
    } else if (n == 3 && t[0] >= 0xE0 && t[0] < 0xF0 && continuation(t[1]) && continuation(t[2])) {
      uint32_t first = std::min(two_byte_token_[t[0] | t[1] << 8], two_byte_token_[t[1] | t[2] << 8]);
      if (first == kNoToken) continue;  // its bytes never merge into it
      uint32_t own = std::max(first, rank);
      if (inside3[index3(t)] > own) char3_[index3(t)] = {rank, own};
    }
  }
}

// Whole characters under the pairs rule (session 11; merges lists of tokenizer.json files). The
// argument above holds with merges in place of tokens: (a) c's bytes alone merge into its token t
// through listed merges (for 3 bytes, the better-ranked of its two byte pairs first), R the
// highest rank among them; (b) no listed merge with t on either side ranks below R; (c) no listed
// merge joins a part c has while it forms (its first byte, or first two; its last byte, or last
// two) to a neighbour ending in byte prev / starting with byte next below R. While c forms, one of
// its own merges (<= R) is always a candidate, so only merges ranked below it fire anywhere, none
// touching c by (c); started as t, c takes part in nothing before that by (b). The bounds are kept
// per neighbouring byte over every listed merge, in the rank rule's tables.
void BytePairModel::find_whole_characters_of_pairs(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                                   const std::vector<MergeRule>& merges) {
  // Flat tables (session 14: two std::unordered_maps here were a seventh of loading a tokenizer.json)
  IdMap index_of_id;  // a token id -> its index in tokens
  index_of_id.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) index_of_id.insert(tokens[i].first, uint32_t(i));
  clear_whole_characters();
  std::vector<uint32_t> beside(tokens.size(), kNoRank);  // (b): by token index, the lowest rank of a merge with it on a side
  bool joins_bytes = true;  // every rule's merged token holds its two parts' bytes, joined
  for (size_t r = 0; r < merges.size(); ++r) {
    uint32_t l, x, m;
    if (!index_of_id.find(merges[r].left, &l) || !index_of_id.find(merges[r].right, &x)) {
      joins_bytes = false;  // (a rule joining bytes we do not know)
      continue;
    }
    const std::string& left = tokens[l].second;
    const std::string& right = tokens[x].second;
    if (!index_of_id.find(merges[r].merged, &m) || tokens[m].second.size() != left.size() + right.size() ||
        tokens[m].second.compare(0, left.size(), left) != 0 ||
        tokens[m].second.compare(left.size(), right.size(), right) != 0)
      joins_bytes = false;
    if (left.empty() || right.empty()) continue;  // (parts are never empty: such a rule never applies)
    const uint8_t* a = reinterpret_cast<const uint8_t*>(left.data());
    const uint8_t* b = reinterpret_cast<const uint8_t*>(right.data());
    size_t na = left.size(), nb = right.size();
    mark_joined_bytes(a[na - 1], b[0]);  // the junction this rule's merge makes
    uint32_t rank = uint32_t(r);
    // (c): the right part is a character's first byte or two, or the left part its last byte or two
    lower_left_bound(a[na - 1], b, nb, rank);
    lower_right_bound(a, na, b[0], rank);
    beside[l] = std::min(beside[l], rank);
    beside[x] = std::min(beside[x], rank);
  }
  auto merge_of = [&](uint32_t left, uint32_t right, PairMap::Merge* m) {
    const PairMap::Merge* found = pairs_.find(left, right);
    if (found) *m = *found;
    return found != nullptr;
  };
  auto below_beside = [&](uint32_t id, uint32_t own) {  // (b)
    uint32_t i;
    return !index_of_id.find(id, &i) || beside[i] > own;
  };
  for (const auto& token : tokens) {
    const uint8_t* t = reinterpret_cast<const uint8_t*>(token.second.data());
    size_t n = token.second.size();
    PairMap::Merge first, last;
    if (n == 2 && t[0] >= 0xC0 && t[0] < 0xE0 && continuation(t[1])) {
      if (merge_of(byte_id_[t[0]], byte_id_[t[1]], &last) && last.merged == token.first &&
          below_beside(token.first, last.rank))
        char2_[index2(t)] = {token.first, last.rank};
    } else if (n == 3 && t[0] >= 0xE0 && t[0] < 0xF0 && continuation(t[1]) && continuation(t[2])) {
      PairMap::Merge m12, m23;
      bool has12 = merge_of(byte_id_[t[0]], byte_id_[t[1]], &m12);
      bool has23 = merge_of(byte_id_[t[1]], byte_id_[t[2]], &m23);
      if (!has12 && !has23) continue;
      bool left_first = has12 && (!has23 || m12.rank < m23.rank);  // alone, the better-ranked pair merges first
      first = left_first ? m12 : m23;
      bool done = left_first ? merge_of(m12.merged, byte_id_[t[2]], &last) : merge_of(byte_id_[t[0]], m23.merged, &last);
      if (!done || last.merged != token.first) continue;
      uint32_t own = std::max(first.rank, last.rank);
      if (below_beside(token.first, own)) char3_[index3(t)] = {token.first, own};
    }
  }
  // The arguments for whole characters and cuts read a part's bytes from its token. A rule naming
  // an id that is no token, or whose merged token is not its two parts' bytes (no real file has
  // one; the constructor allows it), would make them wrong: then no character starts whole and no
  // piece is cut (between characters or between bytes).
  if (!joins_bytes) {
    clear_whole_characters();
    joined_bytes_.clear();
  }
}

size_t BytePairModel::whole_character(const uint8_t* p, size_t i, size_t n, uint32_t* id) const {
  uint8_t b = p[i];
  if (b >= 0xF0 || char3_.empty()) return 1;
  size_t k = b < 0xE0 ? 2 : 3;
  if (i + k > n || !continuation(p[i + 1]) || (k == 3 && !continuation(p[i + 2]))) return 1;
  const CharToken& c = k == 2 ? char2_[index2(p + i)] : char3_[index3(p + i)];
  if (c.own_rank == kNoToken) return 1;
  if (i > 0 && left_bound_[p[i - 1] * 64 + (b - 0xC0)] <= c.own_rank) return 1;
  if (i + k < n && (k == 2 ? right_bound2_ : right_bound3_)[(p[i + k - 1] - 0x80) * 256 + p[i + k]] <= c.own_rank)
    return 1;
  *id = c.id;
  return k;
}

// Cuts (session 12). Runs of Japanese or Chinese letters are one piece of 30-100 bytes, nearly
// every one seen for the first time, and merging them was most of the time on such text. Where
// two neighbouring characters a and b are both whole (above) and no token holds a's bytes followed
// by b's, no merge ever joins across them: a merge across would make a token holding the whole of
// a and b (whole characters take part in merges only as their tokens). The same holds beside one
// whole character (session 26): where a is whole and no token holds a's bytes followed by the
// byte after it, or b is whole and no token holds the byte before it followed by b's bytes. (The
// first merge across such a place joins a part ending there to one starting there; the part on
// the whole character's side holds all of it, so the token made holds it and the byte beside.)
// Characters that are not whole (in cl100k, 39% of the 3-byte ones of Chinese text: rarer letters
// of two or three tokens) then stand alone instead of joining their neighbours' stretch. So the
// piece's ids are those of the stretches between such cuts, each merged alone from its bytes (a
// stretch of one whole character is its token; docs/design.md, "Cuts, session 12"). Where the whole-piece
// shortcut applies the caller has found the piece not to be a token; the shortcut belongs to the
// piece, so a stretch is merged, never looked up whole. Returns false, with out untouched, when
// the piece has no cut.
bool BytePairModel::encode_cut(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const {
  if (joined_bits_.empty() || n <= ShortKey::kMaxLen) return false;
  // Runs of 3-byte letters start at once or after one mark (a space, or a 3-byte mark such as
  // U+300C): other pieces (words of 2-byte scripts, most short pieces) are not scanned.
  auto three_byte_lead = [&](size_t i) { return p[i] >= 0xE0 && p[i] < 0xF0; };
  if (!three_byte_lead(0) && !three_byte_lead(1) && !three_byte_lead(3)) return false;
  size_t begin = 0;                // the current stretch
  size_t last_end = SIZE_MAX;      // the end of the last whole 3-byte character
  uint32_t last_key = 0, last_id = 0;
  bool cut = false;
  auto emit = [&](size_t end) {
    if (end - begin == 3 && last_end == end) return out.push_back(last_id);  // one whole character
    encode_stretch(p + begin, end - begin, p + n, cache, out);
  };
  for (size_t i = 0; i < n;) {
    // Without a cut in its first 64 characters a piece is given up (a million of one character
    // whose pairs are tokens was scanned to the end, then merged: 20% slower than without cuts).
    if (!cut && i >= 192) return false;
    uint32_t id;
    if (!three_byte_lead(i) || whole_character(p, i, n, &id) != 3) {
      if (last_end == i && !maybe_joined(before_byte_key(last_key, p[i]))) {  // whole, then any byte
        emit(i);
        begin = i;
        cut = true;
      }
      ++i;
      continue;
    }
    uint32_t key = uint32_t(index3(p + i));
    if (i > begin && !maybe_joined(last_end == i ? joined_key(last_key, key)              // two whole
                                                 : after_byte_key(p[i - 1], key))) {  // any byte, then whole
      emit(i);
      begin = i;
      cut = true;
    }
    last_end = i + 3;
    last_key = key;
    last_id = id;
    i += 3;
  }
  if (cut) emit(n);
  return cut;
}

// A stretch s[0..len) of a cut piece (in a buffer ending at `end`), merged alone. A short one (a
// word of two or three letters, letters after a space or a mark) goes through the hot tier,
// tagged as a stretch: it was merged without the whole-piece lookup, so it must not answer for a
// piece of the same bytes.
void BytePairModel::encode_stretch(const uint8_t* s, size_t len, const uint8_t* end, Cache* cache,
                                   std::vector<uint32_t>& out) const {
  if (len == 1) return out.push_back(byte_id_[s[0]]);
  if (len > ShortKey::kMaxLen) return merge(s, len, out);
  ShortKey k = short_key(s, len, end);
  HotEntry& hot = cache->hot[hot_index(hash_short(k))];
  uint32_t tag = hot_tag(cache->hot_epoch, len) | kStretchTag;
  if (hot_matches(hot, k, tag)) return emit_ids(hot, out);
  size_t before = out.size();
  merge(s, len, out);
  if (cache->tiers) remember_hot(cache, hot, k, out.data() + before, out.size() - before, kStretchTag);
}

// Byte cuts (session 25). Every merge joins two parts into one whose bytes hold the left part's
// last byte followed by the right part's first: under the rank rule a token (the joined bytes are
// looked up), under merge rules a rule's junction. So where neighbouring bytes a, b stand side by
// side in no token (rank rule) and at no rule's junction (merge rules), no part ever spans them:
// the merges on either side never see each other (a pair across the cut has no rank), and the
// piece's ids are those of the stretches between such cuts, each merged alone. Of the 65,536 byte
// pairs 6,611 stand side by side in some cl100k token, 10,439 in some o200k token. A piece of a
// million '鬱' (bytes E9 AC B1, no two of them side by side in a cl100k token) was one merge loop
// over 3M parts that never merge; now it is 3M stretches of one byte. For long pieces only
// (merge_long's): shorter ones are cheap to merge and mostly cached. Returns false, with out
// untouched, when the piece has no cut.
bool BytePairModel::encode_byte_cut(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const {
  if (joined_bytes_.empty() || n <= kShortPiece) return false;
  size_t begin = 0;
  for (size_t i = 1; i < n; ++i) {
    if (bytes_may_join(p[i - 1], p[i])) continue;
    encode_stretch(p + begin, i - begin, p + n, cache, out);
    begin = i;
  }
  if (begin == 0) return false;
  encode_stretch(p + begin, n - begin, p + n, cache, out);
  return true;
}

// A piece no tier holds: merged in the stretches between its cuts, else whole.
void BytePairModel::merge_in_stretches(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const {
  if (!encode_cut(p, n, cache, out) && !encode_byte_cut(p, n, cache, out)) merge(p, n, out);
}

// The byte pairs side by side in some token (for merge rules, find_whole_characters_of_pairs
// adds each rule's junction).
void BytePairModel::find_joined_bytes(const std::vector<std::pair<uint32_t, std::string>>& tokens) {
  joined_bytes_.assign(65536 / 64, 0);
  for (const auto& t : tokens)
    for (size_t i = 0; i + 1 < t.second.size(); ++i) mark_joined_bytes(uint8_t(t.second[i]), uint8_t(t.second[i + 1]));
}

// The merge loops' lookups of a pair of tokens joined (3 bytes or more) cost a hash, the Bloom
// filter and, for the joined bytes that are a token, a probe of the 6-12 MB token table; those of
// two tokens among the first 512 ranks (single bytes and the earliest merges) are about half of
// them on text (cl100k: 45-55% on the multilingual pages' ASCII and Latin lines, English prose
// and code). They get a direct table of every such pair. Session 16, two threads taking turns on
// one core over the same fresh slices (100,000 bytes): the multilingual pages' ASCII lines +3-5%,
// Latin lines +2-6%, code +0-3%, English unchanged; 1,024 ranks (4 MiB) did no better (code -2-4%).
void BytePairModel::build_low_pairs(const std::vector<std::pair<uint32_t, std::string>>& tokens) {
  std::vector<const std::string*> text(kLowIds, nullptr);
  std::vector<__uint128_t> key(kLowIds, 0);  // the bytes of a token of up to 16 bytes, as in a ShortKey
  for (const auto& t : tokens) {
    if (t.first >= kLowIds) continue;
    text[t.first] = &t.second;
    if (t.second.size() <= ShortKey::kMaxLen) {
      ShortKey k = short_key(reinterpret_cast<const uint8_t*>(t.second.data()), t.second.size(),
                             reinterpret_cast<const uint8_t*>(t.second.data()) + t.second.size());
      key[t.first] = __uint128_t(k.hi) << 64 | k.lo;
    }
  }
  low_pairs_.assign(size_t(kLowIds) * kLowIds, kLowNone);
  std::string joined;
  for (uint32_t left = 0; left < kLowIds; ++left) {
    if (!text[left]) continue;
    for (uint32_t right = 0; right < kLowIds; ++right) {
      if (!text[right]) continue;
      uint32_t id;
      bool found;
      size_t n = text[left]->size() + text[right]->size();
      if (n <= ShortKey::kMaxLen) {  // the joined key from the two (the bytes after a key are zeros)
        __uint128_t k = key[left] | key[right] << (8 * text[left]->size());
        found = short_tokens_.find(ShortKey{uint64_t(k), uint64_t(k >> 64), uint32_t(n)}, &id);
      } else {
        joined.assign(*text[left]).append(*text[right]);
        found = lookup(reinterpret_cast<const uint8_t*>(joined.data()), joined.size(), &id);
      }
      if (found) low_pairs_[left * kLowIds + right] = id < kLowElsewhere ? uint16_t(id) : kLowElsewhere;
    }
  }
}

// The filter of maybe_joined: one bit per key found in some token (a 3-byte character beside
// another, or beside a byte), 16 bits or more of filter per key (at most about 6% of the other
// keys read as "maybe": no cut there). cl100k has 407 pairs of characters, 521 characters with a
// byte after them and 679 with a byte before them in its tokens; o200k 11,890, 4,056 and 13,417.
void BytePairModel::find_joined_characters(const std::vector<std::pair<uint32_t, std::string>>& tokens) {
  std::vector<uint64_t> keys;
  for (const auto& token : tokens) {
    const uint8_t* t = reinterpret_cast<const uint8_t*>(token.second.data());
    size_t n = token.second.size();
    auto three = [&](size_t i) {
      return i + 3 <= n && t[i] >= 0xE0 && t[i] < 0xF0 && continuation(t[i + 1]) && continuation(t[i + 2]);
    };
    for (size_t i = 0; i + 3 <= n; ++i) {
      if (!three(i)) continue;
      uint32_t c = uint32_t(index3(t + i));
      if (i > 0) keys.push_back(after_byte_key(t[i - 1], c));
      if (i + 3 < n) keys.push_back(before_byte_key(c, t[i + 3]));
      if (three(i + 3)) keys.push_back(joined_key(c, uint32_t(index3(t + i + 3))));
    }
  }
  std::sort(keys.begin(), keys.end());  // (sized by distinct keys: o200k's tokens repeat them)
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  size_t bits = 4096;
  while (bits < 16 * keys.size()) bits *= 2;
  joined_bits_.assign(bits / 64, 0);
  joined_shift_ = 64;
  for (size_t b = bits; b > 1; b >>= 1) --joined_shift_;
  for (uint64_t k : keys) add_joined(k);
}

// A piece of up to 16 bytes that missed the hot tier: a single byte, among the hot tier's victims,
// a token, or in the big tier, or merged.
//
// The victims (session 9): the hot tier is direct-mapped, so two frequent pieces whose hashes
// share an entry evict each other, and each miss cost a token-table or big-tier lookup (L3). On
// a second pass over text, 8.5% of the pieces of Dutch manual pages missed it. A victim entry
// found here is as current as a hot one (same epoch and length tag), so it swaps back at once.
void BytePairModel::encode_short(const uint8_t* p, const ShortKey& k, uint64_t h, Cache* cache,
                                 std::vector<uint32_t>& out) const {
  HotEntry& hot = cache->hot[hot_index(h)];
  uint32_t id = byte_id_[p[0]];
  if (k.len > 1 && cache->tiers) {  // (the shared empty cache is never written)
    const HotEntry& v = cache->victims()[victim_index(h)];
    if (hot_matches(v, k, hot_tag(cache->hot_epoch, k.len))) {
      HotEntry found = v;
      evict(cache, hot);
      hot = found;
      return emit_ids(found, out);
    }
  }
  if (k.len == 1 || (whole_piece_lookup_ && short_tokens_.find(k, h, &id))) {
    out.push_back(id);
    if (cache->tiers) remember_hot(cache, hot, k, &id, 1);
    return;
  }
  size_t n = k.len, before = out.size();
  cached_merge(p, n, k, h, cache, out, false);
  if (cache->tiers) remember_hot(cache, hot, k, out.data() + before, out.size() - before);
}

// A piece of more than 16 bytes: rarely a token (in text, 0.5% of them; 1 in 200 on multilingual
// pages), so its tiers are looked up first and the long-token table, whose probe is a cache miss,
// only after they miss (a token never enters the tiers). Session 15, the two orders in turn on the
// same fresh multilingual slices: +2-3% fresh, +3-5% repeated.
void BytePairModel::encode_long(const uint8_t* p, size_t n, Cache* cache, std::vector<uint32_t>& out) const {
  uint64_t h = hash_bytes(p, n);
  cached_merge(p, n, short_key_unchecked(p, 16), h, cache, out, whole_piece_lookup_);  // (the key of its first 16 bytes)
}

// A piece that is not a token, or (may_be_long_token) a long piece that may be one (k: the key of
// its first 16 bytes at most; h: its hash): its ids from the big or the long tier, or the token,
// or merged and kept in a tier.
void BytePairModel::cached_merge(const uint8_t* p, size_t n, const ShortKey& k, uint64_t h, Cache* cache,
                                 std::vector<uint32_t>& out, bool may_be_long_token) const {
  uint32_t id;
  if (!cache->tiers || n > kLongKey) {
    if (may_be_long_token && long_tokens_.find_hashed(p, n, h, &id))
      out.push_back(id);
    else
      merge_in_stretches(p, n, cache, out);
    return;
  }
  Tiers& tiers = *cache->tiers;
  SharedBigTier* big = n <= kCacheKey ? SharedBigTier::get() : nullptr;
  // (else not in the big tier: not looked up; in a batch on several threads, always: BatchText)
  bool again = big && (cache->in_batch || big->merged_before(h));
  if (again && big->find(h, serial_, k, p, n, out)) return;
  const LongLine* line = tiers.long_pieces.find(h, [&](const LongLine& l) {
    return l.model == serial_ && l.len == n && std::memcmp(l.key, p, n) == 0;
  });
  if (line) return append_ids(*line, out);
  if (may_be_long_token && long_tokens_.find_hashed(p, n, h, &id)) {
    out.push_back(id);
    return;
  }
  size_t before = out.size();
  merge_in_stretches(p, n, cache, out);
  const uint32_t* ids = out.data() + before;
  size_t count = out.size() - before;
  if (n <= kCacheKey && count <= kCacheIds) {
    if (big && !again) {
      big->mark_merged(h, cache->unadded_marks);
    } else if (big) {
      CacheLine line;
      fill(line, serial_, k, p, n, ids, count);
      big->insert(h, line);
    }
  } else if (count <= kLongIds)
    fill(tiers.long_pieces.insert(h), serial_, p, n, ids, count);
}

void BytePairModel::merge(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  if (n <= kShortPiece)
    merge_short(p, n, out);
  else
    merge_long(p, n, out);
}

// The tutorials' loop: find the lowest-ranked adjacent pair, merge it, repeat. Each part caches the
// merge it would make with its right neighbour, so a merge only re-looks-up its two new neighbours.
void BytePairModel::merge_short(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  struct Part {
    uint32_t id, start;     // the part is p[start .. next part's start)
    PairMap::Merge merge;   // with the next part; rank kNoRank if none
  };
  uint8_t padded[kShortPiece + ShortKey::kMaxLen] = {};  // find_merge reads 16 bytes from a part
  std::memcpy(padded, p, n);
  p = padded;
  Part parts[kShortPiece + 1];
  size_t count = 0;
  for (size_t i = 0; i < n;) {
    uint32_t id;
    size_t k = first_part(p, i, n, &id);
    parts[count++] = {id, uint32_t(i), {kNoRank, 0}};
    i += k;
  }
  parts[count] = {0, uint32_t(n), {kNoRank, 0}};  // sentinel: the end of the piece
  n = count;  // (from here on, the number of parts)
  auto update = [&](size_t i) {  // the merge of parts[i] with parts[i + 1]
    if (!find_merge(p, parts[i].start, parts[i + 2].start, parts[i].id, parts[i + 1].id, &parts[i].merge))
      parts[i].merge.rank = kNoRank;
  };
  for (size_t i = 0; i + 1 < n; ++i) update(i);
  while (n > 1) {
    // The lowest rank, the leftmost on ties, as the minimum of (rank, index) packed in one word:
    // a branch-free minimum (conditional moves). A branch on `rank < best rank` was mispredicted
    // at every new minimum (session 15, on the same fresh slices in turn: the ASCII lines of the
    // multilingual pages +6-11%, English and code +1-3%).
    uint64_t lowest = uint64_t(parts[0].merge.rank) << 8;
    for (size_t i = 1; i + 1 < n; ++i) lowest = std::min(lowest, uint64_t(parts[i].merge.rank) << 8 | i);
    size_t best = lowest & 0xFF;  // (kShortPiece < 256 parts)
    if (parts[best].merge.rank == kNoRank) break;
    parts[best].id = parts[best].merge.merged;
    std::copy(parts + best + 2, parts + n + 1, parts + best + 1);
    --n;
    if (best + 1 < n) update(best);
    else parts[best].merge.rank = kNoRank;
    if (best > 0) update(best - 1);
  }
  for (size_t i = 0; i < n; ++i) out.push_back(parts[i].id);
}

namespace {
// A min-heap of 64-bit keys with four children per node over caller-given storage: half the
// levels of a binary heap, and a node's children are neighbours in memory, so a sift down reads
// one or two cache lines per level. (merge_long's heap outgrows the caches on long pieces: a
// megabyte of one letter makes two million keys.)
class QuadHeap {
 public:
  explicit QuadHeap(uint64_t* keys) : keys_(keys) {}
  bool empty() const { return size_ == 0; }
  // Orders the first n keys of the storage into a heap.
  void make(size_t n) {
    size_ = n;
    for (size_t i = n < 2 ? 0 : (n - 2) / 4 + 1; i-- > 0;) sift_down(i, keys_[i]);
  }
  void push(uint64_t key) {
    size_t i = size_++;
    while (i > 0 && keys_[(i - 1) / 4] > key) {
      keys_[i] = keys_[(i - 1) / 4];
      i = (i - 1) / 4;
    }
    keys_[i] = key;
  }
  uint64_t pop() {
    uint64_t top = keys_[0];
    uint64_t last = keys_[--size_];
    if (size_ > 0) sift_down(0, last);
    return top;
  }

 private:
  // Puts `key` at node i or below, moving smaller children up.
  void sift_down(size_t i, uint64_t key) {
    for (;;) {
      size_t first = 4 * i + 1;
      if (first >= size_) break;
      size_t best = first, end = std::min(first + 4, size_);
      for (size_t c = first + 1; c < end; ++c)
        if (keys_[c] < keys_[best]) best = c;
      if (keys_[best] >= key) break;
      keys_[i] = keys_[best];
      i = best;
    }
    keys_[i] = key;
  }
  uint64_t* keys_;
  size_t size_ = 0;
};
}  // namespace

namespace {
// merge_long's queue on long pieces (session 25): sorted runs of keys taken from the buckets of a
// radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path
// problem", 1990), with a side heap for keys that come late. On repeated text the keys (rank,
// position) come in increasing order: a merge makes pairs ranked after its own, as training made
// them, so on a piece of a million 'a' the queue holds all the "aa" pairs, then all the "aaaa"
// pairs, and so on. The buckets hold keys no smaller than `last_`, each in the bucket of the
// highest bit in which it differs from last_ (a higher bucket: larger keys). When the current run
// is used up, the lowest bucket in use becomes the next run, sorted (usually already in order:
// pairs are pushed from left to right), and last_ its largest key; a key pushed below last_ goes
// to the side heap, and pop() takes the smaller of the run's next key and the side heap's. On
// repeated text each key is appended once and read once, in order, instead of QuadHeap's walk
// from the root to a leaf of a heap of megabytes (a cache line per level, most of them out of the
// caches); on text of many ranks at once (a long run of random letters) the runs are short, and
// the queue is about as fast as QuadHeap.
class MergeQueue {
 public:
  bool empty() const { return next_ == run_.size() && late_.empty() && stored_ == 0; }
  void push(uint64_t key) {
    if (key < last_) return late_.push(key);
    buckets_[bucket_of(key)].push_back(key);
    ++stored_;
  }
  uint64_t pop() {  // (not empty)
    if (next_ == run_.size() && late_.empty()) take_run();
    if (next_ < run_.size() && (late_.empty() || run_[next_] <= late_.top())) return run_[next_++];
    uint64_t key = late_.top();
    late_.pop();
    return key;
  }

 private:
  size_t bucket_of(uint64_t key) const { return key == last_ ? 0 : size_t(64 - __builtin_clzll(key ^ last_)); }
  // The lowest bucket in use becomes the run. Every key in the buckets above is larger than all of
  // its keys, and stays in its bucket around the new last_ (it still differs from it first in the
  // same bit).
  void take_run() {
    size_t b = 0;
    while (buckets_[b].empty()) ++b;
    run_.clear();
    run_.swap(buckets_[b]);  // (the bucket keeps the old run's memory)
    next_ = 0;
    stored_ -= run_.size();
    if (!std::is_sorted(run_.begin(), run_.end())) std::sort(run_.begin(), run_.end());
    last_ = run_.back();
  }
  std::vector<uint64_t> buckets_[65];
  std::vector<uint64_t> run_;
  size_t next_ = 0;     // run_[next_] is the run's smallest key not yet popped
  uint64_t last_ = 0;   // the buckets' keys are >= last_
  size_t stored_ = 0;   // the keys in buckets_
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>> late_;
};

// Pieces of at least this many bytes take MergeQueue, shorter ones QuadHeap (its 2n keys in the
// caches: on 4,096 random letters MergeQueue took 1.3 times as long, on 16,384 as long).
std::atomic<size_t> radix_heap_min{16384};
}  // namespace

size_t BytePairModel::exchange_radix_heap_min(size_t bytes) { return radix_heap_min.exchange(bytes); }

// The same merges with a doubly linked list and a min-heap of (rank, position) packed into one
// 64-bit key, so the leftmost of equal ranks pops first, exactly as the scan above picks it. An
// entry is not updated when its pair changes; when popped it is checked instead: the left part must
// still exist and its pair's merge, as last looked up (every change of a pair looks it up again),
// must have the entry's rank. A changed pair always has another rank (its merge makes a different,
// longer token), so the check is exact. (Until session 10 the check looked the pair up again: a
// third of this loop's lookups, for every entry popped.)
// A node's index is the byte where its part starts; the part ends where the next node starts.
void BytePairModel::merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  constexpr uint32_t kNone = ~0u;
  struct Node {
    uint32_t id;
    uint32_t prev, next;   // kNone at the ends
    PairMap::Merge merge;  // of this part with the next, as last looked up; rank kNoRank if none
  };
  constexpr size_t kInline = 256;
  ScratchArray<uint8_t, kInline + ShortKey::kMaxLen> padded(n + ShortKey::kMaxLen);  // find_merge reads 16 bytes from a part
  std::memcpy(padded.data(), p, n);
  std::memset(padded.data() + n, 0, ShortKey::kMaxLen);
  p = padded.data();
  ScratchArray<Node, kInline> nodes(n);
  uint32_t last = kNone;
  for (size_t i = 0; i < n;) {  // (nodes inside a whole character stay unused)
    uint32_t id;
    size_t k = first_part(p, i, n, &id);
    nodes[i] = {id, last, kNone, {kNoRank, 0}};
    if (last != kNone) nodes[last].next = uint32_t(i);
    last = uint32_t(i);
    i += k;
  }
  auto end_of = [&](uint32_t node) { return nodes[node].next == kNone ? n : size_t(nodes[node].next); };
  auto look_up = [&](uint32_t left) {  // sets nodes[left].merge; whether its pair merges
    Node& node = nodes[left];
    if (node.next == kNone || !find_merge(p, left, end_of(node.next), node.id, nodes[node.next].id, &node.merge)) {
      node.merge.rank = kNoRank;
      return false;
    }
    return true;
  };
  auto key = [](uint32_t rank, uint32_t pos) { return (uint64_t(rank) << 32) | pos; };
  auto run = [&](auto& queue) {
    auto push = [&](uint32_t left) {
      if (look_up(left)) queue.push(key(nodes[left].merge.rank, left));
    };
    while (!queue.empty()) {
      uint64_t top = queue.pop();
      uint32_t rank = uint32_t(top >> 32), pos = uint32_t(top);
      Node& left = nodes[pos];
      if (left.id == kNone || left.merge.rank != rank) continue;  // gone or stale
      Node& right = nodes[left.next];
      left.id = left.merge.merged;
      right.id = kNone;
      left.next = right.next;
      if (right.next != kNone) nodes[right.next].prev = pos;
      if (left.prev != kNone) push(left.prev);
      push(pos);
    }
  };
  if (n >= radix_heap_min.load(std::memory_order_relaxed)) {
    MergeQueue queue;
    for (uint32_t i = 0; i != kNone; i = nodes[i].next)
      if (look_up(i)) queue.push(key(nodes[i].merge.rank, i));
    run(queue);
  } else {
    // The heap never holds more than 2n entries: at most n - 1 at the start, and each of the at
    // most n - 1 merges pops one and pushes at most two (stale entries stay until popped).
    ScratchArray<uint64_t, 2 * kInline> heap_entries(2 * n);
    QuadHeap heap(heap_entries.data());
    size_t initial = 0;
    for (uint32_t i = 0; i != kNone; i = nodes[i].next)
      if (look_up(i)) heap_entries[initial++] = key(nodes[i].merge.rank, i);
    heap.make(initial);
    run(heap);
  }
  for (uint32_t i = 0; i != kNone; i = nodes[i].next) out.push_back(nodes[i].id);
}

}  // namespace tokenforge
