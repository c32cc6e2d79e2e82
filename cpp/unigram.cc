#include "unigram.h"

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <queue>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "parallel.h"
#include "per_thread.h"
#include "unicode.h"

namespace tokenforge {
namespace spm {

namespace {

const char kSpace[] = "\xe2\x96\x81";  // ▁
// BPE's word cache keeps words of up to this many bytes (a word is longer only where few places
// may be cut: no `▁` in it, or only after characters that precede a `▁` in some piece).
constexpr size_t kLongestCachedWord = 256;
constexpr float kUnkPenalty = 10.0f;   // sentencepiece: an unknown costs min score - 10

inline size_t utf8_len(uint8_t b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

// The byte value of two upper-case hex digits ("0A" -> 10), or -1.
inline int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }
inline int hex_byte(char hi, char lo) {
  int h = hex_digit(hi), l = hex_digit(lo);
  return h < 0 || l < 0 ? -1 : h * 16 + l;
}

// darts-clone unit accessors.
inline bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
inline uint32_t value_of(uint32_t u) { return u & 0x7FFFFFFFu; }
inline uint32_t label_of(uint32_t u) { return u & ((1u << 31) | 0xFFu); }
inline uint32_t offset_of(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

inline double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -INFINITY) return a;
  return a + std::log1p(std::exp(b - a));
}

}  // namespace

// ---- Normalizer ----------------------------------------------------------------------------------

bool Normalizer::init(const NormalizerSpec& spec, const std::vector<std::string>& user_defined,
                      std::string* error) {
  spec_ = spec;
  has_user_ = !user_defined.empty();
  if (has_user_) {
    std::vector<PieceTrie::Key> keys;
    for (const std::string& u : user_defined) keys.push_back({u, 0, 0.0f});
    user_.build(keys);
  }
  units_.clear();
  strings_.clear();
  for (bool& p : plain_) p = true;
  const std::string& blob = spec.charsmap;
  if (blob.empty()) return true;
  uint32_t size;
  if (blob.size() < 4) return *error = "precompiled charsmap is too short", false;
  std::memcpy(&size, blob.data(), 4);  // little-endian, as the file
  if (size % 4 || size == 0 || 4 + size_t(size) > blob.size())
    return *error = "precompiled charsmap: bad trie size", false;
  units_.resize(size / 4);
  std::memcpy(units_.data(), blob.data() + 4, size);
  strings_ = blob.substr(4 + size);
  strings_.push_back('\0');  // every replacement is NUL-terminated, even a truncated last one
  for (int b = 0; b < 128; ++b) {
    size_t node = offset_of(units_[0]) ^ size_t(b);
    plain_[b] = !(node < units_.size() && label_of(units_[node]) == uint32_t(b));
  }
  return true;
}

size_t Normalizer::step(const uint8_t* s, size_t n, const char** rep, size_t* rep_len) const {
  if (has_user_) {  // a user-defined symbol is copied as it is
    size_t len = user_.longest_prefix(s, n);
    if (len) {
      *rep = reinterpret_cast<const char*>(s);
      *rep_len = len;
      return len;
    }
  }
  if (s[0] < 0x80 && plain_[s[0]]) {  // no rule starts with this byte
    *rep = reinterpret_cast<const char*>(s);
    *rep_len = 1;
    return 1;
  }
  size_t best_len = 0;
  uint32_t best_value = 0;
  if (!units_.empty()) {
    size_t node = offset_of(units_[0]);
    for (size_t i = 0; i < n; ++i) {
      node ^= s[i];
      if (node >= units_.size()) break;
      uint32_t u = units_[node];
      if (label_of(u) != s[i]) break;
      node ^= offset_of(u);
      if (has_leaf(u)) {
        if (node >= units_.size()) break;
        best_len = i + 1;
        best_value = value_of(units_[node]);
      }
    }
  }
  if (best_len && best_value < strings_.size()) {
    *rep = strings_.data() + best_value;
    *rep_len = std::strlen(*rep);
    return best_len;
  }
  size_t len = std::min(utf8_len(s[0]), n);
  *rep = reinterpret_cast<const char*>(s);
  *rep_len = len;
  return len;
}

void Normalizer::normalize(const uint8_t* s, size_t n, std::string& out) const {
  out.clear();
  const bool remove_ws = spec_.remove_extra_whitespaces, escape = spec_.escape_whitespaces;
  const char* space = escape ? kSpace : " ";
  const size_t space_len = escape ? 3 : 1;
  const char* rep;
  size_t rep_len;
  if (remove_ws) {  // leading whitespace
    while (n) {
      size_t used = step(s, n, &rep, &rep_len);
      if (!(rep_len == 1 && rep[0] == ' ')) break;
      s += used;
      n -= used;
    }
  }
  if (!n) return;
  out.reserve(n + n / 2 + 4);
  if (spec_.add_dummy_prefix && !spec_.treat_whitespace_as_suffix) out.append(space, space_len);
  bool prev_space = remove_ws;
  while (n) {
    if (!has_user_ && s[0] < 0x80 && s[0] != ' ' && plain_[s[0]]) {  // the common case, copied as is
      out.push_back(char(s[0]));
      prev_space = false;
      ++s;
      --n;
      continue;
    }
    size_t used = step(s, n, &rep, &rep_len);
    if (prev_space)
      while (rep_len && *rep == ' ') ++rep, --rep_len;
    if (rep_len) {
      if (escape) {
        for (size_t k = 0; k < rep_len; ++k) {
          if (rep[k] == ' ')
            out.append(kSpace, 3);
          else
            out.push_back(rep[k]);
        }
      } else {
        out.append(rep, rep_len);
      }
      prev_space = rep[rep_len - 1] == ' ';
    }
    if (!remove_ws) prev_space = false;
    s += used;
    n -= used;
  }
  if (remove_ws)
    while (out.size() >= space_len && std::memcmp(out.data() + out.size() - space_len, space, space_len) == 0)
      out.resize(out.size() - space_len);
  if (spec_.add_dummy_prefix && spec_.treat_whitespace_as_suffix) out.append(space, space_len);
}

// ---- PieceTrie -----------------------------------------------------------------------------------

void PieceTrie::build(const std::vector<Key>& keys) {
  // Keys sorted by bytes (then by input order, so the first of duplicates wins); a node is a range
  // of keys sharing a prefix, placed depth first: for each, the first base (in a window of the
  // last 8192 units, as darts-clone keeps a window of free blocks) whose slots for all its labels
  // are free. Old holes that fit nothing are left behind, so building stays linear.
  // The keys are sorted as copies carrying their first 16 bytes as two big-endian integers: most
  // comparisons and byte reads below then stay in this array instead of chasing each key's bytes
  // (the sort and those reads were 3/4 of the time of loading a 32k-piece model).
  struct Sorted {
    uint64_t head[2];  // bytes 0..15, zero-padded; the order of heads agrees with the order of the keys
    uint32_t index;    // into keys: ties (duplicates) keep input order, so the first wins
    uint32_t size;
    int32_t id;  // the key's id and score, copied: reading them through index missed the cache
    float score;
  };
  std::vector<Sorted> sorted;
  sorted.reserve(keys.size());
  for (uint32_t i = 0; i < keys.size(); ++i) {
    const std::string_view b = keys[i].bytes;
    if (b.empty()) continue;
    Sorted e{{0, 0}, i, uint32_t(b.size()), keys[i].id, keys[i].score};
    for (size_t k = 0; k < 16; ++k) e.head[k / 8] = e.head[k / 8] << 8 | (k < b.size() ? uint8_t(b[k]) : 0);
    sorted.push_back(e);
  }
  std::sort(sorted.begin(), sorted.end(), [&](const Sorted& a, const Sorted& b) {
    if (a.head[0] != b.head[0]) return a.head[0] < b.head[0];
    if (a.head[1] != b.head[1]) return a.head[1] < b.head[1];
    if (a.size > 16 || b.size > 16) {
      const int c = keys[a.index].bytes.compare(keys[b.index].bytes);
      if (c != 0) return c < 0;
    } else if (a.size != b.size) {
      return a.size < b.size;  // equal heads: one is the other padded with NULs
    }
    return a.index < b.index;
  });
  auto at = [&](const Sorted& e, size_t depth) {
    return depth < 16 ? uint8_t(e.head[depth / 8] >> (56 - 8 * (depth % 8))) : uint8_t(keys[e.index].bytes[depth]);
  };
  // one unit per distinct prefix (the nodes), plus holes: sized once instead of doubled from 1024
  size_t nodes = 1;
  for (size_t k = 0; k < sorted.size(); ++k) {
    const size_t len = sorted[k].size;
    size_t common = 0;
    if (k > 0) {
      const size_t prev = sorted[k - 1].size;
      while (common < len && common < prev && at(sorted[k], common) == at(sorted[k - 1], common)) ++common;
    }
    nodes += len - common;
  }
  size_t initial = 1024;
  while (initial < nodes + nodes / 2 + 512) initial *= 2;
  std::vector<char> used(initial, 0);
  units_.assign(used.size(), Unit{});
  // next_free[i]: a link towards the first free slot >= i (union-find with path halving), so the
  // search below visits free slots only
  std::vector<uint32_t> next_free(used.size());
  for (size_t i = 0; i < next_free.size(); ++i) next_free[i] = uint32_t(i);
  auto find_free = [&](size_t i) {
    while (next_free[i] != i) i = next_free[i] = next_free[next_free[i]];
    return i;
  };
  auto take = [&](size_t slot) {
    used[slot] = 1;
    next_free[slot] = uint32_t(slot + 1);
  };
  take(0);
  units_[0].check = -2;  // the root is nobody's child
  size_t top = 1;
  std::vector<uint8_t> labels;
  std::vector<std::pair<size_t, size_t>> groups;
  struct Task {
    size_t begin, end, depth;
    int32_t unit;
  };
  std::vector<Task> stack = {{0, sorted.size(), 0, 0}};
  while (!stack.empty()) {
    Task t = stack.back();
    stack.pop_back();
    size_t b = t.begin;
    if (b < t.end && sorted[b].size == t.depth) {  // a key ends here
      units_[size_t(t.unit)].id = sorted[b].id;
      units_[size_t(t.unit)].score = sorted[b].score;
      while (b < t.end && sorted[b].size == t.depth) ++b;  // later duplicates
    }
    if (b == t.end) continue;
    labels.clear();
    groups.clear();
    for (size_t k = b; k < t.end;) {
      uint8_t c = at(sorted[k], t.depth);
      size_t e = k;
      while (e < t.end && at(sorted[e], t.depth) == c) ++e;
      labels.push_back(c);
      groups.push_back({k, e});
      k = e;
    }
    const size_t lo = labels.front();
    size_t p = std::max(top > 8192 ? top - 8192 : size_t(1), lo + 1);
    size_t base;
    for (;; ++p) {
      if (p + 257 >= used.size()) {
        size_t old = used.size();
        used.resize(old * 2, 0);
        units_.resize(old * 2);
        next_free.resize(old * 2);
        for (size_t i = old; i < next_free.size(); ++i) next_free[i] = uint32_t(i);
      }
      p = find_free(p);
      if (p + 257 >= used.size()) continue;  // grow first
      base = p - lo;
      bool fits = true;
      for (size_t k = 1; fits && k < labels.size(); ++k) fits = !used[base + labels[k]];
      if (fits) break;
    }
    units_[size_t(t.unit)].base = int32_t(base);
    for (size_t k = 0; k < labels.size(); ++k) {
      size_t slot = base + labels[k];
      take(slot);
      units_[slot].check = t.unit;
      top = std::max(top, slot + 1);
      stack.push_back({groups[k].first, groups[k].second, t.depth + 1, int32_t(slot)});
    }
  }
  // every base + 255 must be readable: a unit with check -1 answers "no child"
  size_t max_base = 0;
  for (size_t i = 0; i < top; ++i) max_base = std::max(max_base, size_t(units_[i].base));
  units_.resize(std::max(top, max_base + 256));
  for (size_t i = top; i < units_.size(); ++i) units_[i] = Unit{};
}

// ---- Model ---------------------------------------------------------------------------------------

std::unique_ptr<Model> Model::create(std::shared_ptr<const std::vector<Piece>> shared, Algorithm algorithm,
                                     bool byte_fallback, const NormalizerSpec& normalizer, std::string* error,
                                     std::shared_ptr<const PieceMap> unreserved) {
  const std::vector<Piece>& pieces = *shared;
  std::unique_ptr<Model> m(new Model());
  std::vector<std::string> user_defined;
  for (const Piece& p : pieces)
    if (p.type == kUserDefined && !p.bytes.empty()) user_defined.push_back(p.bytes);
  if (!m->normalizer_.init(normalizer, user_defined, error)) return nullptr;
  m->algorithm_ = algorithm;
  m->byte_fallback_ = byte_fallback;
  for (auto& b : m->byte_ids_) b = -1;
  // unigram: the trie's keys; BPE: the ids of the pieces to look up (the same pieces)
  std::vector<PieceTrie::Key> keys;
  std::vector<uint32_t> bpe_ids;
  const bool bpe = algorithm == Algorithm::kBpe, make_map = bpe && !unreserved;
  if (!bpe) keys.reserve(pieces.size());
  if (make_map) bpe_ids.reserve(pieces.size());
  m->min_score_ = FLT_MAX;
  m->max_score_ = FLT_MIN;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    switch (p.type) {
      case kNormal:
        m->min_score_ = std::min(m->min_score_, p.score);
        m->max_score_ = std::max(m->max_score_, p.score);
        [[fallthrough]];
      case kUnused:
        if (p.bytes.empty()) return *error = "piece " + std::to_string(i) + " is empty", nullptr;
        if (p.type == kUnused && algorithm == Algorithm::kBpe)
          return *error = "unused pieces in a BPE model are not supported", nullptr;
        // an unused piece stays in the trie as a plain path: sentencepiece skips it when found
        if (!bpe) keys.push_back({p.bytes, p.type == kUnused ? -1 : int32_t(i), p.score});
        if (make_map) bpe_ids.push_back(uint32_t(i));
        break;
      case kUnknown:
        if (m->unk_id_ < 0) m->unk_id_ = int32_t(i);
        break;
      case kByte: {
        // Exactly "<0xNN>" with two upper-case hex digits, as sentencepiece's ByteToPiece writes them
        // (sscanf's %X would accept a sign: "<0x-1>" parsed as 0xFFFFFFFF, an index far outside the table).
        int v = p.bytes.size() == 6 && p.bytes.compare(0, 3, "<0x") == 0 && p.bytes[5] == '>'
                    ? hex_byte(p.bytes[3], p.bytes[4])
                    : -1;
        if (v < 0) return *error = "byte piece " + std::to_string(i) + " is not <0xNN>", nullptr;
        m->byte_ids_[v] = int32_t(i);
        break;
      }
      case kControl:
        break;
      case kUserDefined: {
        // always preferred: the released package scores them (length in bytes - 1) x 0.1
        // (read from its machine code), above any normal piece's log probability
        if (p.bytes.empty()) return *error = "piece " + std::to_string(i) + " is empty", nullptr;
        if (!bpe) keys.push_back({p.bytes, int32_t(i), float(int(p.bytes.size()) - 1) * 0.1f});
        if (make_map) bpe_ids.push_back(uint32_t(i));
        m->has_user_ = true;
        break;
      }
      default:
        return *error = "piece " + std::to_string(i) + " has unknown type " + std::to_string(p.type), nullptr;
    }
  }
  if (m->unk_id_ < 0) return *error = "the model has no unknown piece", nullptr;
  if (!bpe) m->trie_.build(keys);
  if (m->has_user_) {
    std::vector<PieceTrie::Key> user_keys;
    for (const std::string& u : user_defined) user_keys.push_back({u, 0, 0.0f});
    m->user_.build(user_keys);
  }
  static std::atomic<uint64_t> serials{0};
  m->serial_ = ++serials;
  // BPE: a text may be cut before each `▁` whose preceding character c is in no piece right before
  // a `▁` (a symbol across that place would be a piece holding c▁; user-defined pieces are symbols
  // too, found leftmost-longest, and none crosses it either), so each side merges as if alone.
  m->words_independent_ = algorithm == Algorithm::kBpe && normalizer.escape_whitespaces;
  for (const Piece& p : pieces) {
    if (p.type != kNormal && p.type != kUserDefined) continue;
    for (size_t at = p.bytes.find(kSpace, 1); at != std::string::npos; at = p.bytes.find(kSpace, at + 1)) {
      size_t from = at - 1;
      while (from > 0 && (uint8_t(p.bytes[from]) & 0xC0) == 0x80) --from;  // the character's first byte
      std::string c = p.bytes.substr(from, at - from);
      if (std::find(m->before_space_.begin(), m->before_space_.end(), c) == m->before_space_.end())
        m->before_space_.push_back(std::move(c));
    }
  }
  if (byte_fallback)
    for (int b = 0; b < 256; ++b)
      if (m->byte_ids_[b] < 0) return *error = "byte fallback without a piece for every byte", nullptr;
  m->pieces_ = std::move(shared);
  if (make_map) {
    auto map = std::make_shared<PieceMap>();
    map->build(pieces, bpe_ids);
    unreserved = std::move(map);
  }
  if (bpe) {
    m->bpe_pieces_ = std::move(unreserved);  // no unused pieces (refused above): the same pieces
    m->bpe_scores_.resize(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {  // user-defined pieces score as in the trie above
      const Piece& p = pieces[i];
      m->bpe_scores_[i] = p.type == kUserDefined ? float(int(p.bytes.size()) - 1) * 0.1f : p.score;
    }
    for (int c = 0; c < 128; ++c) {
      const uint8_t b = uint8_t(c);
      m->ascii_ids_[c] = m->bpe_id(&b, 1);
    }
  }
  return m;
}

bool PieceMap::build(const std::vector<Piece>& pieces, const std::vector<uint32_t>& ids) {
  bool unique = true;
  size_t cap = 16;
  while (cap < 2 * ids.size()) cap <<= 1;  // at most half full
  slots_.assign(cap, Slot{});
  const size_t mask = cap - 1;
  keys_.assign(pieces.size(), Key{});
  std::vector<uint64_t> hashes(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    const std::string& b = pieces[ids[k]].bytes;
    const auto* bytes = reinterpret_cast<const uint8_t*>(b.data());
    keys_[ids[k]] = Key{head_of(bytes, b.size()), b.size()};
    hashes[k] = hash(keys_[ids[k]].head, bytes, b.size());
  }
  constexpr size_t kAhead = 16;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k + kAhead < ids.size()) __builtin_prefetch(&slots_[hashes[k + kAhead] & mask], 1);
    const uint32_t tag = tag_of(hashes[k]);
    const std::string& b = pieces[ids[k]].bytes;
    for (size_t i = hashes[k] & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.tag == 0) {
        slot = Slot{tag, ids[k]};
        break;
      }
      if (slot.tag == tag && pieces[slot.id].bytes == b) {  // a duplicate: the first stays
        unique = false;
        break;
      }
    }
  }
  return unique;
}


