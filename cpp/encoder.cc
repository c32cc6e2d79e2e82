#include "encoder.h"

#include <algorithm>

namespace tokenforge {

Encoder::Encoder(std::unique_ptr<BytePairModel> model, std::shared_ptr<const SplitRegex> split,
                 std::vector<SpecialToken> specials, std::vector<std::pair<uint32_t, std::string>> decoder)
    : model_(std::move(model)), split_(std::move(split)), specials_(std::move(specials)), matcher_(specials_) {
  uint32_t max_id = 0;
  size_t total_bytes = 0;
  for (const auto& t : decoder) {
    max_id = std::max(max_id, t.first);
    total_bytes += t.second.size();
  }
  // The entries in order of id. Stable, so that of several entries for one id the first given wins
  // (o200k_harmony names 200018 both <|endofprompt|> and <|reserved_200018|>; tiktoken decodes the
  // first). Their indices are sorted, not the entries: moving the strings about was a tenth of
  // loading a tokenizer.json.
  std::vector<uint32_t> order(decoder.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
  auto id_of = [&](size_t k) { return decoder[order[k]].first; };
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return decoder[a].first < decoder[b].first; });
  size_t size = decoder.empty() ? 0 : std::min(size_t(max_id) + 1, dense_limit(decoder.size()));
  decode_offset_.assign(size + 1, 0);
  decode_present_.assign(size, 0);
  decode_arena_.reserve(total_bytes);
  size_t next = 0;
  for (uint32_t id = 0; id < size; ++id) {
    decode_offset_[id] = decode_arena_.size();
    if (next < order.size() && id_of(next) == id) {
      decode_arena_ += decoder[order[next]].second;
      decode_present_[id] = 1;
      while (next < order.size() && id_of(next) == id) ++next;
    }
  }
  decode_offset_[size] = decode_arena_.size();
  while (next < order.size()) {  // ids >= size, sorted
    uint32_t id = id_of(next);
    const std::string& bytes = decoder[order[next]].second;
    decode_sparse_.push_back({id, decode_arena_.size(), bytes.size()});
    decode_arena_ += bytes;
    while (next < order.size() && id_of(next) == id) ++next;
  }
}

size_t Encoder::dense_limit(size_t num_tokens) { return 2 * num_tokens + 1024; }

bool Encoder::named_split() const { return split_ && split_->scanner() != nullptr; }

namespace {
// encode_ordinary for the named patterns: the loop of for_each_piece_fast (pretokenize.h) with the
// work written into it. Each block's pieces are prepared (BytePairModel::prepare_piece: key, hash
// and a prefetch of the hot entry), and the block before it is finished only then, so that the
// hot entries' loads overlap each other and the next block's scan. The same work through
// for_each_piece's callback, with the block's pieces counted in the closure, was 8-12% slower
// (the count lived in memory, not in a register), and 10-20% slower in groups of 16.
template <block_scan::BlockStarts (*Starts)(const uint8_t*), size_t (*Fast)(const uint8_t*, size_t, size_t)>
void encode_pieces(const BytePairModel& model, PieceScanner scan, const uint8_t* s, size_t n,
                   std::vector<uint32_t>& out) {
  BytePairModel::Cache* cache = model.cache();
  const uint8_t* end = s + n;
  BytePairModel::PendingPiece blocks[2][64];
  size_t pending = 0;  // prepared pieces of the block before, in blocks[current ^ 1]
  unsigned current = 0;
  auto finish_pending = [&] {
    const BytePairModel::PendingPiece* before = blocks[current ^ 1];
    for (size_t k = 0; k < pending; ++k) model.finish_piece(before[k], cache, out);
    pending = 0;
  };
  size_t i = 0;
  BlockPace pace;
  while (i + 64 <= n) {
    uint64_t ends = i < pace.slow_until ? 0 : pieces_ending_in<Starts>(s, i, &pace);
    if (!ends) {
      finish_pending();
      size_t e = slow_piece_end<Fast>(scan, s, n, i);
      model.encode_piece(s + i, e - i, end, cache, out);
      i = e;
      continue;
    }
    BytePairModel::PendingPiece* block = blocks[current];
    size_t count = 0;
    for (size_t begin = i; ends; ends &= ends - 1) {
      size_t e = begin + size_t(__builtin_ctzll(ends));
      model.prepare_piece(s + i, e - i, end, cache, block[count++]);
      i = e;
    }
    finish_pending();
    pending = count;
    current ^= 1;
  }
  finish_pending();
  for (size_t e; i < n; i = e) {
    e = slow_piece_end<Fast>(scan, s, n, i);
    model.encode_piece(s + i, e - i, end, cache, out);
  }
}

// The pieces next(&b, &e) gives, prepared in groups of 16, then finished (measured 1-10% faster
// than one piece at a time; a group of 2 was no faster).
template <class Next>
void encode_grouped(const BytePairModel& model, const uint8_t* s, size_t n, Next&& next, std::vector<uint32_t>& out) {
  BytePairModel::Cache* cache = model.cache();
  const uint8_t* end = s + n;
  constexpr size_t kGroup = 16;
  BytePairModel::PendingPiece group[kGroup];
  size_t count = 0, b, e;
  while (next(&b, &e)) {
    model.prepare_piece(s + b, e - b, end, cache, group[count++]);
    if (count == kGroup) {
      for (size_t k = 0; k < kGroup; ++k) model.finish_piece(group[k], cache, out);
      count = 0;
    }
  }
  for (size_t k = 0; k < count; ++k) model.finish_piece(group[k], cache, out);
}
}  // namespace

