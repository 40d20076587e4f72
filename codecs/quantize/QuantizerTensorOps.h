// The quantisers' per-element work written as LibTorch tensor operations, so it runs wherever
// the gradient lives: the path the sign family and QSGD take for a gradient on an accelerator,
// where only the payload's few bytes (sign bits, codes, scales) cross to host memory.
//
// What is exact and what is not: sign bits, level codes and dither draws are bit for bit the
// host encoder's (integer operations, and float operations each rounded once, as on the host).
// Sums are not: the host adds in float lanes over blocks of 1024 (QuantizerSupport.h's
// Moments), the device in double in LibTorch's order, so a scale or norm computed here can
// differ from the host's in its last bits (relative 1e-6 at most for the sums these codecs
// take; tests/gpu/gpu_test.cpp states each codec's tolerance).
#pragma once

#include <cstdint>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/quantize/QuantizerSupport.h"

namespace gradwire::quant {

/// bits::pack_signs of `values` (a 1-D float tensor on any device): bit i of byte i / 8 is
/// set when value i's sign bit is clear. Returns ceil(n / 8) bytes as a host uint8 tensor.
at::Tensor pack_signs_with_tensor_ops(const at::Tensor& values);

/// Moments of every group of every segment of `x` (1-D float, any device), groups in
/// segment order: sum, sum_abs and sum_sq in double, non_negative (sign bit clear), nan and
/// max_abs. One copy to the host for all groups.
std::vector<Moments> group_moments_with_tensor_ops(const at::Tensor& x,
                                                   const std::vector<Segment>& segments);

/// The inverse of pack_signs on `device`: element i of the n returned is `positive[g]` where
/// its sign bit is set and `negative[g]` where not, g the group holding it (consecutive
/// groups of `group_lengths`, summing to n). Only the sign bytes and the per-group values
/// are copied to the device.
at::Tensor expand_signs_with_tensor_ops(const std::uint8_t* signs, std::uint64_t n,
                                        const std::vector<std::int64_t>& group_lengths,
                                        const std::vector<float>& positive,
                                        const std::vector<float>& negative,
                                        const c10::Device& device);

/// Sign bits with a pair of values per group of consecutive elements: what the sign codecs'
/// payloads (signsgd, efsignsgd, onebit) decode to.
struct SignGroups {
  std::uint64_t n = 0;
  const std::uint8_t* signs = nullptr;  ///< ceil(n / 8) bytes, bits::pack_signs layout
  std::vector<std::int64_t> lengths;    ///< consecutive groups, summing to n
  std::vector<float> positive;          ///< a group's value where the sign bit is set
  std::vector<float> negative;          ///< and where it is not
};

/// The decoded tensor on `device`: on the host by expand_signs, elsewhere by
/// expand_signs_with_tensor_ops (the same values bit for bit).
at::Tensor expand_sign_groups(const SignGroups& groups, const c10::Device& device);

/// Dither::hash(key, i) for i = first .. first + count - 1, as int64 values in [0, 2^32) on
/// `device`: the same draws the host's stochastic rounding makes.
at::Tensor dither_hashes_with_tensor_ops(std::uint32_t key, std::uint64_t first, std::int64_t count,
                                         const c10::Device& device);

/// bits::pack_at of `codes` (int64 values < 2^width, 1-D, any device) at `width` bits each,
/// least significant bit first, the stream padded with zero bits to whole bytes. Returns the
/// bytes as a host uint8 tensor.
at::Tensor pack_codes_with_tensor_ops(const at::Tensor& codes, unsigned width);

}  // namespace gradwire::quant
