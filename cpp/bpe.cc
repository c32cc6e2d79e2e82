#include "bpe.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace tokenforge {

namespace {
constexpr uint32_t kNoRank = ~0u;
// Pieces up to this many bytes use the quadratic scan (fast for short pieces, as in tiktoken);
// longer ones the heap, which keeps pathological pieces (a megabyte of spaces) at O(n log n).
constexpr size_t kShortPiece = 40;

// The per-thread cache of piece -> ids: direct-mapped, one 128-byte entry (two cache lines) per
// piece of up to 54 bytes and 16 ids, 32768 entries (4 MiB per thread: the working set of a
// language's frequent words; a 22-byte key missed most Cyrillic, Greek and CJK words). Entries
// carry the serial number of the model that made them (never reused, unlike an address).
constexpr size_t kCacheKey = 54, kCacheIds = 16, kCacheLines = 32768;
struct alignas(64) CacheLine {
  uint64_t model = 0;
  uint8_t len = 0, count = 0;
  uint8_t key[kCacheKey];
  uint32_t ids[kCacheIds];
};
static_assert(sizeof(CacheLine) == 128, "two cache lines per entry");
std::atomic<uint64_t> next_serial{1};

// Batches start their own threads, so without care every batch thread would allocate and clear
// 4 MiB and then miss on every piece. Instead a thread hands its cache to this pool when it ends
// and the next thread takes it, warm. The pool keeps at most kPooledCaches (the rest are freed);
// it is never destroyed, as threads may end after static destructors have run.
constexpr size_t kPooledCaches = 8;
struct CachePool {
  std::mutex lock;
  std::vector<std::unique_ptr<CacheLine[]>> caches;
};
CachePool& cache_pool() {
  static CachePool* pool = new CachePool();
  return *pool;
}

struct ThreadCache {
  std::unique_ptr<CacheLine[]> lines;
  ThreadCache() {
    CachePool& pool = cache_pool();
    {
      std::lock_guard<std::mutex> guard(pool.lock);
      if (!pool.caches.empty()) {
        lines = std::move(pool.caches.back());
        pool.caches.pop_back();
      }
    }
    if (!lines) lines.reset(new CacheLine[kCacheLines]);
  }
  ~ThreadCache() {
    CachePool& pool = cache_pool();
    std::lock_guard<std::mutex> guard(pool.lock);
    if (pool.caches.size() < kPooledCaches) pool.caches.push_back(std::move(lines));
  }
};

CacheLine* thread_cache() {
  thread_local ThreadCache cache;
  return cache.lines.get();
}
}  // namespace

std::unique_ptr<BytePairModel> BytePairModel::create(
    const std::vector<std::pair<uint32_t, std::string>>& tokens, const std::vector<MergeRule>& merges,
    bool whole_piece_lookup, std::string* error) {
  std::unique_ptr<BytePairModel> m(new BytePairModel());
  m->serial_ = next_serial.fetch_add(1);
  m->whole_piece_lookup_ = whole_piece_lookup;
  size_t total = 0;
  for (const auto& t : tokens) total += t.second.size();
  m->arena_.reserve(total);
  std::vector<size_t> offsets;
  offsets.reserve(tokens.size());
  for (const auto& t : tokens) {
    if (t.second.empty()) {
      *error = "token " + std::to_string(t.first) + " has no bytes";
      return nullptr;
    }
    if (t.first == kNoRank) {  // the merge loops' "no merge" / "gone" marker
      *error = "token id " + std::to_string(t.first) + " is reserved (ids must be below 2^32 - 1)";
      return nullptr;
    }
    offsets.push_back(m->arena_.size());
    m->arena_ += t.second;
  }
  const uint8_t* base = reinterpret_cast<const uint8_t*>(m->arena_.data());
  m->by_bytes_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!m->by_bytes_.insert(base + offsets[i], uint32_t(tokens[i].second.size()), tokens[i].first)) {
      *error = "two tokens have the same bytes (ids " + std::to_string(tokens[i].first) + ")";
      return nullptr;
    }
  }
  for (int b = 0; b < 256; ++b) {
    uint8_t byte = uint8_t(b);
    if (!m->by_bytes_.find(&byte, 1, &m->byte_id_[b])) {
      *error = "byte " + std::to_string(b) + " is not a token; every single byte must be one";
      return nullptr;
    }
  }
  m->rank_rule_ = merges.empty();
  for (size_t r = 0; r < merges.size(); ++r) {
    const MergeRule& rule = merges[r];
    // A repeated pair keeps its first (highest-priority) rank, as in Hugging Face tokenizers.
    m->pairs_.insert(rule.left, rule.right, {uint32_t(r), rule.merged});
  }
  return m;
}

