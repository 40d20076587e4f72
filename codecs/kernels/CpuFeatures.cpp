#include "codecs/kernels/CpuFeatures.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace gradwire {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2") != 0;
  f.f16c = __builtin_cpu_supports("avx") != 0 && __builtin_cpu_supports("f16c") != 0;
  f.fast_pext = __builtin_cpu_supports("bmi2") != 0 && !__builtin_cpu_is("znver1") && !__builtin_cpu_is("znver2");
  f.avx512 = __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0 &&
             __builtin_cpu_supports("avx512vl") != 0;
  f.avx512vbmi = f.avx512 && __builtin_cpu_supports("avx512vbmi") != 0;
#endif
  return f;
}

KernelLevel level_from_environment() {
  const char* v = std::getenv("GRADWIRE_KERNELS");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "native") == 0) return KernelLevel::kNative;
  if (std::strcmp(v, "avx2") == 0) return KernelLevel::kAvx2;
  if (std::strcmp(v, "portable") == 0) return KernelLevel::kPortable;
  std::cerr << "gradwire: GRADWIRE_KERNELS=" << v << " is not one of native, avx2, portable; using native\n";
  return KernelLevel::kNative;
}

std::atomic<KernelLevel>& current_level() {
  static std::atomic<KernelLevel> level{level_from_environment()};
  return level;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures native = detect();
  static const CpuFeatures avx2 = [] {
    CpuFeatures f = native;
    f.avx512 = f.avx512vbmi = false;
    return f;
  }();
  static const CpuFeatures portable;
  switch (current_level().load(std::memory_order_relaxed)) {
    case KernelLevel::kPortable: return portable;
    case KernelLevel::kAvx2: return avx2;
    case KernelLevel::kNative: break;
  }
  return native;
}

void use_kernels(KernelLevel level) { current_level().store(level, std::memory_order_relaxed); }

}  // namespace gradwire
