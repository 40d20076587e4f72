// The quantisation family: exact payload sizes, unbiasedness with a stated bound,
// QSGD's variance bound, majority vote, scaler-shared TernGrad aggregation, compose, round
// trips, corrupt payloads, and a small distributed optimisation run through every codec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/types.h>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/CodecState.h"
#include "codecs/ComposedCodec.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/kernels/CpuFeatures.h"
#include "codecs/quantize/HalfPrecisionCodec.h"
#include "codecs/quantize/LevelQuantizer.h"
#include "codecs/quantize/NaturalCompression.h"
#include "codecs/quantize/OneBitCodec.h"
#include "codecs/quantize/QuantizerSupport.h"
#include "codecs/quantize/ScaledSignCodec.h"
#include "codecs/quantize/SignCodec.h"
#include "codecs/quantize/TernGradCodec.h"
#include "codecs/wire/BitPacking.h"
#include "codecs/wire/WireFormat.h"
#include "common/ConfigError.h"
#include "ExchangeDriver.h"

namespace gradwire {
namespace {

using nlohmann::json;

torch::Tensor random_gradient(std::int64_t n, std::uint64_t seed, double scale = 1.0) {
  at::manual_seed(seed);
  return torch::randn({n}, torch::kFloat) * scale;
}

CodecContext context(int rank = 0, std::int64_t numel = 0, std::vector<LayerSlice> layers = {}) {
  CodecContext ctx;
  ctx.rank = rank;
  ctx.workers = 4;
  ctx.seed = 7;
  ctx.numel = numel;
  ctx.layers = std::move(layers);
  return ctx;
}

std::unique_ptr<Codec> make(const json& object, const CodecContext& ctx = context()) {
  return CodecRegistry::builtin().create(object, ctx);
}

/// Caps the hand-written kernels at a level for a scope.
class KernelsAt {
 public:
  explicit KernelsAt(KernelLevel level) { use_kernels(level); }
  ~KernelsAt() { use_kernels(KernelLevel::kNative); }
  KernelsAt(const KernelsAt&) = delete;
  KernelsAt& operator=(const KernelsAt&) = delete;
};

/// Every kernel level: the CPU's widest, AVX2 (CPUs without AVX-512), the portable loops.
constexpr KernelLevel kKernelLevels[] = {KernelLevel::kNative, KernelLevel::kAvx2, KernelLevel::kPortable};

const char* level_name(KernelLevel level) {
  return level == KernelLevel::kNative ? "native" : level == KernelLevel::kAvx2 ? "avx2" : "portable";
}

/// Consecutive layers "l0", "l1", ... of these shapes.
std::vector<LayerSlice> layout_of(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::vector<LayerSlice> layers;
  std::int64_t at = 0;
  for (const auto& shape : shapes) {
    LayerSlice s;
    s.name = "l" + std::to_string(layers.size());
    s.offset = at;
    s.shape = shape;
    at += s.numel();
    layers.push_back(s);
  }
  return layers;
}

/// A small CNN-like layout: conv weight [6,1,5,5], bias [6], fc weight [10,24], bias [10].
std::vector<LayerSlice> small_layout() {
  return layout_of({{6, 1, 5, 5}, {6}, {10, 24}, {10}});  // 150 + 6 + 240 + 10 = 406 elements
}

const char* const kAllQuantizers[] = {"qsgd",   "natural_dithering", "natural", "terngrad",
                                      "onebit", "signsgd",           "signum",  "efsignsgd",
                                      "fp16",   "bf16",              "compose", "topk_natural"};

// ------------------------------------------------------------------------------------------
// Bit packing

TEST(BitPacking, RoundTripsEveryWidthAndZeroesPadding) {
  std::mt19937 rng(3);
  for (unsigned w = 1; w <= 20; ++w) {
    for (std::size_t n : {0, 1, 7, 8, 9, 63, 100}) {
      std::vector<std::uint32_t> codes(n), back(n);
      for (auto& c : codes) c = rng() & ((1u << w) - 1u);
      std::vector<std::uint8_t> bytes(bits::packed_size(n, w) + 1, 0xAB);
      bits::pack(codes.data(), n, w, bytes.data());
      EXPECT_EQ(bytes.back(), 0xAB) << "wrote past packed_size";
      bits::unpack(bytes.data(), n, w, back.data());
      EXPECT_EQ(codes, back) << "w=" << w << " n=" << n;
      EXPECT_TRUE(bits::padding_is_zero(bytes.data(), n, w));
    }
  }
}

TEST(BitPacking, ByteCodesPackLikeWordCodes) {
  // pack_bytes / unpack_bytes (pext / pdep where the CPU has them) give pack()'s bytes, and
  // write nothing past the stream: lengths around the 8-code blocks and the 8-byte stores.
  std::mt19937 rng(5);
  for (const KernelLevel kernels : kKernelLevels) {
    const KernelsAt mode(kernels);
    for (unsigned w = 1; w <= 8; ++w) {
      for (std::size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 64, 65, 100, 512, 1000}) {
        std::vector<std::uint32_t> words(n);
        std::vector<std::uint8_t> codes(n), back(n, 0xCD);
        for (std::size_t i = 0; i < n; ++i) codes[i] = static_cast<std::uint8_t>(words[i] = rng() & ((1u << w) - 1u));
        std::vector<std::uint8_t> expected(bits::packed_size(n, w), 0), bytes(bits::packed_size(n, w) + 8, 0xAB);
        bits::pack(words.data(), n, w, expected.data());
        bits::pack_bytes(codes.data(), n, w, bytes.data());
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), bytes.begin())) << "w=" << w << " n=" << n;
        for (std::size_t b = expected.size(); b < bytes.size(); ++b) ASSERT_EQ(bytes[b], 0xAB) << "wrote past the stream";
        bits::unpack_bytes(expected.data(), n, w, back.data());
        EXPECT_EQ(codes, back) << "w=" << w << " n=" << n << " (" << level_name(kernels) << ")";
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
// Exact payload sizes (the formats in codecs/README.md)

TEST(PayloadSizes, AreExactlyWhatTheFormatsPromise) {
  for (std::int64_t n : {0, 1, 5, 8, 513, 1000, 4099}) {
    const auto g = random_gradient(n, 1);
    const auto un = static_cast<std::uint64_t>(n);
    const auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; };
    // qsgd, s = 7, bucket 512: 12 + 4 (s) + 4 (bucket) + 4 per bucket + 4 bits per element.
    EXPECT_EQ(make({{"kind", "qsgd"}})->encode(g).size(), 12 + 8 + 4 * ceil_div(un, 512) + ceil_div(4 * un, 8));
    // qsgd s = 255: 9-bit codes.
    EXPECT_EQ(make({{"kind", "qsgd"}, {"levels", 255}, {"bucket", 100}})->encode(g).size(),
              12 + 8 + 4 * ceil_div(un, 100) + ceil_div(9 * un, 8));
    // natural dithering s = 8: index 0..8 -> 4 bits + sign.
    EXPECT_EQ(make({{"kind", "natural_dithering"}})->encode(g).size(),
              12 + 8 + 4 * ceil_div(un, 512) + ceil_div(5 * un, 8));
    // natural: 9 bits per element = n exponent bytes + ceil(n/8) sign bytes.
    EXPECT_EQ(make({{"kind", "natural"}})->encode(g).size(), 12 + un + ceil_div(un, 8));
    // signSGD: ceil(n/8) bytes of signs.
    EXPECT_EQ(make({{"kind", "signsgd"}})->encode(g).size(), 12 + ceil_div(un, 8));
    EXPECT_EQ(make({{"kind", "signum"}})->encode(g).size(), 12 + ceil_div(un, 8));
    // 1-bit SGD without layout: one segment (u64 length, u32 groups, two floats) + signs.
    const std::uint64_t segs = n > 0 ? 1 : 0;
    EXPECT_EQ(make({{"kind", "onebit"}})->encode(g).size(), 12 + 4 + 20 * segs + ceil_div(un, 8));
    EXPECT_EQ(make({{"kind", "efsignsgd"}})->encode(g).size(), 12 + 4 + 12 * segs + ceil_div(un, 8));
    // terngrad: m (u32) + width (u8) + segment count (u32) + 12 per segment + 2 bits each.
    EXPECT_EQ(make({{"kind", "terngrad"}})->encode(g).size(), 12 + 9 + 12 * segs + ceil_div(2 * un, 8));
    EXPECT_EQ(make({{"kind", "fp16"}})->encode(g).size(), 12 + 2 * un);
    EXPECT_EQ(make({{"kind", "bf16"}})->encode(g).size(), 12 + 2 * un);
  }
}

TEST(PayloadSizes, OneBitColumnsFollowTheLayout) {
  const auto layers = small_layout();
  const auto g = random_gradient(406, 2);
  // Groups: conv 6 rows, bias 1, fc 10 rows, bias 1.
  const std::size_t expected = 12 + 4 + (12 + 8 * 6) + (12 + 8) + (12 + 8 * 10) + (12 + 8) + (406 + 7) / 8;
  EXPECT_EQ(make({{"kind", "onebit"}}, context(0, 406, layers))->encode(g).size(), expected);
  const std::size_t per_tensor = 12 + 4 + 4 * 20 + (406 + 7) / 8;
  EXPECT_EQ(make({{"kind", "onebit"}, {"granularity", "tensor"}}, context(0, 406, layers))->encode(g).size(),
            per_tensor);
}

TEST(PayloadSizes, ComposeIsIndicesPlusTheNestedPayload) {
  const std::int64_t n = 10000;
  const auto g = random_gradient(n, 3);
  auto codec = make({{"kind", "topk_natural"}, {"ratio", 0.01}});
  const Bytes p = codec->encode(g);
  const std::uint64_t k = 100;
  const unsigned w = bits::width_for(n - 1);  // 14 bits
  EXPECT_EQ(w, 14u);
  // Nested natural dithering of 100 values, one bucket: 12 + 8 + 4 + ceil(5 * 100 / 8).
  const std::size_t nested = 12 + 8 + 4 + (5 * k + 7) / 8;
  EXPECT_EQ(p.size(), 12 + 4 + 1 + (k * w + 7) / 8 + nested);
  EXPECT_DOUBLE_EQ(codec->last_density(), 0.01);
}

// ------------------------------------------------------------------------------------------
// Round trips and value sets

TEST(RoundTrip, HalfPrecisionMatchesTorchCasts) {
  auto g = random_gradient(1001, 4, 10.0);
  g[3] = 1e6f;     // fp16 overflow -> inf
  g[4] = 1e-9f;    // fp16 underflow
  g[5] = -0.0f;
  const auto fp16 = make({{"kind", "fp16"}});
  const auto bf16 = make({{"kind", "bf16"}});
  EXPECT_TRUE(torch::equal(fp16->decode(fp16->encode(g)), g.to(torch::kHalf).to(torch::kFloat)));
  EXPECT_TRUE(torch::equal(bf16->decode(bf16->encode(g)), g.to(torch::kBFloat16).to(torch::kFloat)));
  EXPECT_EQ(fp16->traits().aggregation, Aggregation::kSummable);
}

TEST(RoundTrip, HalfPrecisionAccumulateRoundsTheFloatSum) {
  const auto a = random_gradient(999, 5);
  const auto b = random_gradient(999, 6);
  for (const char* kind : {"fp16", "bf16"}) {
    const auto codec = make({{"kind", kind}});
    Bytes acc = codec->encode(a);
    codec->accumulate(acc, codec->encode(b));
    const auto dtype = std::string(kind) == "fp16" ? torch::kHalf : torch::kBFloat16;
    const auto expected =
        (a.to(dtype).to(torch::kFloat) + b.to(dtype).to(torch::kFloat)).to(dtype).to(torch::kFloat);
    EXPECT_TRUE(torch::equal(codec->decode(acc), expected)) << kind;
    EXPECT_THROW(codec->accumulate(acc, codec->encode(random_gradient(998, 1))), DecodeError);
  }
}

TEST(RoundTrip, DecodedValuesLieOnEachSchemesLevels) {
  const auto g = random_gradient(2000, 7);
  {  // QSGD: multiples of norm / s within each bucket.
    auto codec = make({{"kind", "qsgd"}, {"levels", 4}, {"bucket", 100}});
    const auto d = codec->decode(codec->encode(g));
    for (int b = 0; b < 20; ++b) {
      const auto slice = g.narrow(0, b * 100, 100);
      const float norm = slice.norm().item<float>();
      const auto q = d.narrow(0, b * 100, 100) / norm * 4;
      EXPECT_LT((q - q.round()).abs().max().item<float>(), 1e-4);
      EXPECT_LE(q.abs().max().item<float>(), 4.0f + 1e-4f);
    }
  }
  {  // natural compression: powers of two with the input's sign, and within a factor 2.
    auto codec = make({{"kind", "natural"}});
    const auto d = codec->decode(codec->encode(g));
    const auto e = d.abs().log2();
    EXPECT_TRUE(torch::equal(e, e.round()));
    EXPECT_TRUE(torch::equal(d.sign(), g.sign()));
    EXPECT_TRUE((d.abs() >= g.abs() / 2).all().item<bool>());
    EXPECT_TRUE((d.abs() <= g.abs() * 2).all().item<bool>());
    // Powers of two are kept exactly.
    const auto p = torch::tensor({0.25f, -8.0f, 1.0f, 0.0f, -0.0f});
    EXPECT_TRUE(torch::equal(codec->decode(codec->encode(p)), p));
  }
  {  // signSGD: +-1 with the input's sign.
    auto codec = make({{"kind", "signsgd"}});
    const auto d = codec->decode(codec->encode(g));
    EXPECT_TRUE(torch::equal(d, torch::where(g >= 0, torch::ones_like(g), -torch::ones_like(g))));
  }
  {  // EF-signSGD (no layout): +-||g||_1 / d.
    auto codec = make({{"kind", "efsignsgd"}});
    const auto d = codec->decode(codec->encode(g));
    const float scale = g.abs().mean().item<float>();
    EXPECT_NEAR(d.abs().max().item<float>(), scale, 1e-6);
    EXPECT_NEAR(d.abs().min().item<float>(), scale, 1e-6);
  }
  {  // 1-bit SGD: each part decodes to its mean, so each group's sum is kept.
    OneBitCodec codec(true, context());
    const auto d = codec.decode(codec.encode(g));
    EXPECT_NEAR(d.sum().item<float>(), g.sum().item<float>(), 1e-2);
    const auto pos = g >= 0;
    EXPECT_NEAR(d.masked_select(pos)[0].item<float>(), g.masked_select(pos).mean().item<float>(), 1e-5);
    EXPECT_NEAR(d.masked_select(~pos)[0].item<float>(), g.masked_select(~pos).mean().item<float>(), 1e-5);
  }
  {  // TernGrad: {-s, 0, s} per layer, s = min(max|g|, 2.5 sigma).
    const auto layers = small_layout();
    const auto h = random_gradient(406, 8);
    auto codec = make({{"kind", "terngrad"}}, context(0, 406, layers));
    const auto d = codec->decode(codec->encode(h));
    for (const auto& layer : layers) {
      const auto x = h.narrow(0, layer.offset, layer.numel());
      const float sigma = x.std(/*unbiased=*/false).item<float>();
      const float s = std::min(x.abs().max().item<float>(), 2.5f * sigma);
      const auto y = d.narrow(0, layer.offset, layer.numel()).abs();
      EXPECT_TRUE(((y == 0) | ((y - s).abs() < 1e-6 * s)).all().item<bool>()) << layer.name;
    }
  }
}

// The codes in a QSGD / natural dithering payload are exactly the stochastic roundings the
// format defines, computed here element by element from the dither stream (Dither::hash of
// the element index), against every code path of the encoder: the kernels at every level
// (AVX-512, AVX2, portable), partial chunks, buckets that do not start on a byte, one whole-tensor bucket,
// zero, huge, denormal, infinite and NaN entries.
TEST(RoundTrip, LevelCodesAreTheDefinedStochasticRoundings) {
  auto g = random_gradient(5003, 21);
  float* v = g.data_ptr<float>();
  v[3] = 0.0f;
  v[4] = -0.0f;
  v[700] = 1e30f;                  // dominates its bucket: the others round to level 0 or 1
  v[1500] = std::nanf("");         // a NaN norm: the whole bucket sends level 0
  v[2100] = 1e-42f;                // denormal
  v[2101] = -std::ldexp(1.0f, -20);
  v[2600] = -INFINITY;             // an infinite norm: scale 0, and inf * 0 is NaN (level s)
  struct Case {
    LevelQuantizer::Levels scheme;
    std::uint32_t levels, bucket;
  };
  for (const KernelLevel kernels : kKernelLevels) {
    const KernelsAt mode(kernels);
    for (const Case c : {Case{LevelQuantizer::Levels::kUniform, 7, 512}, Case{LevelQuantizer::Levels::kUniform, 3, 100},
                         Case{LevelQuantizer::Levels::kUniform, 300, 512}, Case{LevelQuantizer::Levels::kUniform, 1, 0},
                         Case{LevelQuantizer::Levels::kPowerOfTwo, 8, 512}, Case{LevelQuantizer::Levels::kPowerOfTwo, 4, 100},
                         Case{LevelQuantizer::Levels::kPowerOfTwo, 64, 512}, Case{LevelQuantizer::Levels::kPowerOfTwo, 2, 0}}) {
      const bool uniform = c.scheme == LevelQuantizer::Levels::kUniform;
      const CodecId id = uniform ? CodecId::kQsgd : CodecId::kNaturalDithering;
      LevelQuantizer codec(c.scheme, c.levels, c.bucket, LevelQuantizer::Norm::kL2, 11, 2);
      quant::Dither dither(11, 2, id);
      const std::uint32_t key = dither.next_key();  // the one the codec draws for its first encode
      const Bytes payload = codec.encode(g);

      const std::uint64_t n = 5003;
      const std::uint32_t b = c.bucket == 0 ? static_cast<std::uint32_t>(n) : c.bucket;
      const std::uint64_t nb = (n + b - 1) / b;
      const unsigned level_bits = bits::width_for(c.levels);
      std::vector<std::uint32_t> codes(n);
      const std::uint8_t* norms = payload.data() + kPayloadHeaderSize + 8;
      bits::unpack(norms + 4 * nb, n, level_bits + 1, codes.data());
      const std::string what = std::string(uniform ? "qsgd" : "natural_dithering") + " s=" + std::to_string(c.levels) +
                               " bucket=" + std::to_string(c.bucket);
      for (std::uint64_t i = 0; i < n; ++i) {
        const float norm = load_f32_le(norms + 4 * (i / b));
        float scale = (uniform ? static_cast<float>(c.levels) : 1.0f) / norm;
        if (!(norm > 0.0f) || !std::isfinite(scale)) scale = 0.0f;
        const float a = std::fabs(v[i]) * scale;
        const std::uint32_t h = quant::Dither::hash(key, static_cast<std::uint32_t>(i));
        const float u = quant::Dither::uniform(key, static_cast<std::uint32_t>(i));
        std::uint32_t level;
        if (uniform) {
          const float t = std::isnan(a) || a > static_cast<float>(c.levels) ? static_cast<float>(c.levels) : a;
          const float fl = std::floor(t);
          level = static_cast<std::uint32_t>(fl) + (u < t - fl ? 1u : 0u);
        } else {
          const float r = std::isnan(a) || a > 1.0f ? 1.0f : a;
          const int s = static_cast<int>(c.levels);
          if (r >= std::ldexp(1.0f, 1 - s)) {
            int e;
            std::frexp(r, &e);  // r = m 2^e, m in [0.5, 1): r lies in [2^(e-1), 2^e)
            std::uint32_t bits_r;
            std::memcpy(&bits_r, &r, 4);
            const bool up = (h >> 9) < (bits_r & 0x7fffffu);  // P(up) = r / 2^(e-1) - 1
            level = static_cast<std::uint32_t>(std::min(e - 1 + s + (up ? 1 : 0), s));
          } else {
            level = u < a * std::ldexp(1.0f, s - 1) ? 1u : 0u;
          }
        }
        const std::uint32_t sign = std::signbit(v[i]) ? 1u : 0u;
        ASSERT_EQ(codes[i], level | (sign << level_bits))
            << what << " (" << level_name(kernels) << ")" << " element " << i << " value " << v[i];
      }
    }
  }
}

// TernGrad's 2-bit codes likewise: keep with probability min(|v|, s) / s, for the segments of
// a layout whose layers start mid-byte (the portable head) and on whole bytes (the kernels).
TEST(RoundTrip, TernaryCodesAreTheDefinedStochasticRoundings) {
  const auto layers = layout_of({{7}, {1000}, {3, 333}, {2000}});  // offsets 0, 7, 1007, 2006
  const std::int64_t n = 4006;
  auto g = random_gradient(n, 23);
  g.data_ptr<float>()[2500] = 40.0f;  // clipped at 2.5 sigma
  const float* v = g.data_ptr<float>();
  for (const KernelLevel kernels : kKernelLevels) {
    const KernelsAt mode(kernels);
    for (const json& config : {json{{"kind", "terngrad"}}, json{{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.5}}}) {
      const CodecContext ctx = context(3, n, layers);
      auto codec = make(config, ctx);
      quant::Dither dither(ctx.seed, ctx.rank, CodecId::kTernGrad);
      const std::uint32_t key = dither.next_key();
      const Bytes payload = codec->encode(g);
      // Table: header, u32 contributors, u8 width, u32 segments, per segment u64 length + f32 scale.
      const std::uint8_t* table = payload.data() + kPayloadHeaderSize + 9;
      const std::uint32_t segments = load_u32_le(table - 4);
      std::vector<std::uint32_t> codes(n);
      bits::unpack(table + 12 * segments, n, 2, codes.data());
      std::uint64_t at = 0;
      for (std::uint32_t seg = 0; seg < segments; ++seg) {
        const std::uint64_t length = load_u32_le(table + 12 * seg) | (std::uint64_t{load_u32_le(table + 12 * seg + 4)} << 32);
        const float scale = load_f32_le(table + 12 * seg + 8);
        for (std::uint64_t i = at; i < at + length; ++i) {
          const float p = std::min(std::fabs(v[i]), scale) / scale;
          const bool keep = quant::Dither::uniform(key, static_cast<std::uint32_t>(i)) < p;
          const std::uint32_t expected = keep ? (std::signbit(v[i]) ? 3u : 1u) : 0u;
          ASSERT_EQ(codes[i], expected) << config.dump() << " element " << i << " value " << v[i];
        }
        at += length;
      }
      EXPECT_EQ(at, static_cast<std::uint64_t>(n));
    }
  }
}

// Payloads do not depend on the CPU: every quantiser gives the same bytes with the AVX-512,
// AVX2 and portable kernels, on a tensor large enough for the threaded paths, with a layout
// whose layers start mid-byte.
TEST(RoundTrip, EveryKernelLevelGivesTheSameBytes) {
  const std::int64_t n = 300007;
  const auto layers = layout_of({{7}, {100000}, {3, 33333}, {100001}});
  const auto g = random_gradient(n, 29, 0.01);
  for (const char* kind : kAllQuantizers) {
    Bytes native;
    for (const KernelLevel level : kKernelLevels) {
      const KernelsAt mode(level);
      const Bytes payload = make({{"kind", kind}}, context(1, n, layers))->encode(g);
      if (level == KernelLevel::kNative) {
        native = payload;
      } else {
        EXPECT_EQ(payload, native) << kind << " (" << level_name(level) << ")";
      }
    }
  }
}

TEST(RoundTrip, EncodingIsSeededPerRank) {
  const auto g = random_gradient(5000, 9);
  for (const char* kind : {"qsgd", "natural", "natural_dithering", "terngrad"}) {
    EXPECT_EQ(make({{"kind", kind}}, context(0))->encode(g), make({{"kind", kind}}, context(0))->encode(g)) << kind;
    EXPECT_NE(make({{"kind", kind}}, context(0))->encode(g), make({{"kind", kind}}, context(1))->encode(g)) << kind;
    auto codec = make({{"kind", kind}});
    EXPECT_NE(codec->encode(g), codec->encode(g)) << kind << ": each call draws fresh roundings";
  }
}

TEST(RoundTrip, StateCarriesAcrossCodecObjects) {
  // What `gradwire codec --state` relies on: a fresh object given the saved state continues
  // exactly as the original would have.
  const auto g = random_gradient(600, 16);
  for (const json& object : {json{{"kind", "qsgd"}}, json{{"kind", "natural"}}, json{{"kind", "terngrad"}},
                             json{{"kind", "natural_dithering"}}, json{{"kind", "signum"}},
                             json{{"kind", "topk_natural"}}, json{{"kind", "onebit"}}}) {
    auto a = make(object);
    a->encode(g);
    a->encode(g * 0.5);
    const Bytes state = a->save_state();
    auto b = make(object);
    b->load_state(state);
    const auto g2 = random_gradient(600, 17);
    EXPECT_EQ(a->encode(g2), b->encode(g2)) << object.dump();
    auto c = make(object);
    Bytes corrupt = state;
    if (!corrupt.empty()) {
      corrupt[0] ^= 0xff;
      EXPECT_THROW(c->load_state(corrupt), DecodeError) << object.dump();
    }
  }
  EXPECT_TRUE(make({{"kind", "signsgd"}})->save_state().empty());
  EXPECT_TRUE(make({{"kind", "fp16"}})->save_state().empty());
}

// ------------------------------------------------------------------------------------------
// Unbiasedness and variance

// For each unbiased quantiser: the mean of N independent encodings of a fixed vector v is
// within 5 standard errors of v in every coordinate. Stochastic rounding between two levels
// a <= v_i <= b has variance (b - v_i)(v_i - a) <= (b - a)^2 / 4, so the standard error of
// the mean is at most (b - a) / (2 sqrt(N)), with (b - a) bounded per scheme below. With 256
// coordinates x 6 codecs, a 5-sigma excursion anywhere has probability < 1e-3 for a fair
// quantiser (and the seeds are fixed, so the test is deterministic).
TEST(Unbiased, MeanOfManyEncodingsConvergesToTheInput) {
  const int kSamples = 4000;
  const std::int64_t d = 256;
  const auto v = random_gradient(d, 10) * 0.1;
  const float l2 = v.norm().item<float>();
  const float linf = v.abs().max().item<float>();
  struct Case {
    json object;
    std::function<torch::Tensor()> step;  // an upper bound on (b - a) per coordinate
  };
  const std::vector<Case> cases = {
      {{{"kind", "qsgd"}, {"levels", 3}, {"bucket", 0}}, [&] { return torch::full({d}, l2 / 3); }},
      {{{"kind", "natural"}}, [&] { return v.abs(); }},
      {{{"kind", "natural_dithering"}, {"levels", 4}, {"bucket", 0}},
       [&] { return torch::clamp_min(v.abs(), l2 / 8); }},
      {{{"kind", "natural_dithering"}, {"levels", 3}, {"bucket", 0}, {"norm", "linf"}},
       [&] { return torch::clamp_min(v.abs(), linf / 4); }},
      // TernGrad without clipping: unbiased for g itself, step = s = max|g|.
      {{{"kind", "terngrad"}, {"clip", 0}}, [&] { return torch::full({d}, linf); }},
      // Shared scale above every |g|: unbiased, step = S.
      {{{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.5}},
       [&] { return torch::full({d}, 0.5f); }},
  };
  for (const auto& c : cases) {
    auto codec = make(c.object);
    auto sum = torch::zeros({d}, torch::kDouble);
    for (int i = 0; i < kSamples; ++i) sum += codec->decode(codec->encode(v)).to(torch::kDouble);
    const auto mean = sum / kSamples;
    const auto bound = c.step().to(torch::kDouble) * (5.0 / (2.0 * std::sqrt(double(kSamples)))) + 1e-6;
    const auto err = (mean - v.to(torch::kDouble)).abs();
    EXPECT_TRUE((err <= bound).all().item<bool>())
        << c.object.dump() << ": worst error / bound = " << (err / bound).max().item<double>();
  }
}

// QSGD (Lemma 3.1): E||Q(v) - v||^2 <= min(d / s^2, sqrt(d) / s) ||v||^2 per bucket of d.
// The empirical mean over 2000 encodings must stay within the bound; vectors with equal
// magnitudes (the worst case for the rounding) and Gaussian ones, several s.
TEST(Unbiased, QsgdVarianceStaysWithinTheBound) {
  const int kSamples = 2000;
  for (std::int64_t d : {16, 512}) {
    for (std::uint32_t s : {1u, 2u, 7u, 31u}) {
      for (int kind = 0; kind < 2; ++kind) {
        const auto v = kind == 0 ? torch::full({d}, 0.3f) * torch::randn({d}).sign() : random_gradient(d, 11);
        auto codec = make({{"kind", "qsgd"}, {"levels", s}, {"bucket", d}});
        double total = 0;
        for (int i = 0; i < kSamples; ++i) total += (codec->decode(codec->encode(v)) - v).pow(2).sum().item<double>();
        const double variance = total / kSamples;
        const double dd = static_cast<double>(d);
        const double bound = std::min(dd / (s * s), std::sqrt(dd) / s) * v.pow(2).sum().item<double>();
        EXPECT_LE(variance, bound) << "d=" << d << " s=" << s << " kind=" << kind;
        EXPECT_GT(variance, 0.0);
      }
    }
  }
}

// Natural compression's second moment: E|C(x)|^2 <= 9/8 |x|^2 (Horvath et al., Theorem 1).
TEST(Unbiased, NaturalCompressionSecondMomentIsAtMostNineEighths) {
  const auto v = random_gradient(4096, 12);
  auto codec = make({{"kind", "natural"}});
  double total = 0;
  for (int i = 0; i < 500; ++i) total += codec->decode(codec->encode(v)).pow(2).sum().item<double>();
  EXPECT_LE(total / 500, 9.0 / 8.0 * v.pow(2).sum().item<double>());
}

// ------------------------------------------------------------------------------------------
// Aggregation semantics

TEST(Aggregation, MajorityVoteIsTheSignOfTheSumOfSigns) {
  auto codec = make({{"kind", "signsgd"}});
  EXPECT_EQ(codec->traits().aggregation, Aggregation::kDecodeThenSum);
  EXPECT_TRUE(codec->traits().applies_momentum);
  // Three workers: element 0 votes +,+,- -> +; element 1 -,-,+ -> -; element 2 +,-,- -> -.
  const std::vector<torch::Tensor> grads = {torch::tensor({1.0f, -2.0f, 5.0f, 0.0f}),
                                            torch::tensor({0.1f, -0.1f, -1.0f, 1.0f}),
                                            torch::tensor({-100.0f, 100.0f, -1.0f, -1.0f})};
  auto sum = torch::zeros({4});
  for (const auto& g : grads) sum += codec->decode(codec->encode(g));
  EXPECT_TRUE(torch::equal(codec->finalize(sum, 3), torch::tensor({1.0f, -1.0f, -1.0f, 1.0f})));
  // A 2-2 tie among four workers gives 0 (no move).
  EXPECT_TRUE(torch::equal(codec->finalize(torch::tensor({0.0f, 2.0f}), 4), torch::tensor({0.0f, 1.0f})));
}

TEST(Aggregation, SignumVotesOnItsMomentum) {
  auto codec = make({{"kind", "signum"}, {"momentum", 0.9}});
  EXPECT_TRUE(codec->traits().applies_momentum);
  // Momentum m = 0.1 g1 = 0.1 * (1, -1); then m = 0.09 * (1, -1) + 0.1 * (-0.5, -0.5)
  // = (0.04, -0.14): the first element keeps its sign although g2 is negative.
  EXPECT_TRUE(torch::equal(codec->decode(codec->encode(torch::tensor({1.0f, -1.0f}))), torch::tensor({1.0f, -1.0f})));
  EXPECT_TRUE(torch::equal(codec->decode(codec->encode(torch::tensor({-0.5f, -0.5f}))), torch::tensor({1.0f, -1.0f})));
  EXPECT_THROW(codec->encode(torch::zeros({3})), std::invalid_argument);
}

TEST(Signum, MomentumStartsAtZeroAsInThePapers) {
  // m_0 = 0 (ICLR 2019 Algorithm 1: "initial momentum v_m <- 0"), beta = 0.9.
  auto codec = make({{"kind", "signum"}, {"momentum", 0.9}});
  const auto g1 = torch::tensor({1.0f, -1.0f, 1.0f, -0.0f});
  const auto g2 = torch::tensor({-1.5f, 1.5f, -0.5f, 2.0f});
  // Step 1: m = 0.1 g1, which has g1's signs (-0.0 + +0 is +0, sent as +1).
  auto vote = [&](const torch::Tensor& g) { return codec->decode(codec->encode(g)); };
  EXPECT_TRUE(torch::equal(vote(g1), torch::tensor({1.0f, -1.0f, 1.0f, 1.0f})));
  const torch::Tensor m1 = CodecState::parse(codec->save_state(), "signum").tensor("momentum");
  EXPECT_TRUE(torch::allclose(m1, g1 * 0.1, 1e-6, 0.0)) << m1;
  // Step 2: m = 0.09 g1 + 0.1 g2 = (-0.06, 0.06, 0.04, 0.2). A buffer started at g1 (PyTorch
  // SGD's convention) would hold 0.9 g1 + 0.1 g2 = (0.75, -0.75, 0.85, 0.2) and vote + - + +.
  EXPECT_TRUE(torch::equal(vote(g2), torch::tensor({-1.0f, 1.0f, 1.0f, 1.0f})));
  // A fresh state (load_state of nothing) starts from zero again.
  codec->load_state(ByteSpan{});
  EXPECT_TRUE(torch::equal(vote(g2), torch::tensor({-1.0f, 1.0f, -1.0f, 1.0f})));
}

TEST(Signum, HelpStatesTheInitialMomentum) {
  const CodecInfo* info = CodecRegistry::builtin().find("signum");
  ASSERT_NE(info, nullptr);
  EXPECT_NE(info->summary.find("m_0 = 0"), std::string::npos) << info->summary;
  ASSERT_EQ(info->params.size(), 1u);
  EXPECT_NE(info->params[0].help.find("m_0 = 0"), std::string::npos) << info->params[0].help;
}

TEST(Aggregation, ScalerSharedTernGradSumsCodesInTheCompressedDomain) {
  const json object = {{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.05}};
  const std::int64_t n = 1003;
  const int workers = 9;  // crosses the 2 -> 4 -> 8-bit widenings
  std::vector<std::unique_ptr<Codec>> codecs;
  std::vector<Bytes> payloads;
  auto expected = torch::zeros({n});
  for (int r = 0; r < workers; ++r) {
    codecs.push_back(make(object, context(r, n)));
    payloads.push_back(codecs.back()->encode(random_gradient(n, 20 + r, 0.03)));
    expected += codecs.back()->decode(payloads.back());
  }
  EXPECT_EQ(codecs[0]->traits().aggregation, Aggregation::kSummable);
  Bytes acc = payloads[0];
  for (int r = 1; r < workers; ++r) {
    codecs[0]->accumulate(acc, payloads[r]);
    // 1 + 4 + 4 + 1 + 4 + 4 header/table bytes: widths 4 bits (<= 7 contributors), 8 above.
    const unsigned width = r + 1 <= 7 ? 4 : 8;
    EXPECT_EQ(acc.size(), TernGradCodec::payload_size(n, 1, r + 1)) << r;
    EXPECT_EQ(acc.size(), 12 + 9 + 12 + (n * width + 7) / 8) << r;
  }
  const auto sum = codecs[0]->decode(acc);
  EXPECT_TRUE(torch::allclose(sum, expected, 0, 1e-6));
  // Every value is S times an integer in [-workers, workers].
  const auto q = sum / 0.05f;
  EXPECT_LT((q - q.round()).abs().max().item<float>(), 1e-4);
  EXPECT_LE(q.abs().max().item<float>(), workers + 1e-4);
  // The default mean finalize.
  EXPECT_TRUE(torch::allclose(codecs[0]->finalize(sum.clone(), workers), expected / workers, 0, 1e-6));

  // Ring chunks: encode_chunks gives one payload per chunk that adds chunk-wise.
  const std::vector<std::int64_t> bounds = {0, 250, 251, 700, n};
  auto c0 = codecs[0]->encode_chunks(random_gradient(n, 40, 0.03), bounds);
  const auto c1 = codecs[1]->encode_chunks(random_gradient(n, 41, 0.03), bounds);
  for (std::size_t i = 0; i < c0.size(); ++i) {
    const auto want = codecs[0]->decode(c0[i]) + codecs[1]->decode(c1[i]);
    codecs[0]->accumulate(c0[i], c1[i]);
    EXPECT_TRUE(torch::allclose(codecs[0]->decode(c0[i]), want, 0, 1e-6));
  }
}

TEST(Aggregation, TernGradRefusesToAddPayloadsWithDifferentScales) {
  auto a = make({{"kind", "terngrad"}}, context(0));
  auto b = make({{"kind", "terngrad"}}, context(1));
  EXPECT_EQ(a->traits().aggregation, Aggregation::kDecodeThenSum);
  Bytes pa = a->encode(random_gradient(100, 1));
  EXPECT_THROW(a->accumulate(pa, b->encode(random_gradient(100, 2))), DecodeError);
  auto s1 = make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.1}});
  auto s2 = make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.2}});
  Bytes p1 = s1->encode(random_gradient(100, 1));
  EXPECT_THROW(s1->accumulate(p1, s2->encode(random_gradient(100, 2))), DecodeError);
}

