#include "codecs/quantize/QuantizerTensorOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <torch/types.h>

namespace gradwire::quant {

namespace {

constexpr std::int64_t kLow32 = 0xffffffffLL;

/// The weights of bits 0..7 in a byte, least significant first (bits::pack_signs' order).
torch::Tensor bit_weights(const c10::Device& device, torch::ScalarType type) {
  return torch::tensor({1, 2, 4, 8, 16, 32, 64, 128}, torch::kUInt8).to(device).to(type);
}

/// Packs a stream of 0/1 values (uint8, any device) into bytes, least significant bit first,
/// zero-padded to whole bytes. Returns a host uint8 tensor.
torch::Tensor pack_bit_stream(const torch::Tensor& bits) {
  const std::int64_t count = bits.numel();
  const std::int64_t bytes = (count + 7) / 8;
  const torch::Tensor padded = torch::constant_pad_nd(bits, {0, bytes * 8 - count}, 0).view({bytes, 8});
  return padded.mul(bit_weights(bits.device(), torch::kUInt8))
      .sum(1, false, torch::kUInt8)
      .to(torch::kCPU)
      .contiguous();
}

/// a * c mod 2^32 for int64 tensors a in [0, 2^32) and a constant c < 2^32, without a
/// product above 2^48 (int64 never overflows): a c = a c_lo + 2^16 (a c_hi mod 2^16).
torch::Tensor mul_low32(const torch::Tensor& a, std::uint32_t c) {
  const auto lo = static_cast<std::int64_t>(c & 0xffffu);
  const auto hi = static_cast<std::int64_t>(c >> 16);
  return a.mul(lo).add_(a.mul(hi).bitwise_and_(0xffff).__lshift__(16)).bitwise_and_(kLow32);
}

torch::Tensor xor_shift_right(const torch::Tensor& x, int shift) {
  return x.bitwise_xor(x.__rshift__(shift));
}

}  // namespace

torch::Tensor pack_signs_with_tensor_ops(const torch::Tensor& values) {
  // Sign bit clear <=> the int32 view is non-negative (NaNs included, as the host packs them).
  return pack_bit_stream(values.contiguous().view(torch::kInt).ge(0).to(torch::kUInt8));
}

std::vector<Moments> group_moments_with_tensor_ops(const torch::Tensor& x,
                                                   const std::vector<Segment>& segments) {
  std::vector<torch::Tensor> parts;
  parts.reserve(segments.size());
  for (const Segment& seg : segments) {
    const auto offset = static_cast<std::int64_t>(seg.offset);
    const auto length = static_cast<std::int64_t>(seg.length);
    const auto groups = static_cast<std::int64_t>(seg.groups);
    const torch::Tensor values = x.slice(0, offset, offset + length).contiguous().view({groups, length / groups});
    const torch::Tensor wide = values.to(torch::kDouble);
    parts.push_back(torch::stack({wide.sum(1), wide.abs().sum(1), wide.square().sum(1),
                                  values.view(torch::kInt).ge(0).sum(1).to(torch::kDouble),
                                  values.abs().amax(1).to(torch::kDouble)}));
  }
  std::vector<Moments> out;
  if (parts.empty()) return out;
  const torch::Tensor all = torch::cat(parts, 1).to(torch::kCPU).contiguous();
  const std::int64_t count = all.size(1);
  const double* row = all.data_ptr<double>();
  out.resize(static_cast<std::size_t>(count));
  for (std::int64_t g = 0; g < count; ++g) {
    Moments& m = out[static_cast<std::size_t>(g)];
    m.sum = row[g];
    m.sum_abs = row[count + g];
    m.sum_sq = row[2 * count + g];
    m.non_negative = static_cast<std::uint64_t>(row[3 * count + g]);
    m.nan = std::isnan(m.sum_abs);  // |x| sums to NaN only where some x is NaN
    m.max_abs = m.nan ? std::nanf("") : static_cast<float>(row[4 * count + g]);
  }
  return out;
}

torch::Tensor expand_signs_with_tensor_ops(const std::uint8_t* signs, std::uint64_t n,
                                           const std::vector<std::int64_t>& group_lengths,
                                           const std::vector<float>& positive,
                                           const std::vector<float>& negative,
                                           const c10::Device& device) {
  const auto count = static_cast<std::int64_t>(n);
  const auto bytes = static_cast<std::int64_t>((n + 7) / 8);
  torch::Tensor packed = torch::empty({bytes}, torch::kUInt8);
  if (bytes != 0) std::memcpy(packed.data_ptr<std::uint8_t>(), signs, static_cast<std::size_t>(bytes));
  packed = packed.to(device);
  const torch::Tensor set =
      packed.unsqueeze(1).bitwise_and(bit_weights(device, torch::kUInt8)).ne(0).view({-1}).slice(0, 0, count);
  const auto groups = static_cast<std::int64_t>(group_lengths.size());
  const auto table = [&](const std::vector<float>& values) {
    return torch::from_blob(const_cast<float*>(values.data()), {groups}, torch::kFloat).to(device);
  };
  if (groups == 1) return torch::where(set, table(positive), table(negative));
  const torch::Tensor lengths =
      torch::from_blob(const_cast<std::int64_t*>(group_lengths.data()), {groups}, torch::kLong).to(device);
  return torch::where(set, table(positive).repeat_interleave(lengths, 0, count),
                      table(negative).repeat_interleave(lengths, 0, count));
}

torch::Tensor expand_sign_groups(const SignGroups& groups, const c10::Device& device) {
  if (!device.is_cpu()) {
    return expand_signs_with_tensor_ops(groups.signs, groups.n, groups.lengths, groups.positive,
                                        groups.negative, device);
  }
  torch::Tensor out = torch::empty({static_cast<std::int64_t>(groups.n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  std::uint64_t at = 0;
  for (std::size_t g = 0; g < groups.lengths.size(); ++g) {
    const auto length = static_cast<std::uint64_t>(groups.lengths[g]);
    expand_signs(groups.signs, at, length, groups.positive[g], groups.negative[g], dst + at);
    at += length;
  }
  return out;
}

torch::Tensor dither_hashes_with_tensor_ops(std::uint32_t key, std::uint64_t first, std::int64_t count,
                                            const c10::Device& device) {
  // x = i * 0x9E3779B9 + key, then lowbias32's shifts and multiplies, all mod 2^32.
  const torch::Tensor index = torch::arange(count, torch::TensorOptions().dtype(torch::kLong).device(device))
                                  .add_(static_cast<std::int64_t>(first))
                                  .bitwise_and_(kLow32);
  torch::Tensor x = mul_low32(index, 0x9E3779B9u).add_(static_cast<std::int64_t>(key)).bitwise_and_(kLow32);
  x = mul_low32(xor_shift_right(x, 16), 0x7feb352du);
  x = mul_low32(xor_shift_right(x, 15), 0x846ca68bu);
  return xor_shift_right(x, 16);
}

torch::Tensor pack_codes_with_tensor_ops(const torch::Tensor& codes, unsigned width) {
  // Pieces of a multiple of 8 codes start on whole bytes; their size bounds the (codes x
  // width) bit matrix that each piece unfolds into.
  constexpr std::int64_t kPiece = std::int64_t{1} << 22;
  const std::int64_t n = codes.numel();
  const torch::Tensor shifts =
      torch::arange(static_cast<std::int64_t>(width), torch::TensorOptions().dtype(torch::kLong).device(codes.device()));
  if (n == 0) return torch::empty({0}, torch::kUInt8);
  std::vector<torch::Tensor> pieces;
  for (std::int64_t begin = 0; begin < n; begin += kPiece) {
    const torch::Tensor part = codes.slice(0, begin, std::min(n, begin + kPiece));
    const torch::Tensor bits = part.unsqueeze(1).__rshift__(shifts).bitwise_and_(1).to(torch::kUInt8).view({-1});
    pieces.push_back(pack_bit_stream(bits));
  }
  return pieces.size() == 1 ? pieces.front() : torch::cat(pieces);
}

}  // namespace gradwire::quant
