// The quantisers' tensor-operation paths (codecs/quantize/QuantizerTensorOps.h), run here on
// the CPU against the host encoders and decoders: what a GPU runs
// (tests/gpu/gpu_test.cpp compares the devices themselves). Sign bits, dither draws and codes
// must be the host's bit for bit; scales and norms, summed in another order, to the stated
// tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <torch/types.h>

#include "AwkwardGradient.h"
#include "QuantizerPayloads.h"
#include "codecs/CodecRegistry.h"
#include "codecs/quantize/LevelQuantizer.h"
#include "codecs/quantize/OneBitCodec.h"
#include "codecs/quantize/QuantizerSupport.h"
#include "codecs/quantize/QuantizerTensorOps.h"
#include "codecs/quantize/ScaledSignCodec.h"
#include "codecs/quantize/SignCodec.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"
#include "common/DecodeError.h"

namespace gradwire {
namespace {

using testing::awkward_gradient;
using testing::expect_qsgd_payloads_match;
using testing::expect_sign_payloads_match;

std::vector<LayerSlice> layout() { return testing::tiny_model_layout(); }
constexpr std::int64_t kLayoutElements = testing::kTinyModelElements;

TEST(QuantizerTensorOps, DitherHashesAreTheHostDraws) {
  for (std::uint32_t key : {0u, 1u, 0x9E3779B9u, 0xffffffffu}) {
    for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{12345}, (std::uint64_t{1} << 32) - 5}) {
      const torch::Tensor h = quant::dither_hashes_with_tensor_ops(key, first, 1000, torch::kCPU);
      ASSERT_EQ(h.numel(), 1000);
      const std::int64_t* v = h.data_ptr<std::int64_t>();
      for (std::int64_t i = 0; i < 1000; ++i) {
        ASSERT_EQ(static_cast<std::uint64_t>(v[i]), quant::Dither::hash(key, quant::dither_index(first + i)))
            << "key " << key << ", element " << first + i;
      }
    }
  }
}

TEST(QuantizerTensorOps, CodesPackAsThePacker) {
  std::mt19937 rng(3);
  for (unsigned width : {1u, 2u, 3u, 5u, 8u, 9u, 13u, 17u}) {
    for (std::int64_t n : {1, 7, 8, 1001}) {
      std::vector<std::uint32_t> codes(static_cast<std::size_t>(n));
      for (auto& c : codes) c = rng() & ((1u << width) - 1u);
      std::vector<std::uint8_t> expected(bits::packed_size(n, width), 0);
      bits::pack_at(codes.data(), codes.size(), width, expected.data(), 0);
      std::vector<std::int64_t> wide(codes.begin(), codes.end());
      const torch::Tensor packed =
          quant::pack_codes_with_tensor_ops(torch::tensor(wide, torch::kLong), width);
      ASSERT_EQ(static_cast<std::size_t>(packed.numel()), expected.size()) << "width " << width;
      EXPECT_EQ(std::memcmp(packed.data_ptr<std::uint8_t>(), expected.data(), expected.size()), 0)
          << "width " << width << ", n " << n;
    }
  }
}

TEST(QuantizerTensorOps, SignExpansionIsTheHostDecode) {
  const std::uint64_t n = 1003;
  std::vector<std::uint8_t> signs((n + 7) / 8);
  std::mt19937 rng(5);
  for (auto& b : signs) b = static_cast<std::uint8_t>(rng());
  signs.back() &= 0x07;  // 1003 = 125 * 8 + 3: padding bits zero
  quant::SignGroups groups;
  groups.n = n;
  groups.signs = signs.data();
  groups.lengths = {3, 10, 1, static_cast<std::int64_t>(n) - 14};
  groups.positive = {0.5f, 2.0f, -0.0f, 1e-30f};
  groups.negative = {-0.5f, -3.0f, 7.0f, NAN};
  const torch::Tensor host = quant::expand_sign_groups(groups, torch::kCPU);
  const torch::Tensor ops = quant::expand_signs_with_tensor_ops(groups.signs, n, groups.lengths, groups.positive,
                                                                groups.negative, torch::kCPU);
  ASSERT_EQ(ops.numel(), static_cast<std::int64_t>(n));
  EXPECT_EQ(std::memcmp(host.data_ptr<float>(), ops.data_ptr<float>(), 4 * n), 0);
  // One group: the +-1 of signsgd.
  const torch::Tensor one = quant::expand_signs_with_tensor_ops(signs.data(), n, {static_cast<std::int64_t>(n)},
                                                                {1.0f}, {-1.0f}, torch::kCPU);
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(one[static_cast<std::int64_t>(i)].item<float>(), (signs[i / 8] >> (i % 8)) & 1 ? 1.0f : -1.0f) << i;
  }
}

TEST(QuantizerTensorOps, EfSignSgdWritesTheHostSignsAndScales) {
  CodecContext context;
  context.layers = layout();
  for (bool per_layer : {true, false}) {
    ScaledSignCodec codec(per_layer, context);
    for (int step = 0; step < 3; ++step) {
      torch::manual_seed(step);
      const torch::Tensor g = torch::randn({kLayoutElements}) * (step + 1);
      const Bytes host = codec.encode(g);
      const Bytes ops = codec.encode_with_tensor_ops(g);
      const std::size_t segments = per_layer ? 4 : 1;
      expect_sign_payloads_match(host, ops, kPayloadHeaderSize + 4, kPayloadHeaderSize + 4 + 12 * segments,
                                 "efsignsgd per_layer " + std::to_string(per_layer));
    }
  }
  // A long tensor (one segment without a layout), where the host adds in float lanes.
  ScaledSignCodec plain(true, CodecContext{});
  const torch::Tensor g = awkward_gradient(100003, /*with_nan=*/false);
  expect_sign_payloads_match(plain.encode(g), plain.encode_with_tensor_ops(g), kPayloadHeaderSize + 4,
                             kPayloadHeaderSize + 16, "efsignsgd, 100003 elements");
}

