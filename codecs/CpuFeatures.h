// The instruction-set extensions the hand-written kernels use, read once from the CPU.
//
// Every kernel that needs one of these (the AVX-512 rounding kernels, the packers, the top-k
// compress scan, the F16C conversions) asks here and otherwise runs its portable loop, which
// gives the same bytes. GRADWIRE_PORTABLE_KERNELS=1 in the environment switches them all off
// (to compare, or to rule them out); tests switch them off to check the portable paths.
// (Loops built with GRADWIRE_VECTOR_KERNEL are dispatched by the compiler, not from here.)
#pragma once

namespace gradwire {

struct CpuFeatures {
  bool avx2 = false;
  bool f16c = false;         ///< with AVX
  bool fast_pext = false;    ///< BMI2, except AMD Zen 1/2 (microcoded pext / pdep)
  bool avx512 = false;       ///< AVX-512 F, BW and VL
  bool avx512vbmi = false;   ///< the above plus VBMI (vpermb)
};

/// What this CPU offers, or nothing while portable kernels are forced.
const CpuFeatures& cpu_features();

/// Forces the portable loops everywhere (true) or restores what the CPU offers (false). For
/// tests; not meant to be flipped while codecs run on other threads.
void use_portable_kernels(bool portable);

}  // namespace gradwire