// Scaler sharing as in the paper: the workers agree on the per-layer maximum scale in an
// extra round, then their codes (all with that scale) add in the compressed domain.
std::vector<std::unique_ptr<Codec>> max_scale_workers(int workers, const std::vector<LayerSlice>& layers,
                                                      std::int64_t n, double clip = 2.5) {
  std::vector<std::unique_ptr<Codec>> codecs;
  for (int r = 0; r < workers; ++r) {
    CodecContext ctx = context(r, n, layers);
    ctx.workers = workers;
    codecs.push_back(make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"clip", clip}}, ctx));
  }
  return codecs;
}

std::vector<MultiRoundCodec*> multi(const std::vector<std::unique_ptr<Codec>>& codecs) {
  std::vector<MultiRoundCodec*> out;
  for (const auto& c : codecs) out.push_back(dynamic_cast<MultiRoundCodec*>(c.get()));
  return out;
}

/// The scales a terngrad payload states, in segment order (table after the 21-byte prefix).
std::vector<float> payload_scales(const Bytes& p) {
  const std::uint32_t count = load_u32_le(p.data() + 17);
  std::vector<float> out;
  for (std::uint32_t s = 0; s < count; ++s) out.push_back(load_f32_le(p.data() + 21 + 12 * s + 8));
  return out;
}