TEST(QuantizerTensorOps, OneBitWritesTheHostSignsAndMeans) {
  CodecContext context;
  context.layers = layout();
  for (bool per_column : {true, false}) {
    OneBitCodec codec(per_column, context);
    torch::manual_seed(7);
    torch::Tensor g = torch::randn({kLayoutElements});
    g.slice(0, 108, 112).fill_(0.5f);  // a group with no negative entries: its mean is 0
    const Bytes host = codec.encode(g);
    const Bytes ops = codec.encode_with_tensor_ops(g);
    std::size_t table = 0;
    for (const auto& s : codec.segments(kLayoutElements)) table += 12 + 8 * static_cast<std::size_t>(s.groups);
    expect_sign_payloads_match(host, ops, kPayloadHeaderSize + 4, kPayloadHeaderSize + 4 + table,
                               "onebit per_column " + std::to_string(per_column));
    // Decoded on the host and through the tensor-operation expansion: the same values.
    const torch::Tensor a = codec.decode(ByteSpan(host));
    const torch::Tensor b = quant::expand_signs_with_tensor_ops(
        host.data() + host.size() - (kLayoutElements + 7) / 8, kLayoutElements,
        std::vector<std::int64_t>{kLayoutElements}, {1.0f}, {-1.0f}, torch::kCPU);
    EXPECT_TRUE(torch::equal(a.sign(), b.mul(a.abs().gt(0).to(torch::kFloat)))) << "signs of the decoded values";
  }
}

// QSGD: the same draws and codes wherever the norm is the same; where the norm differs in its
// last bits (a double sum in another order), an element may round to a neighbouring level.
TEST(QuantizerTensorOps, QsgdWritesTheHostLevels) {
  struct Case {
    std::uint32_t levels, bucket;
    LevelQuantizer::Norm norm;
  };
  for (const Case c : {Case{4, 512, LevelQuantizer::Norm::kL2}, Case{1, 512, LevelQuantizer::Norm::kL2},
                       Case{255, 100, LevelQuantizer::Norm::kL2}, Case{4, 0, LevelQuantizer::Norm::kL2},
                       Case{15, 64, LevelQuantizer::Norm::kLinf}}) {
    for (std::int64_t n : {1, 7, 1000, 100003}) {
      LevelQuantizer host(LevelQuantizer::Levels::kUniform, c.levels, c.bucket, c.norm, 9, 2);
      LevelQuantizer ops(LevelQuantizer::Levels::kUniform, c.levels, c.bucket, c.norm, 9, 2);
      for (int step = 0; step < 2; ++step) {
        const torch::Tensor g = awkward_gradient(n, /*with_nan=*/step == 1) * (step + 1);
        const Bytes a = host.encode(g);
        const Bytes b = ops.encode_with_tensor_ops(g);
        const std::string what = "levels " + std::to_string(c.levels) + ", bucket " + std::to_string(c.bucket) +
                                 ", n " + std::to_string(n) + ", step " + std::to_string(step);
        expect_qsgd_payloads_match(host, a, b, what);
      }
    }
  }
}

// decode_to expands on the device with tensor operations whatever the device, so on the CPU
// it must give the host decode's values bit for bit, and refuse what decode refuses.
TEST(QuantizerTensorOps, QsgdDecodeToIsTheHostDecode) {
  for (std::uint32_t levels : {1u, 4u, 7u, 255u, 65535u}) {
    for (std::uint32_t bucket : {0u, 100u, 512u}) {
      LevelQuantizer codec(LevelQuantizer::Levels::kUniform, levels, bucket, LevelQuantizer::Norm::kL2, 4, 0);
      for (std::int64_t n : {1, 9, 1003}) {
        const Bytes payload = codec.encode(awkward_gradient(n, /*with_nan=*/n == 1003));
        const torch::Tensor a = codec.decode(ByteSpan(payload));
        const torch::Tensor b = codec.decode_to(ByteSpan(payload), torch::kCPU);
        ASSERT_EQ(a.numel(), b.numel());
        EXPECT_EQ(std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), 4 * static_cast<std::size_t>(n)), 0)
            << "levels " << levels << ", bucket " << bucket << ", n " << n;
      }
    }
  }
  // A code above s (levels 5 leave room up to 7 in 3 bits) is refused by both.
  LevelQuantizer codec(LevelQuantizer::Levels::kUniform, 5, 0, LevelQuantizer::Norm::kL2, 4, 0);
  Bytes payload = codec.encode(torch::ones({8}));
  payload[kPayloadHeaderSize + 12] |= 0x07;  // element 0's level bits: 7
  EXPECT_THROW(codec.decode(ByteSpan(payload)), DecodeError);
  EXPECT_THROW(codec.decode_to(ByteSpan(payload), torch::kCPU), DecodeError);
}

}  // namespace
}  // namespace gradwire
