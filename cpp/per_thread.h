// One T per thread, hung on a pthread key instead of a C++ thread_local.
//
// This code is loaded with dlopen, so a thread's first use of one of its thread_locals makes glibc
// allocate the module's block of them with malloc, and register their destructors with malloc,
// and abort the process if either fails ("failed to register TLS destructor: out of memory"): an
// address-space limit while a batch starts many threads did that. pthread_getspecific never
// allocates; here the T is made with new, so running out of memory is std::bad_alloc, which the
// batch turns into an error for the caller, and the thread's T is deleted when the thread ends.
// (The byte-level BPE piece cache in bpe.cc hangs on a key the same way, with its own fallback.)
#pragma once
#include <pthread.h>

#include <new>

namespace tokenforge {

template <class T>
class PerThread {
 public:
  PerThread() { ok_ = pthread_key_create(&key_, [](void* p) { delete static_cast<T*>(p); }) == 0; }
  PerThread(const PerThread&) = delete;
  PerThread& operator=(const PerThread&) = delete;

  // The calling thread's T, made on its first call. Throws std::bad_alloc when it cannot be made.
  T& get() {
    if (!ok_) throw std::bad_alloc();
    if (void* p = pthread_getspecific(key_)) return *static_cast<T*>(p);
    T* t = new T();
    if (pthread_setspecific(key_, t) != 0) {
      delete t;
      throw std::bad_alloc();
    }
    return *t;
  }

 private:
  pthread_key_t key_;
  bool ok_;
};

}  // namespace tokenforge