void Encoder::encode_ordinary(const uint8_t* s, size_t n, std::vector<uint32_t>& out) const {
  PieceScanner scan = split_->scanner();
  if (with_named_pattern(scan, [&](auto starts, auto fast) {
        encode_pieces<decltype(starts)::value, decltype(fast)::value>(*model_, scan, s, n, out);
      }))
    return;
  // Any other pattern: the engine's matches (any compiled pattern has its program, scanner or
  // not), pulled one at a time by the grouped loop (a pull, not for_each_match's callback, so
  // that the group's count stays in a register).
  SplitRegex::Search search(*split_, s, n);
  encode_grouped(*model_, s, n, [&](size_t* b, size_t* e) { return search.next(b, e); }, out);
}

void Encoder::encode_spans(const uint8_t* s, size_t n, const std::vector<std::pair<size_t, size_t>>& spans,
                           std::vector<uint32_t>& out) const {
  size_t k = 0;
  encode_grouped(*model_, s, n, [&](size_t* b, size_t* e) {
    if (k == spans.size()) return false;
    *b = spans[k].first;
    *e = spans[k++].second;
    return true;
  }, out);
}

void Encoder::encode(const uint8_t* s, size_t n, const std::vector<char>& allowed,
                     std::vector<uint32_t>& out) const {
  size_t pos = 0;
  while (true) {
    SpecialMatcher::Match m = matcher_.find_next(s, n, pos, allowed);
    size_t end = m.index >= 0 ? m.pos : n;
    encode_ordinary(s + pos, end - pos, out);
    if (m.index < 0) break;
    out.push_back(specials_[m.index].id);
    pos = m.pos + m.len;
  }
}

void Encoder::split(const uint8_t* s, size_t n, std::vector<std::pair<size_t, size_t>>& spans) const {
  split_->for_each_match(s, n, [&](size_t b, size_t e) { spans.emplace_back(b, e); });
}

bool Encoder::token_bytes(uint32_t id, const char** p, size_t* len) const {
  if (id < dense_ids()) {
    if (!decode_present_[id]) return false;
    *p = decode_arena_.data() + decode_offset_[id];
    *len = decode_offset_[id + 1] - decode_offset_[id];
    return true;
  }
  auto it = std::lower_bound(decode_sparse_.begin(), decode_sparse_.end(), id,
                             [](const SparseEntry& e, uint32_t x) { return e.id < x; });
  if (it == decode_sparse_.end() || it->id != id) return false;
  *p = decode_arena_.data() + it->start;
  *len = it->len;
  return true;
}

bool Encoder::decode(const uint32_t* ids, size_t n, std::string& out, size_t* bad) const {
  for (size_t i = 0; i < n; ++i) {
    const char* p;
    size_t len;
    if (!token_bytes(ids[i], &p, &len)) {
      *bad = i;
      return false;
    }
    out.append(p, len);
  }
  return true;
}

}  // namespace tokenforge