TEST(Aggregation, TernGradAgreesOnTheMaximumScaleInAnExtraRound) {
  const auto layers = small_layout();
  const std::int64_t n = 406;
  const int workers = 5;
  auto codecs = max_scale_workers(workers, layers, n);
  const auto ptrs = multi(codecs);
  for (auto* p : ptrs) ASSERT_NE(p, nullptr);
  EXPECT_EQ(codecs[0]->traits().aggregation, Aggregation::kDecodeThenSum);  // the single-payload form
  std::vector<torch::Tensor> grads;
  // Different magnitudes per worker and layer, so the maximum comes from different workers.
  for (int r = 0; r < workers; ++r) {
    auto g = random_gradient(n, 60 + r, 0.01);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      g.narrow(0, layers[l].offset, layers[l].numel()).mul_(1.0 + double((r + 2 * l) % workers));
    }
    grads.push_back(g);
  }
  const auto trace = testing::run_exchange(ptrs, grads);
  ASSERT_EQ(trace.rounds.size(), 2u);
  EXPECT_EQ(trace.rounds[0].op, RoundOp::kReduce);
  EXPECT_EQ(trace.rounds[1].op, RoundOp::kReduce);

  // Round 0 carries only the scale table: 21 + 12 bytes per layer.
  for (int r = 0; r < workers; ++r) {
    EXPECT_EQ(trace.rounds[0].sizes[r], static_cast<std::int64_t>(TernGradCodec::proposal_size(layers.size())));
    EXPECT_EQ(trace.rounds[1].sizes[r], static_cast<std::int64_t>(TernGradCodec::payload_size(n, layers.size(), 1)));
  }
  // The agreed scale of each layer is the maximum over workers of max|clip(g)|, with clip at
  // 2.5 standard deviations (computed here independently, in double).
  for (std::size_t l = 0; l < layers.size(); ++l) {
    double expected = 0;
    for (int r = 0; r < workers; ++r) {
      const auto seg = grads[r].narrow(0, layers[l].offset, layers[l].numel()).to(torch::kDouble);
      const double sigma = std::sqrt((seg.pow(2).mean() - seg.mean().pow(2)).item<double>());
      expected = std::max(expected, std::min(seg.abs().max().item<double>(), 2.5 * sigma));
    }
    for (int r = 0; r < workers; ++r) {
      const float agreed = payload_scales(trace.rounds[1].payloads[r])[l];
      EXPECT_NEAR(agreed, expected, 1e-6 * expected) << "layer " << l << " worker " << r;
      // Bit-identical on every worker (else the payloads would not add).
      EXPECT_EQ(agreed, payload_scales(trace.rounds[1].payloads[0])[l]);
    }
  }
  // The result is the mean of the workers' ternarised gradients, on every worker; each
  // worker's payload decodes to multiples of its layer's agreed scale.
  auto sum = torch::zeros({n});
  for (int r = 0; r < workers; ++r) {
    const auto decoded = codecs[0]->decode(trace.rounds[1].payloads[r]);
    const auto scales = payload_scales(trace.rounds[1].payloads[r]);
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const auto q = decoded.narrow(0, layers[l].offset, layers[l].numel()) / scales[l];
      EXPECT_TRUE(torch::equal(q, q.round().clamp(-1, 1))) << "worker " << r << " layer " << l;
    }
    sum += decoded;
  }
  for (int r = 0; r < workers; ++r) {
    EXPECT_TRUE(torch::allclose(trace.results[r], sum / workers, 0, 1e-7)) << r;
    EXPECT_TRUE(torch::equal(trace.results[r], trace.results[0])) << r;
  }
  // The compressed-domain sum is what reduce_round returns.
  std::vector<ByteSpan> spans(trace.rounds[1].payloads.begin(), trace.rounds[1].payloads.end());
  EXPECT_TRUE(torch::allclose(ptrs[0]->reduce_round(1, spans), sum, 0, 1e-6));

  // Parameter-server form: the server's instance reduces; the workers get the same mean.
  auto fresh = max_scale_workers(workers, layers, n);
  CodecContext server_ctx = context(-1, n, layers);
  server_ctx.workers = workers;
  auto server = make({{"kind", "terngrad"}, {"scaler_sharing", true}}, server_ctx);
  const auto ps = testing::run_exchange(multi(fresh), grads, dynamic_cast<MultiRoundCodec*>(server.get()));
  for (int r = 0; r < workers; ++r) EXPECT_TRUE(torch::equal(ps.results[r], ps.results[0]));
  EXPECT_EQ(ps.rounds[1].payloads, trace.rounds[1].payloads);  // same seeds, same codes
}

