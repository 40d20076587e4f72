// libFuzzer target: the .npy reader of `gradwire codec` (sim/cli/NpyFile.h) on arbitrary bytes.
// A malformed file must raise NpyError; a file that parses must describe exactly the values
// it returned, and must read back the same after writing it out again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim/cli/NpyFile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gradwire;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
  try {
    values = parse_npy_f32(ByteSpan(data, size), "fuzz: ", &shape);
  } catch (const NpyError&) {
    return 0;
  }
  // The shape must describe the values returned, without wrapping around.
  std::uint64_t count = 1;
  for (const std::int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count)) std::abort();
  }
  if (count != values.size()) std::abort();
  const Bytes again = format_npy_f32(values, shape);
  std::vector<std::int64_t> shape_again;
  const std::vector<float> values_again = parse_npy_f32(ByteSpan(again), "fuzz: ", &shape_again);
  // Bit for bit (NaN != NaN as floats).
  if (shape_again != shape || values_again.size() != values.size() ||
      (!values.empty() && std::memcmp(values_again.data(), values.data(), 4 * values.size()) != 0)) {
    std::abort();
  }
  return 0;
}
