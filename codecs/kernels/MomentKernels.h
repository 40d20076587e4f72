// Hand-written AVX-512 and AVX2 versions of the momentum update fused with moments
// (momentum_accumulate_moments in codecs/MomentumCorrection.h, which SDAGC's encode runs).
//
// Why by hand: the portable loop is compiled for the SSE2 baseline, where double sums and
// unsigned maxima take several instructions per element and the compiler spills the lane
// accumulators; here 16 (AVX-512) or 8 (AVX2) floats go through one register. The result is
// bit-identical to the portable loop: the float update is the same multiplies and adds (the
// AVX-512 adds use explicit rounding, which the compiler cannot contract into an FMA, and the
// AVX2 kernel is built without FMA), the sums keep the same kMomentLanes double lanes (element
// i in lane i % kMomentLanes, each lane in element order), and the block maxima are integer
// maxima of the same keys. sparsifiers_test checks SDAGC's bytes at every kernel level.
#pragma once

#include <cstdint>

namespace gradwire {

/// Double accumulators of momentum_accumulate_moments: element i adds into lane
/// i % kMomentLanes of each sum, and the lanes are combined in one fixed tree, so the sums have
/// the same bits on every CPU and kernel level.
constexpr int kMomentLanes = 16;

struct MomentLanes {
  double sum[kMomentLanes] = {};
  double squares[kMomentLanes] = {};
  double u_squares[kMomentLanes] = {};
};

/// The fused pass (u = m u + s g, v += u; or v += s g when momentum == 0) over the first
/// floor(n / 64) * 64 elements with the widest kernel cpu_features() allows, adding into
/// `lanes` (u^2 only when `u_squares`) and writing each block of 64's largest magnitude key to
/// block_max. Returns how many elements it handled (0 without AVX2); the caller finishes the
/// rest with the portable loop.
std::int64_t momentum_moments_simd(float* u, float* v, const float* g, std::int64_t n, float momentum,
                                   float g_scale, bool u_squares, MomentLanes& lanes, std::uint32_t* block_max);

}  // namespace gradwire