TEST(Aggregation, TernGradWithAgreedScalesIsUnbiased) {
  // Without clipping, every code is unbiased for g at any scale >= max|g|, so the mean of many
  // exchanges converges to the mean gradient (bound as in MeanOfManyEncodingsConverges...:
  // each worker's rounding has variance <= S^2 / 4).
  const std::int64_t d = 128;
  const int workers = 3, samples = 3000;
  auto codecs = max_scale_workers(workers, {}, d, 0.0);
  const auto ptrs = multi(codecs);
  std::vector<torch::Tensor> grads;
  for (int r = 0; r < workers; ++r) grads.push_back(random_gradient(d, 70 + r, 0.1 * (r + 1)));
  const auto want = (grads[0] + grads[1] + grads[2]).to(torch::kDouble) / workers;
  double scale = 0;
  for (const auto& g : grads) scale = std::max(scale, g.abs().max().item<double>());
  auto total = torch::zeros({d}, torch::kDouble);
  for (int i = 0; i < samples; ++i) total += testing::run_exchange(ptrs, grads).results[0].to(torch::kDouble);
  const double bound = scale * 5.0 / (2.0 * std::sqrt(double(samples) * workers)) + 1e-7;
  EXPECT_LT((total / samples - want).abs().max().item<double>(), bound);
}