void Model::encode(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const {
  struct Buffers {
    std::string normalized;
    std::vector<Span> spans;
  };
  static PerThread<Buffers> per_thread;  // (per_thread.h: not thread_locals)
  auto& [normalized, spans] = per_thread.get();
  normalizer_.normalize(s, n, normalized);
  spans.clear();
  segment(reinterpret_cast<const uint8_t*>(normalized.data()), normalized.size(), spans);
  spans_to_ids(reinterpret_cast<const uint8_t*>(normalized.data()), spans, out);
}

void Model::segment(const uint8_t* s, size_t n, std::vector<Span>& out) const {
  if (algorithm_ == Algorithm::kUnigram)
    viterbi(s, n, out);
  else
    bpe(s, n, out);
}

void Model::spans_to_ids(const uint8_t* s, const std::vector<Span>& spans, std::vector<uint32_t>& out) const {
  const uint32_t unk = uint32_t(unk_id_);
  bool prev_unk = false;
  for (const Span& sp : spans) {
    if (sp.id != unk) {
      out.push_back(sp.id);
      prev_unk = false;
    } else if (byte_fallback_) {
      for (uint32_t k = sp.begin; k < sp.end; ++k) out.push_back(uint32_t(byte_ids_[s[k]]));
    } else if (!prev_unk) {  // a run of unknowns is one unknown
      out.push_back(unk);
      prev_unk = true;
    }
  }
}

// sentencepiece's unigram::Model::Encode: starts in order, pieces ending there in length order, a
// candidate wins only if strictly better; float32 scores summed in float32. And, as the released
// package (0.2.x) does (read from its machine code; its published source lacks it): when the best
// score at a start exceeds kRebase in magnitude, it is subtracted from that node and from every
// reached node up to the furthest end so far, so the float sums stay small. Without this, single
// inputs of tens of thousands of pieces get other ids (tests/test_spm.py checks 100k characters).
constexpr float kRebase = 100000.0f;

void Model::viterbi(const uint8_t* s, size_t n, std::vector<Span>& out) const {
  struct Node {
    float score;
    int32_t start;
    int32_t id;
  };
  static PerThread<std::vector<Node>> per_thread;
  std::vector<Node>& best = per_thread.get();
  best.assign(n + 1, Node{0.0f, -1, -1});
  const float unk_score = min_score_ - kUnkPenalty;
  size_t max_end = 0;
  for (size_t start = 0; start < n;) {
    float here = best[start].score;
    if (std::isfinite(here) && (here < -kRebase || here > kRebase)) {
      if (max_end >= start) {
        best[start].score -= here;
        for (size_t p = start + 1; p <= max_end; ++p)
          if (best[p].start != -1) best[p].score -= here;
      }
      here = 0.0f;
    }
    const size_t mblen = std::min(utf8_len(s[start]), n - start);
    bool single = for_each_piece_at(s, n, start, mblen, [&](size_t end, int32_t id, float score) {
      Node& target = best[end];
      float cand = here + score;
      if (target.start == -1 || cand > target.score) target = Node{cand, int32_t(start), id};
      max_end = std::max(max_end, end);
    });
    if (!single) {
      Node& target = best[start + mblen];
      float cand = here + unk_score;
      if (target.start == -1 || cand > target.score) target = Node{cand, int32_t(start), unk_id_};
      max_end = std::max(max_end, start + mblen);
    }
    start += mblen;
  }
  size_t first = out.size();
  for (size_t end = n; end > 0;) {
    const Node& node = best[end];
    out.push_back(Span{uint32_t(node.start), uint32_t(end), uint32_t(node.id)});
    end = size_t(node.start);
  }
  std::reverse(out.begin() + ptrdiff_t(first), out.end());
}

// sentencepiece's bpe::Model::Encode: characters, then repeatedly the adjacent pair whose
// concatenation is a piece with the highest score (leftmost on ties), via a heap with lazy checks.
void Model::bpe(const uint8_t* s, size_t n, std::vector<Span>& out) const {
  if (!words_independent_) return bpe_word(s, n, out);
  // Per `▁`-word, with a per-thread cache of each word's spans (relative to the word).
  struct Cache {
    uint64_t owner = 0;
    std::unordered_map<std::string, std::vector<Span>> words;
  };
  struct Buffers {
    Cache cache;
    std::vector<Span> tmp;
  };
  static PerThread<Buffers> per_thread;
  auto& [cache, tmp] = per_thread.get();
  if (cache.owner != serial_ || cache.words.size() > (1u << 16)) {
    cache.words.clear();
    cache.owner = serial_;
  }
  size_t start = 0;
  while (start < n) {
    size_t end = start + 1;
    while (end < n && !(end + 3 <= n && std::memcmp(s + end, kSpace, 3) == 0 &&
                        !char_before_is_one_of(s, start, end, before_space_)))
      ++end;
    if (end - start > kLongestCachedWord) {  // (a long word is merged, not kept: it rarely comes again)
      size_t first = out.size();
      bpe_word(s + start, end - start, out);
      for (size_t k = first; k < out.size(); ++k) {
        out[k].begin += uint32_t(start);
        out[k].end += uint32_t(start);
      }
      start = end;
      continue;
    }
    std::string key(reinterpret_cast<const char*>(s + start), end - start);
    auto it = cache.words.find(key);
    if (it == cache.words.end()) {
      tmp.clear();
      bpe_word(s + start, end - start, tmp);
      it = cache.words.emplace(std::move(key), tmp).first;
    }
    for (const Span& sp : it->second) out.push_back(Span{sp.begin + uint32_t(start), sp.end + uint32_t(start), sp.id});
    start = end;
  }
}

void Model::bpe_word(const uint8_t* s, size_t n, std::vector<Span>& out) const {
  struct Symbol {
    uint32_t begin, len;
    int32_t prev, next;
    int32_t id;   // the piece the symbol's bytes are (-1: none)
    bool freeze;  // a user-defined symbol: never merged
  };
  struct Pair {
    float score;
    int32_t left, right;
    uint32_t size;
    int32_t id;  // the piece of the concatenation
  };
  // the agenda's order: higher score first, then the leftmost
  auto worse = [](const Pair& a, const Pair& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  struct Buffers {
    std::vector<Symbol> symbols;
    std::vector<Pair> agenda;
  };
  static PerThread<Buffers> per_thread;
  auto& [symbols, agenda] = per_thread.get();
  symbols.clear();
  agenda.clear();
  for (size_t pos = 0; pos < n;) {
    size_t len = has_user_ ? user_.longest_prefix(s + pos, n - pos) : 0;
    const bool freeze = len > 0;
    if (!len) len = std::min(utf8_len(s[pos]), n - pos);
    int32_t index = int32_t(symbols.size());
    const int32_t id = len == 1 && s[pos] < 0x80 ? ascii_ids_[s[pos]] : bpe_id(s + pos, len);
    symbols.push_back(Symbol{uint32_t(pos), uint32_t(len), index - 1, pos + len < n ? index + 1 : -1, id, freeze});
    pos += len;
  }
  if (symbols.empty()) return;
  auto maybe_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol &l = symbols[size_t(left)], &r = symbols[size_t(right)];
    if (l.freeze || r.freeze) return;
    const int32_t id = bpe_id(s + l.begin, l.len + r.len);  // the two symbols are adjacent bytes
    if (id < 0) return;
    agenda.push_back(Pair{bpe_score(id), left, right, l.len + r.len, id});
    std::push_heap(agenda.begin(), agenda.end(), worse);
  };
  for (size_t i = 1; i < symbols.size(); ++i) maybe_add(int32_t(i - 1), int32_t(i));
  while (!agenda.empty()) {
    std::pop_heap(agenda.begin(), agenda.end(), worse);
    Pair top = agenda.back();
    agenda.pop_back();
    Symbol &l = symbols[size_t(top.left)], &r = symbols[size_t(top.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != top.size) continue;  // stale
    l.len += r.len;
    l.id = top.id;
    l.next = r.next;
    if (r.next >= 0) symbols[size_t(r.next)].prev = top.left;
    r.len = 0;
    maybe_add(l.prev, top.left);
    maybe_add(top.left, l.next);
  }
  for (int32_t i = 0; i != -1; i = symbols[size_t(i)].next) {
    const Symbol& sym = symbols[size_t(i)];
    out.push_back(Span{sym.begin, sym.begin + sym.len, uint32_t(sym.id < 0 ? unk_id_ : sym.id)});
  }
}

// Every piece occurrence (and an unknown arc where no one-character piece starts), by begin then end.
void Model::lattice(const uint8_t* s, size_t n, std::vector<Arc>& arcs) const {
  arcs.clear();
  const float unk_score = min_score_ - kUnkPenalty;
  for (size_t start = 0; start < n;) {
    const size_t mblen = std::min(utf8_len(s[start]), n - start);
    const size_t first = arcs.size();
    bool single = for_each_piece_at(s, n, start, mblen, [&](size_t end, int32_t id, float score) {
      arcs.push_back(Arc{uint32_t(start), uint32_t(end), id, score});
    });
    // the unknown arc is the shortest of its start: insert it first, keeping (begin, end) order
    if (!single)
      arcs.insert(arcs.begin() + ptrdiff_t(first), Arc{uint32_t(start), uint32_t(start + mblen), unk_id_, unk_score});
    start += mblen;
  }
}

void Model::sample(const uint8_t* s, size_t n, double alpha, std::mt19937_64& rng, std::vector<Span>& out) const {
  std::vector<Arc> arcs;
  lattice(s, n, arcs);
  std::vector<double> fwd(n + 1, -INFINITY);
  fwd[0] = 0;
  for (const Arc& a : arcs) fwd[a.end] = log_add(fwd[a.end], fwd[a.begin] + alpha * a.score);
  // arcs by end, for the backward walk
  std::vector<std::vector<const Arc*>> ending(n + 1);
  for (const Arc& a : arcs) ending[a.end].push_back(&a);
  size_t first = out.size();
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (size_t end = n; end > 0;) {
    const auto& in = ending[end];
    double r = uniform(rng), acc = 0;
    const Arc* chosen = in.back();
    for (const Arc* a : in) {
      acc += std::exp(fwd[a->begin] + alpha * a->score - fwd[end]);
      if (r < acc) {
        chosen = a;
        break;
      }
    }
    out.push_back(Span{chosen->begin, chosen->end, uint32_t(chosen->id)});
    end = chosen->begin;
  }
  std::reverse(out.begin() + ptrdiff_t(first), out.end());
}

double Model::expected_counts(const std::vector<std::string>& words, const std::vector<double>& freqs,
                              std::vector<double>& counts) const {
  // forward-backward over each word's lattice. The words are cut into a number of chunks that
  // depends only on their number, each with its own counts, summed in chunk order: the result is
  // the same whatever the number of threads that run the chunks.
  const size_t chunks = std::min<size_t>(8, std::max<size_t>(1, words.size() / 4096));
  const size_t threads = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), chunks));
  std::vector<std::vector<double>> partial(chunks, std::vector<double>(pieces_->size(), 0.0));
  std::vector<double> totals(chunks, 0.0);
  auto work = [&](size_t c) {
    std::vector<Arc> arcs;
    std::vector<double> fwd, bwd;
    std::vector<double>& cnt = partial[c];
    for (size_t w = c * words.size() / chunks; w < (c + 1) * words.size() / chunks; ++w) {
      const uint8_t* s = reinterpret_cast<const uint8_t*>(words[w].data());
      const size_t n = words[w].size();
      if (!n) continue;
      lattice(s, n, arcs);
      fwd.assign(n + 1, -INFINITY);
      bwd.assign(n + 1, -INFINITY);
      fwd[0] = 0;
      bwd[n] = 0;
      for (const Arc& a : arcs) fwd[a.end] = log_add(fwd[a.end], fwd[a.begin] + a.score);
      for (auto a = arcs.rbegin(); a != arcs.rend(); ++a) bwd[a->begin] = log_add(bwd[a->begin], a->score + bwd[a->end]);
      const double z = fwd[n];
      totals[c] += freqs[w] * z;
      for (const Arc& a : arcs)
        if (a.id != unk_id_) cnt[size_t(a.id)] += freqs[w] * std::exp(fwd[a.begin] + a.score + bwd[a.end] - z);
    }
  };
  parallel_for(chunks, threads, work);  // (errors on any thread reach the caller)
  counts.assign(pieces_->size(), 0.0);
  double total = 0;
  for (size_t t = 0; t < chunks; ++t) {
    total += totals[t];
    for (size_t i = 0; i < counts.size(); ++i) counts[i] += partial[t][i];
  }
  return total;
}

