// Test support: reads the raw little-endian arrays the Python reference scripts write
// (`tensor.numpy().tofile(path)`), so a test compares gradwire's numbers with PyTorch's.
#pragma once

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace gradwire::testing {

/// The whole file as elements of T (a trailing partial element is dropped; a missing file is
/// empty, which the caller's size check reports).
template <typename T>
std::vector<T> read_raw(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace gradwire::testing