TEST(Aggregation, TernGradScaleAgreementRejectsBadInputs) {
  // Wrappers would hide the rounds from the collectives.
  EXPECT_THROW(make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"error_feedback", true}}), ConfigError);
  EXPECT_THROW(make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"zstd", true}}), ConfigError);
  // The configured form is still single-round and summable.
  auto configured = make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.1}});
  EXPECT_EQ(dynamic_cast<MultiRoundCodec*>(configured.get()), nullptr);
  EXPECT_EQ(configured->traits().aggregation, Aggregation::kSummable);

  const auto layers = small_layout();
  auto codecs = max_scale_workers(2, layers, 406);
  const auto ptrs = multi(codecs);
  const Bytes a = ptrs[0]->begin_exchange(random_gradient(406, 1)).payload;
  const Bytes b = ptrs[1]->begin_exchange(random_gradient(406, 2)).payload;
  EXPECT_NO_THROW(ptrs[0]->reduce_round(0, {ByteSpan(a), ByteSpan(b)}));
  // A proposal is not a gradient payload, and vice versa.
  EXPECT_THROW(codecs[0]->decode(a), DecodeError);
  const Bytes codes = codecs[0]->encode(random_gradient(406, 3));
  EXPECT_THROW(ptrs[0]->reduce_round(0, {ByteSpan(a), ByteSpan(codes)}), DecodeError);
  // Every truncation, and a table that differs between workers.
  for (std::size_t len = 0; len < a.size(); ++len) {
    EXPECT_THROW(ptrs[0]->reduce_round(0, {ByteSpan(a.data(), len), ByteSpan(b)}), DecodeError) << len;
  }
  auto other = make({{"kind", "terngrad"}, {"scaler_sharing", true}}, context(1, 406));  // no layout
  const Bytes c = dynamic_cast<MultiRoundCodec*>(other.get())->begin_exchange(random_gradient(406, 4)).payload;
  EXPECT_THROW(ptrs[0]->reduce_round(0, {ByteSpan(a), ByteSpan(c)}), DecodeError);
  // Round-1 payloads with different scales do not add.
  EXPECT_THROW(ptrs[0]->reduce_round(1, {ByteSpan(codes), ByteSpan(codecs[1]->encode(random_gradient(406, 5)))}),
               DecodeError);
}