void Model::viterbi_counts(const std::vector<std::string>& words, const std::vector<double>& freqs,
                           std::vector<double>& counts, std::vector<double>& word_freq) const {
  counts.assign(pieces_->size(), 0.0);
  word_freq.assign(pieces_->size(), 0.0);
  std::vector<Span> spans;
  std::vector<uint32_t> seen;
  for (size_t w = 0; w < words.size(); ++w) {
    spans.clear();
    viterbi(reinterpret_cast<const uint8_t*>(words[w].data()), words[w].size(), spans);
    seen.clear();
    for (const Span& sp : spans) {
      counts[sp.id] += freqs[w];
      seen.push_back(sp.id);
    }
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (uint32_t id : seen) word_freq[id] += freqs[w];
  }
}

std::vector<std::vector<int32_t>> Model::alternatives() const {
  std::vector<std::vector<int32_t>> out(pieces_->size());
  std::vector<Arc> arcs;
  std::vector<double> best;
  std::vector<const Arc*> from;
  for (size_t i = 0; i < pieces_->size(); ++i) {
    const Piece& p = (*pieces_)[i];
    if (p.type != kNormal) continue;
    const uint8_t* s = reinterpret_cast<const uint8_t*>(p.bytes.data());
    const size_t n = p.bytes.size();
    lattice(s, n, arcs);
    best.assign(n + 1, -INFINITY);
    from.assign(n + 1, nullptr);
    best[0] = 0;
    for (const Arc& a : arcs) {
      if (a.id == unk_id_ || (a.begin == 0 && a.end == n) || best[a.begin] == -INFINITY) continue;
      double cand = best[a.begin] + a.score;
      if (cand > best[a.end]) best[a.end] = cand, from[a.end] = &a;
    }
    if (!from[n]) continue;
    for (size_t end = n; end > 0; end = from[end]->begin) out[i].push_back(from[end]->id);
    std::reverse(out[i].begin(), out[i].end());
  }
  return out;
}

