// A mutex that clang's thread-safety analysis understands, and the annotations that
// say what it guards. A member that only a thread holding `mu_` may touch is declared
// SCHEDFARM_GUARDED_BY(mu_); a function that must be called with it held,
// SCHEDFARM_REQUIRES(mu_). Clang checks them with -Wthread-safety (the test
// thread_safety_check compiles every file that uses this header that way); GCC
// ignores them. std::mutex itself carries no annotations in libstdc++, hence the wrapper.
#pragma once

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define SCHEDFARM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SCHEDFARM_THREAD_ANNOTATION(x)
#endif

#define SCHEDFARM_CAPABILITY(name) SCHEDFARM_THREAD_ANNOTATION(capability(name))
#define SCHEDFARM_SCOPED_CAPABILITY SCHEDFARM_THREAD_ANNOTATION(scoped_lockable)
#define SCHEDFARM_GUARDED_BY(mu) SCHEDFARM_THREAD_ANNOTATION(guarded_by(mu))
#define SCHEDFARM_REQUIRES(...) SCHEDFARM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SCHEDFARM_EXCLUDES(...) SCHEDFARM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define SCHEDFARM_ACQUIRE(...) SCHEDFARM_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SCHEDFARM_RELEASE(...) SCHEDFARM_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace schedfarm {

class SCHEDFARM_CAPABILITY("mutex") Mutex {
 public:
  void Lock() SCHEDFARM_ACQUIRE() { mu_.lock(); }
  void Unlock() SCHEDFARM_RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; Unlock and Lock let go of it and take it again within
// the scope, and Wait waits on a condition variable with it released meanwhile.
class SCHEDFARM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) SCHEDFARM_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() SCHEDFARM_RELEASE() {}

  void Unlock() SCHEDFARM_RELEASE() { lock_.unlock(); }
  void Lock() SCHEDFARM_ACQUIRE() { lock_.lock(); }

  // One wait: returns when notified or spuriously; the caller checks its condition in
  // a loop (a predicate in a lambda would escape the analysis).
  void Wait(std::condition_variable& cv) { cv.wait(lock_); }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace schedfarm
