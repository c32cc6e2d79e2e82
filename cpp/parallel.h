// parallel_for: items on a few native threads, with every failure (a thread that cannot start, an
// exception on any thread, running out of memory) rethrown on the caller's thread instead of
// ending the process. The batch encoders (bindings/common.h), the piece counter and unigram
// training use it. Its helper threads are parked between calls where they can be (worker_pool.h).
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>

#include "worker_pool.h"

namespace tokenforge {

// A megabyte of address space held unused (PROT_NONE: no memory is committed) until release():
// what parallel_for keeps free for a new thread's first allocations.
class AddressSpaceReserve {
 public:
  AddressSpaceReserve() : p_(mmap(nullptr, kSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)) {}
  ~AddressSpaceReserve() { release(); }
  AddressSpaceReserve(const AddressSpaceReserve&) = delete;
  AddressSpaceReserve& operator=(const AddressSpaceReserve&) = delete;
  bool held() const { return p_ != MAP_FAILED; }
  void release() {
    if (held()) munmap(p_, kSize);
    p_ = MAP_FAILED;
  }

 private:
  static constexpr size_t kSize = size_t(1) << 20;
  void* p_;
};

// Whether malloc can return null in this process: under an address-space or data-size limit, or
// with strict overcommit (vm.overcommit_memory = 2). Otherwise a thread's first small allocations
// do not fail: the kernel's out-of-memory killer acts instead.
inline bool allocations_can_fail() {
  static const bool strict_overcommit = [] {
    int mode = 0;
    if (FILE* f = std::fopen("/proc/sys/vm/overcommit_memory", "r")) {
      if (std::fscanf(f, "%d", &mode) != 1) mode = 0;
      std::fclose(f);
    }
    return mode == 2;
  }();
  rlimit limit;
  for (int resource : {RLIMIT_AS, RLIMIT_DATA})
    if (getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) return true;
  return strict_overcommit;
}

// The default `between` of parallel_for: nothing.
struct NoStep {
  void operator()() const {}
};

// The order for parallel_for's threads to take n items of sizes size_of(i) in: index order,
// except that items longer than an eighth of one thread's share of the whole and than twice the
// mean go first, the longest first. The threads take items one after the other as they
// finish them, so the last item taken decides how long the others wait at the end: a text of
// 500,000 characters after 100 of 10,000, encoded on two threads, made the batch 1.35x one
// thread's speed where it reached 1.79x as the batch's first text (session 30). Items that are not
// long keep their order (the batch encoders hand finished texts on in order while the others are
// encoded). Empty when index order stands: one thread, or no item that long.
template <class Size>
std::vector<size_t> long_items_first(size_t n, size_t threads, Size size_of) {
  std::vector<size_t> order;
  if (threads < 2 || n < 2) return order;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += size_of(i);
  const size_t limit = std::max(total / (8 * threads), 2 * (total / n));  // (and twice the mean)
  std::vector<char> is_long(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (size_of(i) > limit) {
      is_long[i] = 1;
      order.push_back(i);
    }
  if (order.empty()) return order;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return size_of(a) > size_of(b); });
  for (size_t i = 0; i < n; ++i)
    if (!is_long[i]) order.push_back(i);
  return order;
}

