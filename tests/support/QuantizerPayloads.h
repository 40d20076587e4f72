// How close a quantiser's payload written with tensor operations (on the CPU or a GPU) must
// be to the host encoder's: the tolerance codecs/quantize/QuantizerTensorOps.h states. Sign
// bits, codes and headers exactly; scales and norms, summed in another order, within 1e-6
// relative; QSGD's codes exactly wherever the norms are equal, and otherwise at most one
// element in a thousand one level apart.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <torch/types.h>

#include "codecs/CodecRegistry.h"
#include "codecs/quantize/LevelQuantizer.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire::testing {

/// A small model layout tiling kTinyModelElements = 4*3*3*3 + 4 + 10*36 + 10 elements, so
/// per-layer and per-column codecs have several segments and groups.
inline std::vector<LayerSlice> tiny_model_layout() {
  return {{"conv.weight", 0, {4, 3, 3, 3}},
          {"conv.bias", 108, {4}},
          {"fc.weight", 112, {10, 36}},
          {"fc.bias", 472, {10}}};
}
constexpr std::int64_t kTinyModelElements = 482;

inline float payload_f32(const Bytes& b, std::size_t at) { return load_f32_le(b.data() + at); }

/// |a - b| / max(|a|, |b|); 0 for equal values and for two NaNs.
inline double relative_difference(float a, float b) {
  if ((std::isnan(a) && std::isnan(b)) || a == b) return 0.0;
  return std::abs(static_cast<double>(a) - b) / std::max(std::abs(a), std::abs(b));
}

/// Sign-family payloads (signsgd, efsignsgd, onebit): bytes before `table_begin` and from
/// `table_end` on (the sign bits) equal; the float words between within 1e-6 relative (the
/// table's integer words, lengths and group counts, are equal or the check fails).
inline void expect_sign_payloads_match(const Bytes& host, const Bytes& ops, std::size_t table_begin,
                                       std::size_t table_end, const std::string& what) {
  ASSERT_EQ(host.size(), ops.size()) << what;
  EXPECT_EQ(std::memcmp(host.data(), ops.data(), table_begin), 0) << what << ": header";
  EXPECT_EQ(std::memcmp(host.data() + table_end, ops.data() + table_end, host.size() - table_end), 0)
      << what << ": sign bits";
  int differing = 0;
  for (std::size_t at = table_begin; at < table_end; at += 4) {
    if (std::memcmp(host.data() + at, ops.data() + at, 4) != 0) ++differing;
    EXPECT_LE(relative_difference(payload_f32(host, at), payload_f32(ops, at)), 1e-6)
        << what << ": table word at byte " << at;
  }
  std::cout << what << ": " << differing << " of " << (table_end - table_begin) / 4
            << " table words differ in their last bits\n";
}

/// QSGD payloads `a` (host) and `b` of `codec`'s format (decoded with `codec`).
inline void expect_qsgd_payloads_match(const LevelQuantizer& codec, const Bytes& a, const Bytes& b,
                                       const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), kPayloadHeaderSize + 8), 0) << what << ": header";
  const std::uint64_t n = peek_header(ByteSpan(a)).numel;
  const std::uint32_t bucket = load_u32_le(a.data() + kPayloadHeaderSize + 4);
  const std::size_t buckets = n == 0 ? 0 : static_cast<std::size_t>((n - 1) / bucket + 1);
  bool norms_equal = true;
  for (std::size_t j = 0; j < buckets; ++j) {
    const std::size_t at = kPayloadHeaderSize + 8 + 4 * j;
    const float x = payload_f32(a, at), y = payload_f32(b, at);
    EXPECT_LE(relative_difference(x, y), 1e-6) << what << ": norm of bucket " << j;
    norms_equal = norms_equal && (x == y || (std::isnan(x) && std::isnan(y)));
  }
  // Codes compared under the host's norms: b's norm table replaced by a's.
  Bytes codes_only = b;
  std::memcpy(codes_only.data() + kPayloadHeaderSize + 8, a.data() + kPayloadHeaderSize + 8, 4 * buckets);
  const torch::Tensor x = codec.decode(ByteSpan(a)).nan_to_num();
  const torch::Tensor y = codec.decode(ByteSpan(codes_only)).nan_to_num();
  const std::int64_t apart = x.ne(y).sum().item<std::int64_t>();
  if (norms_equal) {
    EXPECT_EQ(apart, 0) << what << ": codes differ under equal norms";
  } else {
    EXPECT_LE(apart, std::max<std::int64_t>(1, static_cast<std::int64_t>(n) / 1000)) << what;
  }
}

}  // namespace gradwire::testing
