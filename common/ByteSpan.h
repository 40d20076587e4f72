// Owned bytes (a payload, a frame) and a read-only view of bytes (C++17 has no std::span).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradwire {

using Bytes = std::vector<std::uint8_t>;

/// Does not own the memory.
struct ByteSpan {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;

  ByteSpan() = default;
  ByteSpan(const std::uint8_t* d, std::size_t n) : data(d), size(n) {}
  ByteSpan(const std::vector<std::uint8_t>& v) : data(v.data()), size(v.size()) {}  // NOLINT
};

}  // namespace gradwire
