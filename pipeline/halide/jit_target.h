// The Halide target this host JIT-compiles and runs pipelines for.
#pragma once

#include <Halide.h>

namespace schedfarm {

// Halide's JIT target from the environment (HL_JIT_TARGET, else the host), corrected
// where Halide 14 misreads the CPU: it takes every CPU with AVX512-BF16 for a Sapphire
// Rapids, AMD's Zen 4 included, and code for that target dies of SIGILL on the
// instructions Zen 4 lacks (AVX512-FP16, AVX-VNNI). A CPU without both gets
// AVX512_Cannonlake instead of AVX512_SapphireRapids.
Halide::Target HostJitTarget();

}  // namespace schedfarm
