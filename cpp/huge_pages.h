// Memory for the big tables that are read at random (the token tables, the per-thread piece
// cache): in 2 MiB pages where the kernel gives them on request (Linux's transparent huge pages in
// "madvise" mode, a common default), else in ordinary pages.
//
// A lookup in a table of several megabytes spread over 4 KiB pages is a TLB miss as often as a
// cache miss: 6 MB of cl100k tokens alone is 1,500 pages. Session 15, two threads taking turns on
// one core over the same fresh slices, both on fresh mmap memory, one with the huge-page hint:
// cl100k ASCII lines of the multilingual pages +8-16%, English +9-12%, code +8-9%, multilingual
// +10-14%; o200k +7-12% (first sightings probe the token table; a second pass gains 1%). The cost:
// a table is rounded up to whole 2 MiB pages (a page is zeroed as a whole when first touched), so
// these are only for tables of 1 MiB or more.
// Elsewhere (another system, or the kernel's huge pages turned off) it is ordinary memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tokenforge {

constexpr size_t kHugePage = size_t(1) << 21;
constexpr size_t kHugePageMinimum = size_t(1) << 20;  // smaller allocations are left to malloc

inline size_t round_to_huge_pages(size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

// `bytes` of memory (uninitialized), or null when there is none; release it with
// free_maybe_huge(p, bytes). From 1 MiB on it is fresh memory of its own from mmap, aligned to
// 2 MiB and marked for huge pages: memory malloc recycles has been touched in 4 KiB pages
// already, and the kernel gives huge pages only at the first touch (session 15: in a Python
// process the tables came from the reused heap and none of them got one).
inline void* alloc_maybe_huge(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHugePageMinimum) {
    if (bytes > ~size_t(0) / 2) return nullptr;
    size_t rounded = round_to_huge_pages(bytes), span = rounded + kHugePage;
    void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    char* first = static_cast<char*>(raw);
    char* start = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(first) + kHugePage - 1) & ~(kHugePage - 1));
    if (start > first) munmap(first, size_t(start - first));  // the unaligned head and the tail go back
    if (first + span > start + rounded) munmap(start + rounded, size_t(first + span - (start + rounded)));
    madvise(start, rounded, MADV_HUGEPAGE);  // a hint: where the kernel says no, the pages are ordinary
    return start;
  }
#endif
  return std::malloc(bytes == 0 ? 1 : bytes);
}

// The same, zeroed: every page touched now. A table whose 2 MiB pages were left to be touched
// as its entries land took each page's fault in the middle of encoding (0.3-7 ms each on the
// development VM, session 22), so the encoder's caches are made this way.
inline void* alloc_zeroed_maybe_huge(size_t bytes) {
  void* p = alloc_maybe_huge(bytes);
  if (p) std::memset(p, 0, bytes);
  return p;
}

inline void free_maybe_huge(void* p, size_t bytes) {
  if (p == nullptr) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHugePageMinimum) {
    munmap(p, round_to_huge_pages(bytes));
    return;
  }
#endif
  std::free(p);
}

// A std::vector allocator over alloc_maybe_huge.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n > ~size_t(0) / sizeof(T)) throw std::bad_alloc();
    void* p = alloc_maybe_huge(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { free_maybe_huge(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const {
    return false;
  }
};

}  // namespace tokenforge
