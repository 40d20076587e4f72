// GRADWIRE_VECTOR_KERNEL: builds a hot loop for several instruction sets, picked at load time.
#pragma once

// Hot per-element kernels (stochastic rounding: a 32-bit integer hash per element; format
// conversions) are built three times on x86-64 with GCC: for the baseline ISA, for AVX2 and
// for x86-64-v4 (AVX-512), picked once at load time (GCC function multi-versioning). The SSE2 baseline has no 32-bit
// vector multiply, which the hash needs three of; AVX2 does them 8 lanes at a time, AVX-512
// 16 (about twice as fast again for the stochastic-rounding kernels on a Zen 5 core).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define GRADWIRE_VECTOR_KERNEL __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define GRADWIRE_VECTOR_KERNEL
#endif