// Runs f(i) for i in [0, n) on up to `threads` threads (the caller's included). If a thread cannot
// be started (no memory, a process limit), the threads already running finish their current item
// and are joined, and std::runtime_error (RuntimeError in Python) says so; an exception thrown by
// f on any thread is rethrown here the same way, never letting a joinable std::thread be destroyed
// (which would abort the process).
// `between()` runs on the caller's thread after each item the caller took (the batch encoder
// turns finished results into lists there while the other threads go on encoding).
template <class F, class Between = NoStep>
void parallel_for(size_t n, size_t threads, F f, Between between = Between()) {
  threads = std::max<size_t>(1, std::min(threads, n));
  // The C++ runtime's per-thread block is made on the caller before the threads below take the
  // memory (see `work`): a thread that cannot be started throws std::system_error on this thread.
  volatile int touched = std::uncaught_exceptions();
  (void)touched;
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  std::mutex failure_lock;
  auto fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> guard(failure_lock);
    if (!failure) failure = e;
    failed = true;
    next = n;  // hand out no more items
  };
  auto rethrow_failure = [&] {
    if (!failure) return;
    try {
      std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::runtime_error&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(e.what());
    }
  };
  // Starting the threads, where allocations can fail (see the loop below): each new thread says
  // when it is ready, and none takes an item before the caller opens the gate.
  const bool careful = allocations_can_fail();
  std::mutex start_lock;
  std::condition_variable start_signal;
  size_t ready = 0;
  bool gate_open = !careful;
  auto work = [&](bool caller) {
    if (!caller) {
      // The C++ runtime's per-thread block (libstdc++, loaded with this module with dlopen, makes
      // it on a thread's first exception or first std::uncaught_exceptions()) is made now, while
      // the caller keeps memory free for it (see the loop below). glibc allocates it with malloc
      // and ends the process if that fails ("cannot allocate memory for thread-local data"):
      // made on the first std::bad_alloc instead, it found no memory (session 11), and made while
      // the threads started before this one were taking memory, 8 runs in 1,000 of the test
      // under an address-space limit still found none (session 13).
      volatile int touched = std::uncaught_exceptions();  // (volatile: the function is declared pure)
      (void)touched;
      if (careful) {
        std::unique_lock<std::mutex> lock(start_lock);
        ++ready;
        start_signal.notify_all();
        start_signal.wait(lock, [&] { return gate_open; });
      }
    }
    try {
      for (size_t i; !failed && (i = next.fetch_add(1)) < n;) {
        f(i);
        if (caller) between();
      }
    } catch (...) {
      fail(std::current_exception());
    }
  };
  // The pool's parked threads where they can be had (worker_pool.h); threads of this call's own
  // otherwise, and always where allocations can fail (their start is guarded below).
  if (!careful && threads > 1) {
    WorkerPool* workers = WorkerPool::get();
    auto helper = [](void* w) { (*static_cast<decltype(work)*>(w))(false); };
    if (workers && workers->run(threads - 1, helper, &work, [&] { work(true); })) {
      rethrow_failure();
      return;
    }
  }
  std::vector<std::thread> pool;
  size_t started = 0;
  auto cannot_start = [&](const char* why) noexcept {
    try {
      fail(std::make_exception_ptr(std::runtime_error("could not start " + std::to_string(threads) +
                                                      " threads (started " + std::to_string(started + 1) +
                                                      "): " + why)));
    } catch (...) {  // no memory for the message: the std::bad_alloc is the error
      fail(std::current_exception());
    }
  };
  // Where allocations can fail: one thread at a time, each with memory kept free for its runtime
  // block. An address-space reservation is taken before the thread is made (its stack cannot take
  // that room) and given back just before the new thread makes the block; the caller waits until
  // it has, and the threads already started wait at the gate, so nothing else takes the room
  // meanwhile. (This costs 10-30 us per thread, so it is not done where it is not needed.)
  try {
    pool.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t) {
      if (!careful) {
        pool.emplace_back(work, false);
        ++started;
        continue;
      }
      AddressSpaceReserve reserve;
      if (!reserve.held()) {
        cannot_start("no memory left for one more thread");
        break;
      }
      pool.emplace_back(work, false);
      ++started;
      reserve.release();
      std::unique_lock<std::mutex> lock(start_lock);
      start_signal.wait(lock, [&] { return ready == started; });
    }
  } catch (const std::exception& e) {
    cannot_start(e.what());
  }
  if (careful) {
    {
      std::lock_guard<std::mutex> lock(start_lock);
      gate_open = true;
    }
    start_signal.notify_all();
  }
  if (!failed) work(true);
  for (auto& t : pool) t.join();
  rethrow_failure();
}

}  // namespace tokenforge
