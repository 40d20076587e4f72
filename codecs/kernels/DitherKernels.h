// Hand-written AVX-512 and AVX2 versions of the stochastic-rounding kernels of the level
// quantisers (QSGD's uniform levels, natural dithering's powers of two) and TernGrad.
//
// Why by hand: GCC vectorises the portable loops (LevelQuantizer.cpp, TernGradCodec.cpp),
// but for byte-sized codes it processes 64 elements per iteration and spends a third of the
// instructions narrowing 32-bit lanes through word permutes; here 16 (AVX-512) or 8 (AVX2)
// elements go through one register, and 64 or 32 codes leave in one store. Each kernel
// computes exactly what the portable loop computes (the same Dither hash per element index,
// the same integer comparisons of float bit patterns), so results are bit-identical on every
// CPU; quantizers_test checks every kernel level against a scalar reference.
//
// Each writes one code per byte to out[0..m) (codes are at most 8 bits here) with the widest
// kernel cpu_features() allows and returns how many of the m elements it handled (a multiple
// of 8; 0 without AVX2); the caller finishes the rest with the portable loop.
#pragma once

#include <cstdint>

namespace gradwire {
namespace quant {

/// QSGD codes (uniform levels l / s): see LevelQuantizer.cpp, uniform_codes.
std::uint32_t uniform_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float scale, std::uint32_t key,
                                 std::uint32_t levels, unsigned level_bits, std::uint8_t* out);

/// Natural dithering codes (levels 0, 2^(1-s) .. 1): see LevelQuantizer.cpp, power_of_two_codes.
std::uint32_t power_of_two_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                      std::uint32_t key, std::uint32_t levels, unsigned level_bits, std::uint8_t* out);

/// TernGrad's 2-bit codes: see TernGradCodec.cpp, ternary_codes.
std::uint32_t ternary_codes_simd(const float* x, std::uint32_t first, std::uint32_t m, float bound, float inv,
                                 std::uint32_t key, std::uint8_t* out);

}  // namespace quant
}  // namespace gradwire