void BytePairModel::encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_id_[p[0]]);
    return;
  }
  uint64_t h = hash_bytes(p, n);
  if (n > kCacheKey) return encode_uncached(p, n, h, out);
  CacheLine& line = thread_cache()[h & (kCacheLines - 1)];
  if (line.model == serial_ && line.len == n && std::memcmp(line.key, p, n) == 0) {
    out.insert(out.end(), line.ids, line.ids + line.count);
    return;
  }
  size_t before = out.size();
  encode_uncached(p, n, h, out);
  size_t count = out.size() - before;
  if (count <= kCacheIds) {
    line.model = serial_;
    line.len = uint8_t(n);
    line.count = uint8_t(count);
    std::memcpy(line.key, p, n);
    std::copy(out.begin() + before, out.end(), line.ids);
  }
}

void BytePairModel::encode_uncached(const uint8_t* p, size_t n, uint64_t hash, std::vector<uint32_t>& out) const {
  if (whole_piece_lookup_) {
    uint32_t id;
    if (by_bytes_.find_hashed(p, n, hash, &id)) {
      out.push_back(id);
      return;
    }
  }
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
  Part parts[kShortPiece + 1];
  for (size_t i = 0; i < n; ++i) parts[i] = {byte_id_[p[i]], uint32_t(i), {kNoRank, 0}};
  parts[n] = {0, uint32_t(n), {kNoRank, 0}};  // sentinel: the end of the piece
  auto update = [&](size_t i) {  // the merge of parts[i] with parts[i + 1]
    if (!find_merge(p, parts[i].start, parts[i + 2].start, parts[i].id, parts[i + 1].id, &parts[i].merge))
      parts[i].merge.rank = kNoRank;
  };
  for (size_t i = 0; i + 1 < n; ++i) update(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (parts[i].merge.rank < parts[best].merge.rank) best = i;
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

// The same merges with a doubly linked list and a min-heap of (rank, position) packed into one
// 64-bit key, so the leftmost of equal ranks pops first, exactly as the scan above picks it. An
// entry is not updated when its pair changes; when popped it is checked instead: the left part must
// still exist and its pair with its current right neighbour must have the entry's rank. A changed
// pair always has another rank (its merge makes a different, longer token), so the check is exact.
// A node's index is the byte where its part starts; the part ends where the next node starts.
void BytePairModel::merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  constexpr uint32_t kNone = ~0u;
  struct Node {
    uint32_t id;
    uint32_t prev, next;  // kNone at the ends
  };
  std::vector<Node> nodes(n);
  for (size_t i = 0; i < n; ++i)
    nodes[i] = {byte_id_[p[i]], i == 0 ? kNone : uint32_t(i - 1), i + 1 < n ? uint32_t(i + 1) : kNone};
  auto end_of = [&](uint32_t node) { return nodes[node].next == kNone ? n : size_t(nodes[node].next); };
  auto merge_of = [&](uint32_t left, PairMap::Merge* m) {
    uint32_t right = nodes[left].next;
    return right != kNone && find_merge(p, left, end_of(right), nodes[left].id, nodes[right].id, m);
  };
  auto key = [](uint32_t rank, uint32_t pos) { return (uint64_t(rank) << 32) | pos; };
  std::vector<uint64_t> heap;
  heap.reserve(n);
  PairMap::Merge m;
  for (size_t i = 0; i + 1 < n; ++i)
    if (merge_of(uint32_t(i), &m)) heap.push_back(key(m.rank, uint32_t(i)));
  auto later = std::greater<uint64_t>();
  std::make_heap(heap.begin(), heap.end(), later);
  auto push = [&](uint32_t left) {
    if (merge_of(left, &m)) {
      heap.push_back(key(m.rank, left));
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    uint64_t top = heap.back();
    heap.pop_back();
    uint32_t rank = uint32_t(top >> 32), pos = uint32_t(top);
    Node& left = nodes[pos];
    if (left.id == kNone || !merge_of(pos, &m) || m.rank != rank) continue;  // gone or stale
    Node& right = nodes[left.next];
    left.id = m.merged;
    right.id = kNone;
    left.next = right.next;
    if (right.next != kNone) nodes[right.next].prev = pos;
    if (left.prev != kNone) push(left.prev);
    push(pos);
  }
  for (uint32_t i = 0; i != kNone; i = nodes[i].next) out.push_back(nodes[i].id);
}

}  // namespace tokenforge