TEST(Aggregation, SummabilityIsDeclaredPerCodec) {
  for (const char* kind : kAllQuantizers) {
    const auto codec = make({{"kind", kind}});
    const bool summable = std::string(kind) == "fp16" || std::string(kind) == "bf16";
    EXPECT_EQ(codec->traits().aggregation == Aggregation::kSummable, summable) << kind;
    EXPECT_EQ(codec->name(), kind);
  }
}

// ------------------------------------------------------------------------------------------
// Error feedback is part of 1-bit SGD, EF-signSGD and top-k + natural dithering

TEST(ErrorFeedbackMethods, AlwaysHaveExactlyOneResidual) {
  for (const char* kind : {"onebit", "efsignsgd", "topk_natural"}) {
    for (bool flag : {false, true}) {
      auto codec = make({{"kind", kind}, {"error_feedback", flag}});
      const auto* ef = dynamic_cast<const ErrorFeedback*>(codec.get());
      ASSERT_NE(ef, nullptr) << kind;
      EXPECT_EQ(dynamic_cast<const ErrorFeedback*>(&ef->inner()), nullptr) << kind;
    }
  }
  for (const char* kind : {"qsgd", "signsgd", "fp16"}) {
    EXPECT_EQ(dynamic_cast<const ErrorFeedback*>(make({{"kind", kind}}).get()), nullptr);
  }
}

