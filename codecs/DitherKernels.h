// Hand-written AVX-512 versions of the stochastic-rounding kernels of the level quantisers
// (QSGD's uniform levels, natural dithering's powers of two) and TernGrad.
//
// Why by hand: GCC vectorises the portable loops (LevelQuantizer.cpp, TernGradCodec.cpp),
// but for byte-sized codes it processes 64 elements per iteration and spends a third of the
// instructions narrowing 32-bit lanes through word permutes; here 16 elements go through one
// zmm register and one vpmovdb. Each kernel computes exactly what the portable loop computes
// (the same Dither hash per element index, the same integer comparisons of float bit
// patterns), so results are bit-identical on every CPU; quantizers_test checks the kernels
// against a scalar reference.
//
// Each writes one code per byte to out[0..m) (codes are at most 8 bits here) and returns how
// many of the m elements it handled (a multiple of 16, 0 where the CPU lacks AVX-512BW); the
// caller finishes the rest with the portable loop.
#pragma once

#include <cstdint>

namespace gradwire {
namespace quant {

/// True when the CPU runs the kernels below (AVX-512 F + BW).
bool has_avx512_kernels();

/// QSGD codes (uniform levels l / s): see LevelQuantizer.cpp, uniform_codes.
std::uint32_t uniform_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                   std::uint32_t key, std::uint32_t levels, unsigned level_bits,
                                   std::uint8_t* out);

/// Natural dithering codes (levels 0, 2^(1-s) .. 1): see LevelQuantizer.cpp, power_of_two_codes.
std::uint32_t power_of_two_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m, float scale,
                                        std::uint32_t key, std::uint32_t levels, unsigned level_bits,
                                        std::uint8_t* out);

/// TernGrad's 2-bit codes: see TernGradCodec.cpp, ternary_codes.
std::uint32_t ternary_codes_avx512(const float* x, std::uint32_t first, std::uint32_t m, float bound, float inv,
                                   std::uint32_t key, std::uint8_t* out);

}  // namespace quant
}  // namespace gradwire
