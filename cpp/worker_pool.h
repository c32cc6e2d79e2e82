// WorkerPool: threads kept between parallel_for calls, parked until the next call needs them.
//
// Starting a thread for each batch and joining it at the end cost about 150 us a batch (session
// 21, a batch of 1.5M characters of English on two threads: the second thread took its first text
// 90-100 us after the call began, and the join took 45-70 us more), a twentieth of the time
// such a batch takes on two threads. Parked threads are woken with a condition variable instead.
//
// A thread asleep on a condition variable still takes 60-100 us to wake on the development VM
// (its virtual CPU has gone idle and must be woken by the host), and so does a caller asleep
// waiting for the last helper: up to 200 us a batch, a tenth of a two-thread batch of 1M
// characters. So a helper spins a while (kSpinMicroseconds) before it sleeps, watching for the
// next call, and the caller spins a while before it sleeps waiting for its helpers. At most one
// thread fewer than the process has CPUs spins (the others sleep at once), so the spinning never
// takes a core from the threads doing the work.
//
// One parallel_for uses the pool at a time: a call that finds it in use (another Python thread's
// batch) or needing more threads than it may keep starts threads of its own as before, so the
// pool never makes a call wait for another. After fork() the child has none of the parent's
// threads: it gets a pool of its own (the parent's is left, unused, and its memory with it).
#pragma once
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <thread>

namespace tokenforge {

class WorkerPool {
 public:
  // At most this many threads are kept (the library's default batch asks for 8 threads).
  static constexpr size_t kMaxThreads = 16;
  // How long a thread spins before it sleeps (see the top of the file).
  static constexpr int kSpinMicroseconds = 200;

  // This process's pool (made at the first call, and again in a child after fork()), or null
  // when there is no memory for it.
  static WorkerPool* get() {
    static std::atomic<WorkerPool*> current{nullptr};
    const pid_t pid = getpid();
    WorkerPool* pool = current.load(std::memory_order_acquire);
    while (!pool || pool->pid_ != pid) {
      // Never deleted once in use: its threads stay parked until the process ends.
      WorkerPool* fresh = new (std::nothrow) WorkerPool(pid);
      if (!fresh) return nullptr;
      if (current.compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) return fresh;
      delete fresh;  // another thread made one first (no thread of `fresh` was started)
    }
    return pool;
  }

  // Runs job(arg) on `helpers` pool threads while the caller runs caller_part(), and returns when
  // every helper that started the job has finished it: true. A helper woken only after the caller
  // has finished skips the job (there is nothing left to take then, and the caller does not wait
  // for a late wake-up). false, with nothing run, when the pool is in use by another call or
  // cannot have `helpers` threads (too many, or a thread could not be started).
  // job must not throw (parallel_for's work catches everything).
  template <class CallerPart>
  bool run(size_t helpers, void (*job)(void*), void* arg, CallerPart&& caller_part) {
    std::unique_lock<std::mutex> in_use(use_lock_, std::try_to_lock);
    if (!in_use || helpers > kMaxThreads || !grow(helpers)) return false;
    {
      std::lock_guard<std::mutex> guard(lock_);
      job_ = job;
      arg_ = arg;
      wanted_ = helpers;
      taken_ = 0;
      running_ = 0;
      open_ = true;
      generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    for (size_t h = 0; h < helpers; ++h) wake_.notify_one();  // (the other parked threads sleep on)
    struct WaitForHelpers {  // also if caller_part throws: no helper may outlive the call's data
      WorkerPool& pool;
      ~WaitForHelpers() {
        std::unique_lock<std::mutex> guard(pool.lock_);
        pool.open_ = false;  // helpers not woken yet skip this job; running_ only falls from now on
        if (pool.running_ == 0) return;
        guard.unlock();
        // (the last helper is usually a text away from done: spin, then sleep if it is not)
        if (spin_until([&] { return pool.running_.load(std::memory_order_acquire) == 0; })) return;
        guard.lock();
        pool.done_.wait(guard, [&] { return pool.running_ == 0; });
      }
    } wait_for_helpers{*this};
    caller_part();
    return true;
  }

 private:
  explicit WorkerPool(pid_t pid) : pid_(pid) {}

  bool grow(size_t helpers) {
    try {
      for (; started_ < helpers; ++started_) std::thread([this] { park(); }).detach();
    } catch (...) {  // a thread that cannot be started: the caller starts its own as before
      return false;
    }
    return true;
  }

  // Waits up to kSpinMicroseconds for ready() to be true, pausing between looks: true if it became
  // true. False at once when as many threads as may spin already do (see the top of the file).
  template <class Ready>
  static bool spin_until(Ready&& ready) {
    static const unsigned may_spin = usable_cpus() - 1;
    static std::atomic<unsigned> spinning{0};
    if (spinning.fetch_add(1, std::memory_order_relaxed) >= may_spin) {
      spinning.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
    bool became = false;
    for (unsigned k = 1; !(became = ready()); ++k) {
      pause();
      if (k % 64 == 0 && std::chrono::steady_clock::now() > until) break;
    }
    spinning.fetch_sub(1, std::memory_order_relaxed);
    return became;
  }
  // The CPUs the process may run on (its affinity mask: taskset, a container's cpuset), at least 1:
  // a process held to one CPU never spins.
  static unsigned usable_cpus() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return unsigned(std::max(1, CPU_COUNT(&set)));
#endif
    return std::max(1u, std::thread::hardware_concurrency());
  }
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  void park() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      std::unique_lock<std::mutex> guard(lock_);
      wake_.wait(guard, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      seen = generation_.load(std::memory_order_relaxed);
      if (!open_ || taken_ == wanted_) continue;
      ++taken_;
      ++running_;
      void (*job)(void*) = job_;
      void* arg = arg_;
      guard.unlock();
      job(arg);
      guard.lock();
      if (--running_ == 0 && !open_) done_.notify_one();
    }
  }

  const pid_t pid_;      // the process that made the pool (its threads are this process's only)
  size_t started_ = 0;   // threads started (changed by the call holding use_lock_)
  std::mutex use_lock_;  // held by the call using the pool
  std::mutex lock_;      // guards what follows
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};  // (written under lock_; read without it while spinning)
  void (*job_)(void*) = nullptr;
  void* arg_ = nullptr;
  size_t wanted_ = 0, taken_ = 0;
  std::atomic<size_t> running_{0};  // (written under lock_; read without it while spinning)
  bool open_ = false;
};

}  // namespace tokenforge