TEST(ErrorFeedbackMethods, NothingIsLost) {
  // sum of decoded outputs + residual == sum of inputs, for each EF method.
  for (const char* kind : {"onebit", "efsignsgd", "topk_natural"}) {
    json object = {{"kind", kind}};
    if (std::string(kind) == "topk_natural") object["ratio"] = 0.05;
    auto codec = make(object);
    auto in = torch::zeros({500});
    auto out = torch::zeros({500});
    for (int step = 0; step < 30; ++step) {
      const auto g = random_gradient(500, 100 + step);
      in += g;
      out += codec->decode(codec->encode(g));
    }
    const auto& residual = dynamic_cast<const ErrorFeedback&>(*codec).residual();
    EXPECT_TRUE(torch::allclose(out + residual, in, 1e-4, 1e-3)) << kind;
  }
}

// ------------------------------------------------------------------------------------------
// Compose

TEST(Compose, AnySelectionWithAnyValueQuantiser) {
  const auto g = random_gradient(3000, 13);
  for (const json& quantize : {json{{"kind", "fp16"}}, json{{"kind", "qsgd"}, {"bucket", 0}},
                               json{{"kind", "natural"}}, json{{"kind", "none"}}}) {
    auto codec = make({{"kind", "compose"}, {"select", {{"kind", "topk"}, {"ratio", 0.02}}}, {"quantize", quantize}});
    const auto d = codec->decode(codec->encode(g));
    // Exactly the top-k positions carry values.
    const auto top = std::get<1>(g.abs().topk(60));
    auto mask = torch::zeros({3000}, torch::kBool);
    mask.index_put_({top}, true);
    EXPECT_EQ((d != 0).logical_and(mask.logical_not()).sum().item<int64_t>(), 0) << quantize.dump();
    if (quantize["kind"] == "none") {
      EXPECT_TRUE(torch::equal(d, torch::where(mask, g, torch::zeros_like(g))));
    }
    if (quantize["kind"] == "fp16") {
      EXPECT_TRUE(torch::equal(d, torch::where(mask, g.to(torch::kHalf).to(torch::kFloat), torch::zeros_like(g))));
    }
  }
}

TEST(Compose, WorksWithTheOtherRegisteredSparsifiers) {
  // Whatever sparsifiers the registry holds: their selection
  // goes through natural dithering and decodes to a tensor carrying values only where the
  // selection decoded to non-zeros.
  const std::int64_t n = 406;
  int tried = 0;
  for (const char* select : {"topk", "randomk", "dgc", "gradient_dropping", "sdagc", "adacomp"}) {
    if (CodecRegistry::builtin().find(select) == nullptr) continue;
    ++tried;
    auto codec = make({{"kind", "compose"}, {"select", {{"kind", select}}}, {"error_feedback", true}},
                      context(0, n, small_layout()));
    for (int step = 0; step < 5; ++step) {
      const auto g = random_gradient(n, 300 + step);
      const Bytes p = codec->encode(g);
      const auto d = codec->decode(p);
      ASSERT_EQ(d.numel(), n) << select;
      EXPECT_TRUE(torch::isfinite(d).all().item<bool>()) << select;
      EXPECT_GT(codec->last_density(), 0.0) << select;
      EXPECT_LE(codec->last_density(), 1.0) << select;
    }
  }
  EXPECT_GE(tried, 1);
}

TEST(Compose, RegistryResolvesNestedObjectsWithPaths) {
  const auto& reg = CodecRegistry::builtin();
  const json r = reg.resolve(json{{"kind", "compose"}}, "codec");
  EXPECT_EQ(r["select"]["kind"], "topk");
  EXPECT_EQ(r["select"]["ratio"], 0.01);
  EXPECT_EQ(r["select"]["error_feedback"], false);
  EXPECT_EQ(r["quantize"]["kind"], "natural_dithering");
  EXPECT_EQ(r["quantize"]["levels"], 8);
  try {
    reg.resolve(json{{"kind", "compose"}, {"select", {{"kind", "topk"}, {"ratio", 2}}}}, "codec");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "codec.select.ratio");
  }
  try {
    reg.resolve(json{{"kind", "compose"}, {"quantize", "fp16"}}, "codec");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "codec.quantize");
  }
  try {
    make({{"kind", "compose"}, {"quantize", {{"kind", "qsgd"}, {"error_feedback", true}}}});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "codec.quantize.error_feedback");
  }
}

