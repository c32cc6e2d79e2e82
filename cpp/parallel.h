// parallel_for: items on a few native threads, with every failure (a thread that cannot start, an
// exception on any thread, running out of memory) rethrown on the caller's thread instead of
// ending the process. The batch encoders (bindings/common.h), the piece counter and unigram
// training use it.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tokenforge {

// The default `between` of parallel_for: nothing.
struct NoStep {
  void operator()() const {}
};

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
  auto work = [&](bool caller) {
    // The C++ runtime's per-thread block (libstdc++, loaded with this module, allocates it on a
    // thread's first exception) is made now, while the memory that started the thread is there:
    // made on the first std::bad_alloc instead, it found none and glibc ended the process
    // ("cannot allocate memory for thread-local data", 2-4 runs in 120 of the test under an
    // address-space limit, session 11).
    volatile int touched = std::uncaught_exceptions();  // (volatile: the function is declared pure)
    (void)touched;
    try {
      for (size_t i; !failed && (i = next.fetch_add(1)) < n;) {
        f(i);
        if (caller) between();
      }
    } catch (...) {
      fail(std::current_exception());
    }
  };
  std::vector<std::thread> pool;
  size_t started = 0;
  try {
    pool.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t) {
      pool.emplace_back(work, false);
      ++started;
    }
  } catch (const std::exception& e) {
    fail(std::make_exception_ptr(std::runtime_error("could not start " + std::to_string(threads) +
                                                    " threads (started " + std::to_string(started + 1) +
                                                    "): " + e.what())));
  }
  if (!failed) work(true);
  for (auto& t : pool) t.join();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::runtime_error&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(e.what());
    }
  }
}

}  // namespace tokenforge
