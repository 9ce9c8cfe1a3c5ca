#include "pipeline/halide/jit_target.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace schedfarm {
namespace {

// Whether the CPU has the instructions Halide 14's Sapphire Rapids code may use beyond
// Cannon Lake's: AVX512-FP16 (cpuid leaf 7 EDX bit 23) and AVX-VNNI (leaf 7 subleaf 1
// EAX bit 4).
bool HasSapphireRapidsInstructions() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool fp16 = (edx >> 23) & 1;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  const bool avx_vnni = (eax >> 4) & 1;
  return fp16 && avx_vnni;
#else
  return false;
#endif
}

}  // namespace

Halide::Target HostJitTarget() {
  Halide::Target target = Halide::get_jit_target_from_environment();
  if (target.has_feature(Halide::Target::AVX512_SapphireRapids) &&
      !HasSapphireRapidsInstructions()) {
    target = target.without_feature(Halide::Target::AVX512_SapphireRapids)
                 .with_feature(Halide::Target::AVX512_Cannonlake);
  }
  return target;
}

}  // namespace schedfarm