// ------------------------------------------------------------------------------------------
// Large tensors are split over LibTorch's threads: the bytes must not depend on how many.

TEST(Threads, LargeTensorsEncodeTheSameOnAnyThreadCount) {
  // Layers of awkward sizes (starts mid-byte for 2-bit and 1-bit codes), two of them large
  // enough to be split.
  const std::vector<LayerSlice> layers = layout_of({{3}, {1001, 301}, {7}, {299999}, {5, 13}});
  const std::int64_t n = layers.back().offset + layers.back().numel();
  const auto g = random_gradient(n, 31, 0.01);
  const int saved = at::get_num_threads();
  for (const json& object : {json{{"kind", "qsgd"}}, json{{"kind", "qsgd"}, {"bucket", 0}},
                             json{{"kind", "qsgd"}, {"bucket", 1001}, {"levels", 5}},
                             json{{"kind", "natural_dithering"}}, json{{"kind", "natural"}},
                             json{{"kind", "terngrad"}},
                             json{{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.02}},
                             json{{"kind", "onebit"}}, json{{"kind", "onebit"}, {"granularity", "tensor"}},
                             json{{"kind", "efsignsgd"}}, json{{"kind", "signsgd"}}, json{{"kind", "signum"}}}) {
    std::vector<Bytes> payloads;
    for (int threads : {1, 2, 3}) {
      at::set_num_threads(threads);
      auto codec = make(object, context(0, n, layers));
      Bytes p = codec->encode(g);
      p = codec->encode(g * 0.5);  // a second step (momentum, residual, dither stream)
      payloads.push_back(p);
      EXPECT_NO_THROW(codec->decode(p)) << object.dump();
    }
    EXPECT_EQ(payloads[0], payloads[1]) << object.dump();
    EXPECT_EQ(payloads[0], payloads[2]) << object.dump();
  }
  at::set_num_threads(saved);
}

// ------------------------------------------------------------------------------------------
// Corrupt payloads: every truncation is rejected, and thousands of random corruptions of valid
// payloads give DecodeError or a well-formed tensor -- never a crash or another exception.

std::unique_ptr<Codec> make_for_corruption(const char* kind) {
  const auto layers = small_layout();
  if (std::string(kind) == "terngrad_shared") {
    return make({{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 0.5}}, context(0, 406, layers));
  }
  if (std::string(kind) == "compose") {
    return make({{"kind", "compose"}, {"select", {{"kind", "topk"}, {"ratio", 0.1}}}}, context(0, 406, layers));
  }
  return make({{"kind", kind}}, context(0, 406, layers));
}

TEST(CorruptPayloads, EveryTruncationAndExtensionIsRejected) {
  const auto g = random_gradient(406, 14);
  for (const char* kind : {"qsgd", "natural_dithering", "natural", "terngrad", "terngrad_shared", "onebit",
                           "signsgd", "efsignsgd", "fp16", "bf16", "compose", "topk_natural"}) {
    auto codec = make_for_corruption(kind);
    const Bytes p = codec->encode(g);
    for (std::size_t len = 0; len < p.size(); ++len) {
      EXPECT_THROW(codec->decode(ByteSpan(p.data(), len)), DecodeError) << kind << " len " << len;
    }
    Bytes longer = p;
    longer.push_back(0);
    EXPECT_THROW(codec->decode(longer), DecodeError) << kind;
    EXPECT_NO_THROW(codec->decode(p)) << kind;
  }
}

TEST(CorruptPayloads, RandomCorruptionsNeverCrash) {
  const auto g = random_gradient(406, 15);
  std::mt19937_64 rng(99);
  int rejected = 0, decoded = 0;
  for (const char* kind : {"qsgd", "natural_dithering", "natural", "terngrad", "terngrad_shared", "onebit",
                           "signsgd", "efsignsgd", "fp16", "bf16", "compose", "topk_natural"}) {
    auto codec = make_for_corruption(kind);
    const Bytes valid = codec->encode(g);
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes p = valid;
      const int mode = trial % 4;
      if (mode == 0) {  // flip 1-4 random bits anywhere
        for (int f = 0, flips = 1 + rng() % 4; f < flips; ++f) p[rng() % p.size()] ^= 1u << (rng() % 8);
      } else if (mode == 1) {  // random bytes in the first 48 (header, tables, counts)
        for (int f = 0, flips = 1 + rng() % 3; f < flips; ++f) p[rng() % std::min<std::size_t>(48, p.size())] = rng();
      } else if (mode == 2) {  // truncate or extend, then flip
        p.resize(rng() % (p.size() + 16), static_cast<std::uint8_t>(rng()));
        if (!p.empty()) p[rng() % p.size()] ^= 0xff;
      } else {  // overwrite a random 4-byte window with an extreme value
        const std::uint32_t values[] = {0, 1, 0xffffffffu, 0x7fffffffu, 0x80000000u, 406, 407};
        if (p.size() >= 4) store_u32_le(p.data() + rng() % (p.size() - 3), values[rng() % 7]);
      }
      try {
        const auto d = codec->decode(p);
        ASSERT_EQ(d.dim(), 1);
        ASSERT_EQ(d.scalar_type(), torch::kFloat);
        ++decoded;
      } catch (const DecodeError&) {
        ++rejected;
      }
      if (codec->traits().aggregation == Aggregation::kSummable) {
        Bytes acc = valid;
        try {
          codec->accumulate(acc, p);
        } catch (const DecodeError&) {
        }
      }
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(decoded, 100);  // flips in value bytes are legitimately decodable
}

// ------------------------------------------------------------------------------------------
// A short distributed optimisation through each codec: 4 workers with independent noisy
// gradients of f(x) = 1/2 ||x - c||^2 (the i.i.d. setting the sign methods' majority vote
// assumes; with different optima per worker the vote finds a coordinate-wise median instead);
// the aggregate is finalize(sum of decoded payloads), as the collectives compute it. Every
// method must end within 10% of the starting distance.

TEST(Training, EveryQuantiserConvergesOnADistributedQuadratic) {
  const std::int64_t d = 200;
  const int workers = 4;
  const auto optimum = random_gradient(d, 200);
  for (const char* kind : kAllQuantizers) {
    const bool sign = std::string(kind) == "signsgd" || std::string(kind) == "signum";
    json object = {{"kind", kind}};
    if (std::string(kind) == "compose" || std::string(kind) == "topk_natural") {
      object = {{"kind", kind}, {"error_feedback", true}};
      if (std::string(kind) == "compose") object["select"] = {{"kind", "topk"}, {"ratio", 0.1}};
      else object["ratio"] = 0.1;
    }
    std::vector<std::unique_ptr<Codec>> codecs;
    for (int w = 0; w < workers; ++w) codecs.push_back(make(object, context(w, d)));
    auto x = torch::zeros({d});
    const double start = (x - optimum).norm().item<double>();
    at::manual_seed(5);
    for (int step = 0; step < 300; ++step) {
      auto sum = torch::zeros({d});
      for (int w = 0; w < workers; ++w) {
        const auto g = x - optimum + 0.3 * torch::randn({d});
        sum += codecs[w]->decode(codecs[w]->encode(g));
      }
      const auto update = codecs[0]->finalize(sum, workers);
      const double lr = (sign ? 0.05 : 0.2) * std::pow(0.99, step);
      x -= lr * update;
    }
    const double end = (x - optimum).norm().item<double>();
    EXPECT_LT(end, 0.1 * start) << kind << ": distance " << start << " -> " << end;
  }
}

}  // namespace
}  // namespace gradwire
