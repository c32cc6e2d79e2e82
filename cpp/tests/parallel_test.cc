// parallel_for and its pool of parked threads (cpp/parallel.h, cpp/worker_pool.h), without Python:
// several callers at once (one has the pool at a time, the others start threads of their own),
// every item run exactly once, an exception on any thread raised on the caller's, and the pool
// usable afterwards; and the order long_items_first gives the batches. Built by .ci/run under
// ThreadSanitizer too (it is header-only).
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

// long_items_first: the long items first, the longest first (ties in index order), then the rest
// in index order; index order (an empty order) when no item is long, and on one thread.
static void check_long_items_first() {
  using tokenforge::long_items_first;
  auto order_of = [](const std::vector<size_t>& sizes, size_t threads) {
    return long_items_first(sizes.size(), threads, [&](size_t i) { return sizes[i]; });
  };
  std::vector<size_t> sizes(100, 10000);
  CHECK(order_of(sizes, 2).empty());  // all alike
  sizes.push_back(500000);            // a long one at the end
  std::vector<size_t> expected = {100};
  for (size_t i = 0; i < 100; ++i) expected.push_back(i);
  CHECK(order_of(sizes, 2) == expected);
  CHECK(order_of(sizes, 1).empty());
  sizes[7] = 300000;  // another, shorter: after it
  sizes[3] = 500000;  // as long as the last: before it (index order on ties)
  std::vector<size_t> order = order_of(sizes, 2);
  CHECK(order.size() == sizes.size());
  CHECK(order[0] == 3 && order[1] == 100 && order[2] == 7 && order[3] == 0 && order[4] == 1 && order[5] == 2 && order[6] == 4);
  // an item above an eighth of a thread's share but not above twice the mean stays in place
  CHECK(order_of({10, 10, 25}, 2).empty());
  CHECK(order_of({}, 2).empty());
}

int main() {
  check_long_items_first();
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
