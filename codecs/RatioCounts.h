// How every codec turns a ratio parameter into a count of elements (top-k's k, a drop
// ratio's kept count, a threshold sample's size, DGC's slack bounds, ...).
//
// A ratio written in decimal is rarely exact in binary: 1.0 - 0.99 is 0.010000000000000009 and
// 0.145 * 100 is 14.499999999999998. The product ratio * n then lands a few ulps beside the
// whole number (or, for round to nearest, the half) that the decimal stands for, and ceil or
// round jumps by one: drop_ratio 0.99 of 100 elements would keep 2. Only those points are
// sensitive, so the product is first taken to the nearest multiple of 1/2 when it lies within
// kRatioResolution * n of one, i.e. when the ratio equals such a fraction of n to 12 decimal
// places. Decimal parameters and 1 - ratio carry about 1e-16 of error, and the product adds
// about 1e-16 * n, far inside that; a ratio meant to differ from a whole count by less than
// 1e-12 * n is not a meaningful setting. Each codec then applies its own documented rounding
// (ceil, nearest with halves up, floor) and its own clamps (max(1, .), at most n).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace gradwire {

/// Tolerance of count_from_ratio relative to n (see the file comment).
constexpr double kRatioResolution = 1e-12;

enum class CountRounding {
  kCeil,     ///< the smallest count >= ratio * n
  kNearest,  ///< ratio * n rounded to the nearest count, halves up (std::llround for n >= 0)
  kFloor,    ///< the largest count <= ratio * n
};

/// ratio * n, taken to the nearest multiple of 1/2 when within kRatioResolution * n of it
/// (at most 1e-3 away, so huge n never moves a product across a count). n >= 0.
inline double settled_ratio_product(double ratio, std::int64_t n) {
  const double x = ratio * static_cast<double>(n);
  const double grid = std::round(2.0 * x) / 2.0;
  const double tolerance = std::min(kRatioResolution * static_cast<double>(n), 1e-3);
  return std::fabs(x - grid) <= tolerance ? grid : x;
}

/// The count `ratio` of n elements stands for, rounded as `rounding` says (no clamping:
/// callers apply their own bounds). ratio >= 0, n >= 0.
inline std::int64_t count_from_ratio(double ratio, std::int64_t n, CountRounding rounding) {
  const double x = settled_ratio_product(ratio, n);
  switch (rounding) {
    case CountRounding::kCeil:
      return static_cast<std::int64_t>(std::ceil(x));
    case CountRounding::kFloor:
      return static_cast<std::int64_t>(std::floor(x));
    case CountRounding::kNearest:
      break;
  }
  return static_cast<std::int64_t>(std::llround(x));
}

}  // namespace gradwire
