// The byte-pair model's piece caches under several threads at once (cpp/bpe.cc): each thread's own
// tiers, and the big tier and its "merged once" filter, which every thread of the process reads
// and writes without a lock. Threads encode the same pieces in different orders, over and over,
// so that one thread reads entries while another writes them; every result must equal a plain
// reference BPE (the tutorials' loop, here). Built and run by .ci/run under ThreadSanitizer, which
// reports any data race; also by CMake with the other core tests (ASan + UBSan there).
#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../bpe.h"
#include "check.h"

using tokenforge::BytePairModel;

// tiktoken's rule: merge the adjacent pair whose concatenation is the token of lowest id, leftmost
// on ties; a piece that is a token is that token.
static std::vector<uint32_t> reference_bpe(const std::map<std::string, uint32_t>& ranks, const std::string& piece) {
  auto whole = ranks.find(piece);
  if (whole != ranks.end()) return {whole->second};
  std::vector<std::string> parts;
  for (char c : piece) parts.emplace_back(1, c);
  for (;;) {
    size_t best = parts.size();
    uint32_t best_rank = ~0u;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      auto it = ranks.find(parts[i] + parts[i + 1]);
      if (it != ranks.end() && it->second < best_rank) best = i, best_rank = it->second;
    }
    if (best == parts.size()) break;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + long(best) + 1);
  }
  std::vector<uint32_t> ids;
  for (auto& p : parts) ids.push_back(ranks.at(p));
  return ids;
}

int main() {
  std::mt19937 rng(24);
  // Words of 3-9 letters over "abc"; every substring of a word is a token, ids in a random order.
  std::vector<std::string> words;
  for (int w = 0; w < 60; ++w) {
    std::string word;
    for (size_t i = 0, n = 3 + rng() % 7; i < n; ++i) word += char('a' + rng() % 3);
    words.push_back(word);
  }
  std::vector<std::string> substrings;
  for (auto& w : words)
    for (size_t b = 0; b < w.size(); ++b)
      for (size_t e = b + 2; e <= w.size(); ++e) substrings.push_back(w.substr(b, e - b));
  std::sort(substrings.begin(), substrings.end());
  substrings.erase(std::unique(substrings.begin(), substrings.end()), substrings.end());
  std::shuffle(substrings.begin(), substrings.end(), rng);
  std::map<std::string, uint32_t> ranks;
  std::vector<std::pair<uint32_t, std::string>> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(uint32_t(b), std::string(1, char(b)));
  for (auto& s : substrings) tokens.emplace_back(uint32_t(256 + ranks.size()), s), ranks[s] = tokens.back().first;
  for (int b = 0; b < 256; ++b) ranks[std::string(1, char(b))] = uint32_t(b);
  std::string error;
  auto model = BytePairModel::create(tokens, {}, true, &error);
  CHECK(model != nullptr);
  if (!model) return tokenforge_test::finish("bpe_threads_test");

  // Pieces of 1-6 words and a letter or two of "d" (no merges): 3 to about 60 bytes, so the hot
  // tier (up to 16 bytes), the shared big tier (up to 30) and the long tier all take part.
  std::vector<std::string> pieces;
  for (int k = 0; k < 400; ++k) {
    std::string piece;
    for (size_t i = 0, n = 1 + rng() % 6; i < n; ++i) piece += words[rng() % words.size()];
    if (rng() % 4 == 0) piece.insert(rng() % piece.size(), std::string(1 + rng() % 2, 'd'));
    pieces.push_back(piece);
  }
  std::vector<std::vector<uint32_t>> want;
  for (auto& p : pieces) want.push_back(reference_bpe(ranks, p));

  std::atomic<int> wrong{0};
  auto encode_all = [&](unsigned seed) {
    // Two of the four threads as a batch's threads (every merged piece into the big tier at once).
    tokenforge::BytePairModel::BatchText in_batch(seed % 2 == 0);
    std::mt19937 order_rng(seed);
    std::vector<size_t> order(pieces.size());
    for (int round = 0; round < 15; ++round) {
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), order_rng);
      for (size_t i : order) {
        std::vector<uint32_t> got;
        model->encode_piece(reinterpret_cast<const uint8_t*>(pieces[i].data()), pieces[i].size(), got);
        if (got != want[i]) ++wrong;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) threads.emplace_back(encode_all, 100 + t);
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
  return tokenforge_test::finish("bpe_threads_test");
}
