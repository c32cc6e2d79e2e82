#include "hash_maps.h"

#include <chrono>
#include <random>

namespace tokenforge {

HashSecret make_hash_secret() {
  // std::random_device reads the OS's entropy; the clock and an address are mixed in for platforms
  // where it is deterministic. Odd multipliers keep the multiplies invertible.
  std::random_device rd;
  uint64_t extra = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                   uint64_t(reinterpret_cast<uintptr_t>(&rd));
  auto draw = [&] {
    uint64_t v = (uint64_t(rd()) << 32) ^ rd() ^ extra;
    extra = hash_mum(extra ^ 0x9E3779B97F4A7C15ull, 0xbf58476d1ce4e5b9ull);
    return v | 1;
  };
  HashSecret s;
  s.s0 = draw();
  s.s1 = draw();
  s.s2 = draw();
  s.s3 = draw();
  return s;
}

}  // namespace tokenforge
