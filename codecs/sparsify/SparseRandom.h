// Small deterministic random-number helpers for the sparsifiers (threshold sampling, random-k
// index sets). Deliberately not <random>: std::uniform_int_distribution is implementation
// defined, and random-k needs every worker (and any decoder, on any platform) to derive the
// same index set from the same seed.
#pragma once

#include <cstdint>

namespace gradwire {

// 128-bit product for Lemire's method (GCC/Clang extension; __extension__ keeps -Wpedantic quiet).
__extension__ typedef unsigned __int128 Uint128;

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): one 64-bit state, a full-period Weyl sequence through a strong mixer.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound) (bound > 0), by Lemire's multiply-shift with rejection
  /// ("Fast random integer generation in an interval", ACM TOMACS 2019): exact, no modulo bias.
  std::uint64_t below(std::uint64_t bound) {
    Uint128 m = static_cast<Uint128>(next()) * bound;
    auto low = static_cast<std::uint64_t>(m);
    if (low < bound) {
      const std::uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<Uint128>(next()) * bound;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

  std::uint64_t state() const { return state_; }

 private:
  std::uint64_t state_;
};

/// Mixes several 64-bit words into one seed (order matters). Used to derive per-step,
/// per-chunk and per-rank streams from the scenario seed.
inline std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0,
                              std::uint64_t d = 0) {
  SplitMix64 g(a);
  std::uint64_t h = g.next();
  for (const std::uint64_t w : {b, c, d}) {
    SplitMix64 s(h ^ w);
    h = s.next() + 0x632be59bd9b4e019ULL * w;
  }
  return h;
}

}  // namespace gradwire
