#include "bpe.h"

#include <algorithm>
#include <queue>

namespace tokenforge {

namespace {
constexpr uint32_t kNoRank = ~0u;
// Pieces up to this many bytes use the quadratic scan (fast for short pieces, as in tiktoken);
// longer ones the heap, which keeps pathological pieces (a megabyte of spaces) at O(n log n).
constexpr size_t kShortPiece = 128;
}  // namespace

std::unique_ptr<BytePairModel> BytePairModel::create(
    const std::vector<std::pair<uint32_t, std::string>>& tokens, const std::vector<MergeRule>& merges,
    bool whole_piece_lookup, std::string* error) {
  std::unique_ptr<BytePairModel> m(new BytePairModel());
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
  if (merges.empty()) {
    // tiktoken's rule: any split of a token into two tokens is a mergeable pair, ranked by the token.
    m->pairs_.reserve(total);
    for (size_t i = 0; i < tokens.size(); ++i) {
      const uint8_t* p = base + offsets[i];
      size_t n = tokens[i].second.size();
      for (size_t k = 1; k < n; ++k) {
        uint32_t left, right;
        if (m->by_bytes_.find(p, k, &left) && m->by_bytes_.find(p + k, n - k, &right))
          m->pairs_.insert(left, right, {tokens[i].first, tokens[i].first});
      }
    }
  } else {
    m->pairs_.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); ++r) {
      const MergeRule& rule = merges[r];
      // A repeated pair keeps its first (highest-priority) rank, as in Hugging Face tokenizers.
      m->pairs_.insert(rule.left, rule.right, {uint32_t(r), rule.merged});
    }
  }
  return m;
}

void BytePairModel::encode_piece(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_id_[p[0]]);
    return;
  }
  if (whole_piece_lookup_) {
    uint32_t id;
    if (by_bytes_.find(p, n, &id)) {
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
    uint32_t id, rank, merged;
  };
  Part parts[kShortPiece];
  for (size_t i = 0; i < n; ++i) parts[i] = {byte_id_[p[i]], kNoRank, 0};
  auto update = [&](size_t i) {  // the merge of parts[i] with parts[i + 1]
    const PairMap::Merge* m = pairs_.find(parts[i].id, parts[i + 1].id);
    parts[i].rank = m ? m->rank : kNoRank;
    parts[i].merged = m ? m->merged : 0;
  };
  for (size_t i = 0; i + 1 < n; ++i) update(i);
  parts[n - 1].rank = kNoRank;
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (parts[i].rank < parts[best].rank) best = i;
    if (parts[best].rank == kNoRank) break;
    parts[best].id = parts[best].merged;
    std::copy(parts + best + 2, parts + n, parts + best + 1);
    --n;
    if (best + 1 < n) update(best);
    else parts[best].rank = kNoRank;
    if (best > 0) update(best - 1);
  }
  for (size_t i = 0; i < n; ++i) out.push_back(parts[i].id);
}

// The same merges with a doubly linked list and a min-heap of (rank, position) packed into one
// 64-bit key, so the leftmost of equal ranks pops first, exactly as the scan above picks it. An
// entry is not updated when its pair changes; when popped it is checked instead: the left part must
// still exist and its pair with its current right neighbour must have the entry's rank. A changed
// pair always has another rank (its merge makes a different, longer token), so the check is exact.
void BytePairModel::merge_long(const uint8_t* p, size_t n, std::vector<uint32_t>& out) const {
  struct Node {
    uint32_t id;
    uint32_t prev, next;  // kNone at the ends
  };
  constexpr uint32_t kNone = ~0u;
  std::vector<Node> nodes(n);
  for (size_t i = 0; i < n; ++i)
    nodes[i] = {byte_id_[p[i]], i == 0 ? kNone : uint32_t(i - 1), i + 1 < n ? uint32_t(i + 1) : kNone};
  std::vector<uint64_t> heap;
  heap.reserve(n);
  auto key = [](uint32_t rank, uint32_t pos) { return (uint64_t(rank) << 32) | pos; };
  for (size_t i = 0; i + 1 < n; ++i)
    if (const PairMap::Merge* m = pairs_.find(nodes[i].id, nodes[i + 1].id)) heap.push_back(key(m->rank, uint32_t(i)));
  auto later = std::greater<uint64_t>();
  std::make_heap(heap.begin(), heap.end(), later);
  auto push = [&](uint32_t left) {
    uint32_t right = nodes[left].next;
    if (right == kNone) return;
    if (const PairMap::Merge* m = pairs_.find(nodes[left].id, nodes[right].id)) {
      heap.push_back(key(m->rank, left));
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    uint64_t top = heap.back();
    heap.pop_back();
    uint32_t rank = uint32_t(top >> 32), pos = uint32_t(top);
    Node& left = nodes[pos];
    if (left.id == kNone || left.next == kNone) continue;  // merged away, or now the last part
    Node& right = nodes[left.next];
    const PairMap::Merge* m = pairs_.find(left.id, right.id);
    if (!m || m->rank != rank) continue;  // stale
    left.id = m->merged;
    right.id = kNone;
    left.next = right.next;
    if (right.next != kNone) nodes[right.next].prev = pos;
    if (left.prev != kNone) push(left.prev);
    push(pos);
  }
  for (uint32_t i = 0; i != kNone; i = nodes[i].next) out.push_back(nodes[i].id);
}

}  // namespace tokenforge
