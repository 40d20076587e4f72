#include "codecs/CpuFeatures.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

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

bool portable_from_environment() {
  const char* v = std::getenv("GRADWIRE_PORTABLE_KERNELS");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

std::atomic<bool>& forced_portable() {
  static std::atomic<bool> forced{portable_from_environment()};
  return forced;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures detected = detect();
  static const CpuFeatures none;
  return forced_portable().load(std::memory_order_relaxed) ? none : detected;
}

void use_portable_kernels(bool portable) { forced_portable().store(portable, std::memory_order_relaxed); }

}  // namespace gradwire
