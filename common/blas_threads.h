// The thread pool of the BLAS library the process calls (through Torch): OpenBLAS
// (Debian's libopenblas0-pthread) keeps threads of its own, one per cpu it sees, that
// spin between calls, and Torch's at::set_num_threads does not size them. Whoever sets
// Torch's threads sets these too, so that one thread means one cpu.
#pragma once

namespace schedfarm {

// Sizes OpenBLAS's pool to `threads` (>= 1) when the process has OpenBLAS loaded;
// nothing for another BLAS.
void SetBlasThreads(int threads);

}  // namespace schedfarm
