// NumPy's .npy format for `gradwire codec`: the reader and writer of little-endian float32
// arrays. Parsing works on bytes in memory (parse_npy_f32) so the untrusted part can be
// checked, and fuzzed, without touching files; read_npy_f32 and write_npy_f32 add the file.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "common/ByteSpan.h"

namespace gradwire {

/// Raised for malformed .npy files (exit code 2).
struct NpyError : std::exception {
  explicit NpyError(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

/// Parses a little-endian float32 .npy image (format 1.0-3.0, C order or 1-D). `shape`
/// receives its dimensions, whose product is the number of values returned. Throws NpyError
/// starting with `where` and naming the problem.
std::vector<float> parse_npy_f32(ByteSpan bytes, const std::string& where,
                                 std::vector<std::int64_t>* shape = nullptr);

/// The .npy image (format 1.0) of `values` shaped `shape` (product must equal size).
Bytes format_npy_f32(const std::vector<float>& values, const std::vector<std::int64_t>& shape);

/// The largest .npy file read_npy_f32 reads by default: 2^30 float32 values and a header.
constexpr std::uint64_t kMaxNpyFileBytes = (std::uint64_t{1} << 32) + (std::uint64_t{1} << 20);

/// Reads a .npy file, a regular file of at most `max_bytes`; NpyError naming the file and the
/// problem (a FIFO, a device or a directory is refused before it is read).
std::vector<float> read_npy_f32(const std::string& path, std::vector<std::int64_t>* shape = nullptr,
                                std::uint64_t max_bytes = kMaxNpyFileBytes);
/// Writes a float32 .npy file (format 1.0) of the given shape, atomically.
void write_npy_f32(const std::string& path, const std::vector<float>& values,
                   const std::vector<std::int64_t>& shape);

}  // namespace gradwire
