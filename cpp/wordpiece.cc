#include "wordpiece.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "hash_maps.h"

namespace tokenforge {

namespace {
inline uint64_t edge_key(uint32_t node, uint8_t b) { return (uint64_t(node) << 8) | b; }
inline size_t edge_hash(uint64_t k) { return size_t(hash_u64(k)); }
}  // namespace

std::unique_ptr<WordPieceModel> WordPieceModel::create(const std::vector<std::pair<uint32_t, std::string>>& tokens,
                                                       const std::string& prefix, uint32_t unk_id, size_t max_chars,
                                                       std::string* error) {
  std::unique_ptr<WordPieceModel> m(new WordPieceModel());
  m->unk_id_ = unk_id;
  m->max_chars_ = max_chars;
  // The keys of each root, sorted (stable: of two equal texts the first is kept, as before): every
  // token from the word-start root (HF looks the raw text up first), the continuation tokens
  // without their prefix from the other.
  struct Key {
    uint64_t first8;  // the first 8 bytes, big-endian, zero-padded: most comparisons end here
    std::string_view bytes;
    uint32_t id;
    uint32_t shared;  // once sorted: the length of the prefix shared with the key before
  };
  auto key_of = [](std::string_view b, uint32_t id) {
    uint64_t first8 = 0;
    for (size_t i = 0; i < 8; ++i) first8 = first8 << 8 | (i < b.size() ? uint8_t(b[i]) : 0);
    return Key{first8, b, id, 0};
  };
  std::vector<Key> starts, continuations;
  starts.reserve(tokens.size());
  for (const auto& [id, text] : tokens) {
    if (text.empty()) {
      *error = "token " + std::to_string(id) + " is empty";
      return nullptr;
    }
    starts.push_back(key_of(text, id));
    if (prefix.empty())
      continuations.push_back(key_of(text, id));
    else if (text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0)
      continuations.push_back(key_of(std::string_view(text).substr(prefix.size()), id));
  }
  auto by_bytes = [](const Key& a, const Key& b) {
    return a.first8 != b.first8 ? a.first8 < b.first8 : a.bytes < b.bytes;
  };
  std::stable_sort(starts.begin(), starts.end(), by_bytes);
  std::stable_sort(continuations.begin(), continuations.end(), by_bytes);
  // Sorted, a key shares its first lcp bytes with the previous one: those nodes exist, and every
  // node below them is new. So the edges are listed first, without a lookup (node ids are given
  // in order), then placed in a table sized once, each slot prefetched some edges ahead: looking
  // every byte of every token up in the table, a cache miss each, was most of loading a 30k-token
  // vocabulary.
  auto lcp = [](const Key& a, const Key& b) {  // the length of their common prefix
    const size_t n = std::min(a.bytes.size(), b.bytes.size());
    if (a.first8 != b.first8) return std::min(n, size_t(__builtin_clzll(a.first8 ^ b.first8) / 8));
    size_t i = std::min(n, size_t(8));
    while (i < n && a.bytes[i] == b.bytes[i]) ++i;
    return i;
  };
  size_t num_edges = 0;
  for (auto* keys : {&starts, &continuations})
    for (size_t k = 0; k < keys->size(); ++k) {
      Key& key = (*keys)[k];
      key.shared = k ? uint32_t(lcp((*keys)[k - 1], key)) : 0;
      num_edges += key.bytes.size() - key.shared;
    }
  m->nodes_.reserve(2 + num_edges);
  m->nodes_.resize(2);  // the two roots: word start, continuation
  std::vector<Edge> edges;
  edges.reserve(num_edges);
  std::vector<uint32_t> path;  // path[i]: the node after i + 1 bytes of the previous key
  for (const auto* keys : {&starts, &continuations}) {
    const uint32_t root = keys == &starts ? m->root_ : m->cont_root_;
    path.clear();
    for (const Key& key : *keys) {
      const size_t shared = key.shared;
      path.resize(shared);
      uint32_t node = shared ? path.back() : root;
      for (size_t i = shared; i < key.bytes.size(); ++i) {
        const uint32_t child = uint32_t(m->nodes_.size());
        m->nodes_.push_back(Node{});
        edges.push_back(Edge{edge_key(node, uint8_t(key.bytes[i])), child});
        node = child;
        path.push_back(node);
      }
      if (m->nodes_[node].token < 0) m->nodes_[node].token = key.id;
    }
  }
  m->edges_.assign(std::max<size_t>(1024, table_size_for(edges.size())), Edge{});
  const size_t mask = m->edges_.size() - 1;
  constexpr size_t kAhead = 16;
  for (size_t e = 0; e < edges.size(); ++e) {
    if (e + kAhead < edges.size()) __builtin_prefetch(&m->edges_[edge_hash(edges[e + kAhead].key) & mask], 1);
    size_t i = edge_hash(edges[e].key) & mask;
    while (m->edges_[i].key != ~0ull) i = (i + 1) & mask;
    m->edges_[i] = edges[e];
  }
  return m;
}

uint32_t WordPieceModel::child(uint32_t node, uint8_t b) const {
  uint64_t k = edge_key(node, b);
  size_t mask = edges_.size() - 1;
  for (size_t i = edge_hash(k) & mask;; i = (i + 1) & mask) {
    const Edge& e = edges_[i];
    if (e.key == k) return e.child;
    if (e.key == ~0ull) return 0;
  }
}

void WordPieceModel::encode_word(const uint8_t* w, size_t n, std::vector<uint32_t>& out) const {
  if (n == 0) return;
  size_t chars = 0;
  for (size_t i = 0; i < n; ++i) chars += (w[i] & 0xC0) != 0x80;
  if (chars > max_chars_) {
    out.push_back(unk_id_);
    return;
  }
  size_t mark = out.size();
  size_t start = 0;
  while (start < n) {
    uint32_t node = start == 0 ? root_ : cont_root_;
    size_t best_end = 0;
    int64_t best = -1;
    for (size_t i = start; i < n; ++i) {
      node = child(node, w[i]);
      if (!node) break;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        best_end = i + 1;
      }
    }
    if (best < 0) {
      out.resize(mark);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(uint32_t(best));
    start = best_end;
  }
}

}  // namespace tokenforge
