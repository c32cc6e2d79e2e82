#include "wordpiece.h"

#include <cstring>

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
  m->nodes_.resize(2);  // the two roots: word start, continuation
  m->edges_.assign(1024, Edge{});
  m->unk_id_ = unk_id;
  m->max_chars_ = max_chars;
  for (const auto& [id, text] : tokens) {
    if (text.empty()) {
      *error = "token " + std::to_string(id) + " is empty";
      return nullptr;
    }
    const uint8_t* p = reinterpret_cast<const uint8_t*>(text.data());
    // Every token can start a word, the continuation ones too (HF looks the raw text up first).
    m->insert(m->root_, p, text.size(), id);
  }
  for (const auto& [id, text] : tokens) {
    if (!prefix.empty() && text.size() > prefix.size() && text.compare(0, prefix.size(), prefix) == 0) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(text.data()) + prefix.size();
      m->insert(m->cont_root_, p, text.size() - prefix.size(), id);
    } else if (prefix.empty()) {
      m->insert(m->cont_root_, reinterpret_cast<const uint8_t*>(text.data()), text.size(), id);
    }
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

void WordPieceModel::grow() {
  std::vector<Edge> old;
  old.swap(edges_);
  edges_.assign(old.size() * 2, Edge{});
  size_t mask = edges_.size() - 1;
  for (const Edge& e : old) {
    if (e.key == ~0ull) continue;
    size_t i = edge_hash(e.key) & mask;
    while (edges_[i].key != ~0ull) i = (i + 1) & mask;
    edges_[i] = e;
  }
}

uint32_t WordPieceModel::add_child(uint32_t node, uint8_t b) {
  uint32_t c = child(node, b);
  if (c) return c;
  if ((num_edges_ + 1) * 2 > edges_.size()) grow();
  c = uint32_t(nodes_.size());
  nodes_.push_back(Node{});
  uint64_t k = edge_key(node, b);
  size_t mask = edges_.size() - 1;
  size_t i = edge_hash(k) & mask;
  while (edges_[i].key != ~0ull) i = (i + 1) & mask;
  edges_[i] = Edge{k, c};
  ++num_edges_;
  return c;
}

void WordPieceModel::insert(uint32_t root, const uint8_t* p, size_t n, uint32_t id) {
  uint32_t node = root;
  for (size_t i = 0; i < n; ++i) node = add_child(node, p[i]);
  // Two tokens with the same text cannot happen (the Python side checks); keep the first.
  if (nodes_[node].token < 0) nodes_[node].token = id;
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