std::vector<std::pair<std::string, double>> count_substrings(const std::vector<std::string>& words,
                                                             const std::vector<double>& freqs, size_t max_chars,
                                                             double min_count, size_t top_k) {
  // an open-addressing table of (hash, key view into the words, count): std::unordered_map
  // allocates a node per substring, which was most of the time
  struct Slot {
    uint64_t hash;
    const char* key;
    uint32_t len;
    double count;
  };
  std::vector<Slot> slots(1 << 16, Slot{0, nullptr, 0, 0.0});
  size_t used = 0;
  auto add = [&](const char* key, uint32_t len, uint64_t h, double v) {
    if ((used + 1) * 2 > slots.size()) {
      std::vector<Slot> old(slots.size() * 2, Slot{0, nullptr, 0, 0.0});
      old.swap(slots);
      const size_t mask = slots.size() - 1;
      for (const Slot& s : old) {
        if (!s.key) continue;
        size_t i = s.hash & mask;
        while (slots[i].key) i = (i + 1) & mask;
        slots[i] = s;
      }
    }
    const size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots[i];
      if (!s.key) {
        s = Slot{h, key, len, v};
        ++used;
        return;
      }
      if (s.hash == h && s.len == len && std::memcmp(s.key, key, len) == 0) {
        s.count += v;
        return;
      }
    }
  };
  std::vector<size_t> starts;
  for (size_t w = 0; w < words.size(); ++w) {
    const std::string& word = words[w];
    starts.clear();
    for (size_t k = 0; k < word.size(); k += utf8_len(uint8_t(word[k]))) starts.push_back(k);
    starts.push_back(word.size());
    const size_t chars = starts.size() - 1;
    for (size_t i = 0; i < chars; ++i) {
      // FNV-1a over the bytes, extended one character at a time, then mixed
      uint64_t h = 0xcbf29ce484222325ull;
      for (size_t k = starts[i]; k < starts[i + 1]; ++k) h = (h ^ uint8_t(word[k])) * 0x100000001b3ull;
      for (size_t j = i + 2; j <= std::min(chars, i + max_chars); ++j) {
        if (word.compare(starts[j - 1], 3, kSpace) == 0) break;  // a ▁ inside: longer ones too
        for (size_t k = starts[j - 1]; k < starts[j]; ++k) h = (h ^ uint8_t(word[k])) * 0x100000001b3ull;
        const uint64_t mixed = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
        add(word.data() + starts[i], uint32_t(starts[j] - starts[i]), mixed ^ (mixed >> 32), freqs[w]);
      }
    }
  }
  std::vector<std::pair<std::string_view, double>> counts;
  counts.reserve(used);
  for (const Slot& s : slots)
    if (s.key) counts.emplace_back(std::string_view(s.key, s.len), s.count);
  // rank by count x length in characters, then by bytes (= code point order)
  struct Ranked {
    double score;
    std::string_view bytes;
  };
  std::vector<Ranked> ranked;
  for (const auto& [k, v] : counts) {
    if (v < min_count) continue;
    size_t n_chars = 0;
    for (unsigned char ch : k) n_chars += (ch & 0xC0) != 0x80;
    ranked.push_back({v * double(n_chars), k});
  }
  auto better = [](const Ranked& a, const Ranked& b) { return a.score != b.score ? a.score > b.score : a.bytes < b.bytes; };
  if (ranked.size() > top_k) {
    std::nth_element(ranked.begin(), ranked.begin() + ptrdiff_t(top_k), ranked.end(), better);
    ranked.resize(top_k);
  }
  std::sort(ranked.begin(), ranked.end(), better);
  std::vector<std::pair<std::string, double>> out;
  out.reserve(ranked.size());
  for (const Ranked& r : ranked) out.emplace_back(std::string(r.bytes), r.score);
  return out;
}

}  // namespace spm
}  // namespace tokenforge
