#include "common/blas_threads.h"

#include <dlfcn.h>

namespace schedfarm {

void SetBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  // Looked up at run time: the BLAS behind libblas.so.3 is chosen by Debian's
  // alternatives, and only OpenBLAS has this function.
  static const auto set =
      reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr && threads >= 1) set(threads);
}

}  // namespace schedfarm
