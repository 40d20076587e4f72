#include "codecs/MomentumCorrection.h"

#include <algorithm>
#include <cstring>

#include "codecs/kernels/MomentKernels.h"
#include "codecs/sparsify/ThresholdSampling.h"

namespace gradwire {

namespace {

/// One element of momentum_accumulate; Variant 0: momentum == 0, 1: plain, 2: Nesterov. Must
/// stay the same arithmetic as momentum_preview (and momentum_accumulate).
template <int Variant>
inline float update_one(float& u, float& v, float g, float momentum, float g_scale) {
  if constexpr (Variant == 0) {
    v += g_scale * g;
  } else if constexpr (Variant == 1) {
    const float ui = momentum * u + g_scale * g;
    u = ui;
    v += ui;
  } else {
    const float gi = g_scale * g;
    const float ui = (u + gi) * momentum;
    u = ui;
    v += ui + gi;
  }
  return v;
}

template <int Variant>
void accumulate(float* __restrict u, float* __restrict v, const float* __restrict g,
                std::int64_t n, float momentum, float g_scale) {
  for (std::int64_t i = 0; i < n; ++i) update_one<Variant>(u[i], v[i], g[i], momentum, g_scale);
}

/// Blocks of kScanBlock: update (vectorised), OR-reduce "some |v| reached key", and only in a
/// block that holds a candidate walk it again (from L1) with a branch-free append.
template <int Variant>
void accumulate_collect(float* __restrict u, float* __restrict v, const float* __restrict g,
                        std::int64_t n, float momentum, float g_scale, std::uint32_t key,
                        std::uint32_t base, std::vector<std::uint32_t>& out) {
  const std::int32_t below = static_cast<std::int32_t>(key) - 1;  // key <= 0x7fffffff
  std::size_t used = out.size();
  std::int64_t i = 0;
  for (; i + kScanBlock <= n; i += kScanBlock) {
    std::int32_t hit = 0;
    for (std::int64_t j = i; j < i + kScanBlock; ++j) {
      const float vj = update_one<Variant>(u[j], v[j], g[j], momentum, g_scale);
      std::int32_t bits;
      std::memcpy(&bits, &vj, sizeof bits);
      hit |= (bits & 0x7fffffff) > below;
    }
    if (hit != 0) {
      used += append_at_least(v + i, kScanBlock, key, base + static_cast<std::uint32_t>(i),
                              room_for(out, used, kScanBlock));
    }
  }
  for (std::int64_t j = i; j < n; ++j) update_one<Variant>(u[j], v[j], g[j], momentum, g_scale);
  if (i < n) {
    used += append_at_least(v + i, n - i, key, base + static_cast<std::uint32_t>(i),
                            room_for(out, used, n - i));
  }
  out.resize(used);
}


/// The portable lane sums: element i adds into lane i % kMomentLanes, in element order.
void add_lanes(double* lanes, std::int64_t i, float x) { lanes[i % kMomentLanes] += static_cast<double>(x); }
// A float's square is exact in double, so a fused multiply-add would round alike.
void add_square_lanes(double* lanes, std::int64_t i, float x) {
  lanes[i % kMomentLanes] += static_cast<double>(x) * static_cast<double>(x);
}
/// The fixed tree every kernel level combines the lanes with.
double lane_total(const double* s) {
  static_assert(kMomentLanes == 16, "lane_total combines sixteen lanes");
  const auto four = [s](int a) { return (s[a] + s[a + 1]) + (s[a + 2] + s[a + 3]); };
  return (four(0) + four(4)) + (four(8) + four(12));
}
static_assert(kScanBlock == 64, "momentum_moments_simd works in blocks of 64");

/// The widest kernel for the whole blocks (momentum_moments_simd; not for Nesterov), then the
/// portable loop: blocks of kScanBlock updated, then their moments and largest key (from L1).
template <int Variant, bool USquares>
VelocityMoments accumulate_moments(float* __restrict u, float* __restrict v, const float* __restrict g,
                                   std::int64_t n, float momentum, float g_scale,
                                   std::uint32_t* __restrict block_max) {
  MomentLanes lanes;
  std::int64_t i =
      Variant == 2 ? 0 : momentum_moments_simd(u, v, g, n, momentum, g_scale, USquares, lanes, block_max);
  for (; i < n; i += kScanBlock) {
    const std::int64_t e = std::min(n, i + kScanBlock);
    std::uint32_t top = 0;
    for (std::int64_t j = i; j < e; ++j) update_one<Variant>(u[j], v[j], g[j], momentum, g_scale);
    for (std::int64_t j = i; j < e; ++j) {
      add_lanes(lanes.sum, j, v[j]);
      add_square_lanes(lanes.squares, j, v[j]);
      if (USquares) add_square_lanes(lanes.u_squares, j, u[j]);
      top = std::max(top, magnitude_key(v[j]));
    }
    block_max[i / kScanBlock] = top;
  }
  return VelocityMoments{lane_total(lanes.sum), lane_total(lanes.squares),
                         USquares ? lane_total(lanes.u_squares) : 0.0};
}

template <int Variant>
VelocityMoments accumulate_moments_variant(float* u, float* v, const float* g, std::int64_t n,
                                           float momentum, float g_scale, bool u_squares,
                                           std::uint32_t* block_max) {
  return u_squares ? accumulate_moments<Variant, true>(u, v, g, n, momentum, g_scale, block_max)
                   : accumulate_moments<Variant, false>(u, v, g, n, momentum, g_scale, block_max);
}

}  // namespace

void momentum_accumulate(float* u, float* v, const float* g, std::int64_t n, float momentum,
                         bool nesterov, float g_scale) {
  if (momentum == 0.0f) {
    accumulate<0>(u, v, g, n, momentum, g_scale);
  } else if (nesterov) {
    accumulate<2>(u, v, g, n, momentum, g_scale);
  } else {
    accumulate<1>(u, v, g, n, momentum, g_scale);
  }
}

void momentum_accumulate_collect(float* u, float* v, const float* g, std::int64_t n,
                                 float momentum, bool nesterov, float g_scale, std::uint32_t key,
                                 std::uint32_t base, std::vector<std::uint32_t>& out) {
  if (momentum == 0.0f) {
    accumulate_collect<0>(u, v, g, n, momentum, g_scale, key, base, out);
  } else if (nesterov) {
    accumulate_collect<2>(u, v, g, n, momentum, g_scale, key, base, out);
  } else {
    accumulate_collect<1>(u, v, g, n, momentum, g_scale, key, base, out);
  }
}

VelocityMoments momentum_accumulate_moments(float* u, float* v, const float* g, std::int64_t n,
                                            float momentum, bool nesterov, float g_scale,
                                            bool u_squares, std::uint32_t* block_max) {
  if (momentum == 0.0f) {
    return accumulate_moments_variant<0>(u, v, g, n, momentum, g_scale, u_squares, block_max);
  }
  if (nesterov) {
    return accumulate_moments_variant<2>(u, v, g, n, momentum, g_scale, u_squares, block_max);
  }
  return accumulate_moments_variant<1>(u, v, g, n, momentum, g_scale, u_squares, block_max);
}

double sum_of_squares(const float* x, std::int64_t n) {
  double lanes[kMomentLanes] = {};
  std::int64_t i = 0;
  for (; i + kMomentLanes <= n; i += kMomentLanes) {
    for (int l = 0; l < kMomentLanes; ++l) add_square_lanes(lanes, l, x[i + l]);
  }
  for (; i < n; ++i) add_square_lanes(lanes, i, x[i]);
  return lane_total(lanes);
}

}  // namespace gradwire
