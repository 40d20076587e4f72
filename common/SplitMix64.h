// SplitMix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number Generators",
// OOPSLA 2014): a tiny generator whose stream is fixed by its 64-bit state alone, the same on
// every platform and standard library. Used where draws must not depend on the order of events
// or on LibTorch's generators (codec dithering keys, availability periods, client sampling).
#pragma once

#include <cstdint>

namespace gradwire {

/// Advances `state` and returns the next 64-bit output.
inline std::uint64_t splitmix64_next(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A uniform double in [0, 1) from the top 53 bits of the next output.
inline double splitmix64_uniform(std::uint64_t& state) {
  return static_cast<double>(splitmix64_next(state) >> 11) * 0x1.0p-53;
}

}  // namespace gradwire
