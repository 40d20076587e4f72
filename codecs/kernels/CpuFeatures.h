// The instruction-set extensions the hand-written kernels use, read once from the CPU.
//
// Every kernel that needs one of these (the AVX-512 and AVX2 rounding kernels, the packers,
// the top-k compress scan, the F16C conversions) asks here and otherwise runs a narrower
// version or its portable loop; all give the same bytes. GRADWIRE_KERNELS=avx2 in the
// environment caps them at AVX2 (what a CPU without AVX-512 runs), GRADWIRE_KERNELS=portable
// switches them all off: to compare, or to rule them out. Tests check every level. (Loops
// built with GRADWIRE_VECTOR_KERNEL are dispatched by the compiler, not from here.)
#pragma once

namespace gradwire {

struct CpuFeatures {
  bool avx2 = false;
  bool f16c = false;         ///< with AVX
  bool fast_pext = false;    ///< BMI2, except AMD Zen 1/2 (microcoded pext / pdep)
  bool avx512 = false;       ///< AVX-512 F, BW and VL
  bool avx512vbmi = false;   ///< the above plus VBMI (vpermb)
};

/// The widest kernels allowed.
enum class KernelLevel { kPortable, kAvx2, kNative };

/// What this CPU offers, capped at the current kernel level.
const CpuFeatures& cpu_features();

/// Caps the kernels (initially from GRADWIRE_KERNELS, default kNative). For tests and
/// comparisons; not meant to be changed while codecs run on other threads.
void use_kernels(KernelLevel level);

}  // namespace gradwire
