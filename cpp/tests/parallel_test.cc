// parallel_for and its pool of parked threads (cpp/parallel.h, cpp/worker_pool.h), without Python:
// several callers at once (one has the pool at a time, the others start threads of their own),
// every item run exactly once, an exception on any thread raised on the caller's, and the pool
// usable afterwards. Built by .ci/run under ThreadSanitizer too (it is header-only).
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../parallel.h"
#include "check.h"

using tokenforge::parallel_for;

static void run_batches(int seed, std::atomic<int>& failures) {
  for (int round = 0; round < 200; ++round) {
    size_t n = 1 + size_t(round * 7 + seed) % 60, threads = 1 + size_t(round + seed) % 6;
    std::vector<std::atomic<int>> runs(n);
    for (auto& r : runs) r = 0;
    parallel_for(n, threads, [&](size_t i) { runs[i].fetch_add(1 + int(i)); });
    for (size_t i = 0; i < n; ++i)
      if (runs[i].load() != 1 + int(i)) ++failures;  // each item exactly once
    if (round % 25 == 0) {
      bool raised = false;
      try {
        parallel_for(n, threads, [&](size_t i) {
          if (i == n / 2) throw std::runtime_error("item failed");
        });
      } catch (const std::runtime_error&) {
        raised = true;
      }
      if (!raised) ++failures;
    }
  }
}

int main() {
  std::atomic<int> failures{0};
  run_batches(0, failures);  // one caller: the pool
  std::vector<std::thread> callers;
  for (int seed = 1; seed <= 3; ++seed) callers.emplace_back(run_batches, seed, std::ref(failures));
  run_batches(4, failures);
  for (auto& c : callers) c.join();
  CHECK(failures.load() == 0);
  std::vector<long> squares(1000);
  parallel_for(squares.size(), 8, [&](size_t i) { squares[i] = long(i) * long(i); });
  for (size_t i = 0; i < squares.size(); ++i) CHECK(squares[i] == long(i) * long(i));
  return tokenforge_test::finish("parallel_test");
}
