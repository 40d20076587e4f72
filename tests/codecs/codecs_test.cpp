// Behaviour of the gradient codecs: wire formats, error feedback, corrupt-payload handling,
// the registry's validation and the server's exact downlink encoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <torch/types.h>
#include <torch/utils.h>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/CodecState.h"
#include "codecs/DenseCodec.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/ExactEncoding.h"
#include "codecs/RatioCounts.h"
#include "codecs/ZstdStage.h"
#include "codecs/quantize/HalfPrecisionCodec.h"
#include "codecs/quantize/SignCodec.h"
#include "codecs/sparsify/DgcCodec.h"
#include "codecs/sparsify/RandomKCodec.h"
#include "codecs/sparsify/TopKCodec.h"
#include "codecs/wire/WireFormat.h"
#include "common/ConfigError.h"
#include "AwkwardGradient.h"

namespace gradwire {
namespace {

using nlohmann::json;

torch::Tensor random_gradient(std::int64_t n, std::uint64_t seed) {
  at::manual_seed(seed);
  return torch::randn({n}, torch::kFloat);
}

/// Bitwise equality (NaN-safe, distinguishes -0.0 from +0.0).
bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.numel() != b.numel() || a.scalar_type() != b.scalar_type()) return false;
  const auto ac = a.contiguous();
  const auto bc = b.contiguous();
  return std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.numel() * ac.element_size()) == 0;
}

std::uint64_t header_numel(const Bytes& payload) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | payload[4 + i];
  return n;
}

void put_u32(Bytes& payload, std::size_t offset, std::uint32_t v) {
  store_u32_le(payload.data() + offset, v);
}

// ------------------------------------------------------------------------------------------
// Wire format helpers

TEST(WireFormat, WriterIsLittleEndianAndReaderRoundTrips) {
  ByteWriter w;
  w.u8(0xAB);
  w.u16(0x1234);
  w.u32(0xDEADBEEF);
  w.u64(0x0102030405060708ULL);
  w.f32(1.5f);
  const Bytes b = w.take();
  ASSERT_EQ(b.size(), 1u + 2 + 4 + 8 + 4);
  EXPECT_EQ(b[1], 0x34);
  EXPECT_EQ(b[2], 0x12);
  EXPECT_EQ(b[3], 0xEF);
  EXPECT_EQ(b[7], 0x08);
  ByteReader r(b, "test payload");
  EXPECT_EQ(r.u8("a"), 0xAB);
  EXPECT_EQ(r.u16("b"), 0x1234);
  EXPECT_EQ(r.u32("c"), 0xDEADBEEFu);
  EXPECT_EQ(r.u64("d"), 0x0102030405060708ULL);
  EXPECT_EQ(r.f32("e"), 1.5f);
  r.expect_end();
}

TEST(WireFormat, TruncationMessageNamesFieldOffsetAndShortfall) {
  const Bytes b(15, 0);
  ByteReader r(b, "topk payload");
  r.take(12, 1, "header");
  try {
    r.u32("k");
    FAIL() << "expected DecodeError";
  } catch (const DecodeError& e) {
    EXPECT_STREQ(e.what(), "topk payload truncated: need 4 bytes for k at offset 12, 3 left");
  }
}

TEST(WireFormat, TakeDoesNotOverflowOnHugeCounts) {
  const Bytes b(16, 0);
  ByteReader r(b, "p");
  EXPECT_THROW(r.take(std::numeric_limits<std::size_t>::max() / 2, 4, "values"), DecodeError);
}

TEST(WireFormat, HeaderRejectsHugeElementCounts) {
  ByteWriter w;
  write_header(w, CodecId::kDense, 1, (std::uint64_t{1} << 40) + 1);
  const Bytes b = w.take();
  ByteReader r(b, "none payload");
  EXPECT_THROW(read_header(r, CodecId::kDense, "none"), DecodeError);
}

// ------------------------------------------------------------------------------------------
// Dense

TEST(DenseCodec, RoundTripIsBitExact) {
  DenseCodec codec;
  torch::Tensor g = random_gradient(1000, 1);
  g[3] = -0.0f;
  g[4] = std::numeric_limits<float>::infinity();
  g[5] = std::numeric_limits<float>::quiet_NaN();
  const Bytes payload = codec.encode(g);
  EXPECT_EQ(payload.size(), 12u + 4 * 1000);
  EXPECT_EQ(payload[0], 0x47);
  EXPECT_EQ(payload[1], static_cast<std::uint8_t>(CodecId::kDense));
  EXPECT_EQ(payload[2], DenseCodec::kFormatVersion);
  EXPECT_EQ(payload[3], 0);
  EXPECT_EQ(header_numel(payload), 1000u);
  EXPECT_TRUE(bitwise_equal(codec.decode(payload), g));
  EXPECT_EQ(codec.traits().aggregation, Aggregation::kSummable);
}

TEST(DenseCodec, EmptyGradientRoundTrips) {
  DenseCodec codec;
  const Bytes payload = codec.encode(torch::empty({0}, torch::kFloat));
  EXPECT_EQ(payload.size(), 12u);
  EXPECT_EQ(codec.decode(payload).numel(), 0);
}

TEST(DenseCodec, AccumulateEqualsSum) {
  DenseCodec codec;
  const auto a = random_gradient(777, 2);
  const auto b = random_gradient(777, 3);
  const auto c = random_gradient(777, 4);
  Bytes acc = codec.encode(a);
  codec.accumulate(acc, codec.encode(b));
  codec.accumulate(acc, codec.encode(c));
  EXPECT_EQ(acc.size(), 12u + 4 * 777);
  // Same operation order as the float adds in accumulate: bit-exact.
  EXPECT_TRUE(bitwise_equal(codec.decode(acc), (a + b) + c));
}

TEST(DenseCodec, AccumulateRejectsSizeMismatchAndCorruptPayloads) {
  DenseCodec codec;
  Bytes acc = codec.encode(random_gradient(10, 5));
  const Bytes before = acc;
  EXPECT_THROW(codec.accumulate(acc, codec.encode(random_gradient(11, 6))), DecodeError);
  Bytes truncated = codec.encode(random_gradient(10, 7));
  truncated.pop_back();
  EXPECT_THROW(codec.accumulate(acc, truncated), DecodeError);
  EXPECT_EQ(acc, before);  // validation happens before any byte of acc changes
  TopKCodec topk(0.5);
  EXPECT_THROW(codec.accumulate(acc, topk.encode(random_gradient(10, 8))), DecodeError);
}

TEST(DenseCodec, RejectsBadTensors) {
  DenseCodec codec;
  EXPECT_THROW(codec.encode(torch::zeros({2, 3})), std::invalid_argument);
  EXPECT_THROW(codec.encode(torch::zeros({4}, torch::kDouble)), std::invalid_argument);
  EXPECT_THROW(codec.encode(torch::zeros({8}).slice(0, 0, 8, 2)), std::invalid_argument);
  EXPECT_THROW(codec.encode(torch::Tensor()), std::invalid_argument);
}

TEST(Codec, NonSummableAccumulateIsALogicError) {
  TopKCodec codec(0.1);
  Bytes acc = codec.encode(random_gradient(100, 9));
  EXPECT_THROW(codec.accumulate(acc, acc), std::logic_error);
}

// ------------------------------------------------------------------------------------------
// Top-k

TEST(TopKCodec, KeepsExactlyTheKLargestMagnitudes) {
  const std::int64_t n = 10000;
  for (double ratio : {0.001, 0.01, 0.1, 0.5, 1.0}) {
    TopKCodec codec(ratio);
    const auto g = random_gradient(n, 10);
    const Bytes payload = codec.encode(g);
    const std::int64_t k = std::max<std::int64_t>(1, std::llround(ratio * n));
    ASSERT_EQ(codec.k_for(n), k);
    EXPECT_EQ(payload.size(), 12u + 4 + 8 * static_cast<std::size_t>(k)) << "ratio " << ratio;
    EXPECT_EQ(payload[1], static_cast<std::uint8_t>(CodecId::kTopK));
    EXPECT_EQ(load_u32_le(payload.data() + 12), static_cast<std::uint32_t>(k));

    // The k largest |g| computed independently by a full sort (randn values are distinct).
    const auto order = std::get<1>(g.abs().sort(/*dim=*/0, /*descending=*/true));
    std::set<std::int64_t> expected;
    for (std::int64_t i = 0; i < k; ++i) expected.insert(order[i].item<std::int64_t>());

    // Indices on the wire are strictly ascending and are the expected set.
    std::vector<std::int64_t> wire;
    for (std::int64_t i = 0; i < k; ++i) wire.push_back(load_u32_le(payload.data() + 16 + 4 * i));
    EXPECT_TRUE(std::is_sorted(wire.begin(), wire.end()));
    EXPECT_EQ(std::set<std::int64_t>(wire.begin(), wire.end()), expected);

    const auto decoded = codec.decode(payload);
    ASSERT_EQ(decoded.numel(), n);
    const auto mask = decoded.ne(0);
    EXPECT_EQ(mask.sum().item<std::int64_t>(), k);
    EXPECT_TRUE(torch::equal(decoded.masked_select(mask), g.masked_select(mask)));
    for (auto i : expected) EXPECT_EQ(decoded[i].item<float>(), g[i].item<float>());
  }
}

TEST(TopKCodec, SelectionMatchesTorchTopkWithTiesAndSpecialValues) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 5000);
    at::manual_seed(trial);
    // Half the trials draw from a few integers: many ties across the selection threshold.
    auto g = trial % 2 == 0 ? torch::randint(-4, 5, {n}).to(torch::kFloat)
                            : torch::randn({n}) * std::pow(10.0f, static_cast<float>(trial % 7) - 3);
    if (n > 3) {
      g[0] = std::numeric_limits<float>::infinity();
      g[1] = -std::numeric_limits<float>::denorm_min();
    }
    const double ratio = std::array<double, 4>{0.001, 0.01, 0.3, 0.9}[trial % 4];
    TopKCodec codec(ratio);
    const std::int64_t k = codec.k_for(n);
    const auto decoded = codec.decode(codec.encode(g));
    // Same multiset of kept magnitudes as torch.topk (which indices win a tie may differ).
    std::vector<std::uint32_t> idx;
    const Bytes payload = codec.encode(g);
    for (std::int64_t i = 0; i < k; ++i) idx.push_back(load_u32_le(payload.data() + 16 + 4 * i));
    const auto kept = g.abs().index_select(0, torch::tensor(std::vector<std::int64_t>(idx.begin(), idx.end())));
    const auto reference = std::get<0>(torch::topk(g.abs(), k));
    EXPECT_TRUE(torch::equal(std::get<0>(kept.sort(0, true)), reference)) << "trial " << trial;
    // Exactly the indices a stable sort by descending magnitude puts first (lowest index wins
    // a tie), in ascending order.
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    const auto ga = g.abs();
    const float* a = ga.data_ptr<float>();
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) { return a[x] > a[y]; });
    std::vector<std::int64_t> expected(order.begin(), order.begin() + k);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(std::vector<std::int64_t>(idx.begin(), idx.end()), expected) << "trial " << trial;
    // Kept values are the original signed values.
    for (std::int64_t i = 0; i < k; ++i) {
      EXPECT_EQ(decoded[idx[i]].item<float>(), g[idx[i]].item<float>());
    }
  }
}

TEST(TopKCodec, TiesGoToLowerIndices) {
  // Equal magnitudes, alternating signs: the first k positions are kept, deterministically.
  auto g = torch::ones({100});
  g.slice(0, 1, 100, 2).fill_(-1.0f);
  TopKCodec codec(0.1);
  const Bytes payload = codec.encode(g);
  for (std::uint32_t i = 0; i < 10; ++i) EXPECT_EQ(load_u32_le(payload.data() + 16 + 4 * i), i);
}

TEST(TopKCodec, NaNRanksAsLargest) {
  auto g = torch::arange(10, torch::kFloat);
  g[2] = std::numeric_limits<float>::quiet_NaN();
  TopKCodec codec(0.2);  // k = 2
  const auto out = codec.decode(codec.encode(g));
  EXPECT_TRUE(std::isnan(out[2].item<float>()));
  EXPECT_EQ(out[9].item<float>(), 9.0f);
  EXPECT_EQ(out.ne(0).sum().item<std::int64_t>(), 2);
}

TEST(TopKCodec, KIsAtLeastOneAndAtMostN) {
  TopKCodec codec(1e-9);
  EXPECT_EQ(codec.k_for(5), 1);
  EXPECT_EQ(codec.k_for(0), 0);
  EXPECT_EQ(TopKCodec(1.0).k_for(7), 7);
  const Bytes payload = codec.encode(random_gradient(5, 11));
  EXPECT_EQ(payload.size(), 12u + 4 + 8);
  const Bytes empty = codec.encode(torch::empty({0}, torch::kFloat));
  EXPECT_EQ(empty.size(), 16u);
  EXPECT_EQ(codec.decode(empty).numel(), 0);
}

// ------------------------------------------------------------------------------------------
// Counts from ratios

TEST(RatioCounts, DecimalRatiosGiveTheCountTheyStandFor) {
  // The raw products sit a few ulps beside the whole number or half the decimal means.
  ASSERT_GT((1.0 - 0.99) * 100, 1.0);
  ASSERT_LT(0.145 * 100, 14.5);
  EXPECT_EQ(count_from_ratio(1.0 - 0.99, 100, CountRounding::kCeil), 1);
  EXPECT_EQ(count_from_ratio(1.0 - 0.999, 1000, CountRounding::kCeil), 1);
  EXPECT_EQ(count_from_ratio(0.07, 100, CountRounding::kCeil), 7);
  EXPECT_EQ(count_from_ratio(0.145, 100, CountRounding::kNearest), 15);  // halves up
  EXPECT_EQ(count_from_ratio(0.035, 100, CountRounding::kNearest), 4);
  EXPECT_EQ(count_from_ratio(1.3, 10, CountRounding::kFloor), 13);
  EXPECT_EQ(count_from_ratio(0.8, 5, CountRounding::kCeil), 4);
  // Every drop ratio with two or three decimals, on every n up to 2,000 where the kept
  // fraction is a whole count: ceil gives exactly that count.
  for (int milli = 1; milli < 1000; ++milli) {
    const double drop = milli / 1000.0;
    for (std::int64_t n = 1000; n <= 2000; n += 1000) {
      const std::int64_t exact = (1000 - milli) * n / 1000;
      EXPECT_EQ(count_from_ratio(1.0 - drop, n, CountRounding::kCeil), exact) << drop << " " << n;
    }
  }
  // Products away from those points round as computed.
  EXPECT_EQ(count_from_ratio(0.0101, 100, CountRounding::kCeil), 2);
  EXPECT_EQ(count_from_ratio(0.0149, 100, CountRounding::kNearest), 1);
  EXPECT_EQ(count_from_ratio(0.0151, 100, CountRounding::kNearest), 2);
  EXPECT_EQ(count_from_ratio(0.5, 0, CountRounding::kCeil), 0);
  // A product just off a whole count of a huge n is not pulled onto it.
  EXPECT_EQ(count_from_ratio(0.5 + 1e-9, std::int64_t{1} << 32, CountRounding::kCeil),
            (std::int64_t{1} << 31) + 5);
}

TEST(RatioCounts, TopKRoundsRatiosToTheirDecimalK) {
  EXPECT_EQ(TopKCodec(0.145).k_for(100), 15);
  EXPECT_EQ(TopKCodec(0.035).k_for(100), 4);
  EXPECT_EQ(TopKCodec(0.01).k_for(61706), 617);
  const Bytes payload = TopKCodec(0.145).encode(random_gradient(100, 3));
  EXPECT_EQ(payload.size(), 12u + 4 + 8 * 15);
}

TEST(TopKCodec, RejectsBadRatio) {
  EXPECT_THROW(TopKCodec(0.0), std::invalid_argument);
  EXPECT_THROW(TopKCodec(1.5), std::invalid_argument);
  EXPECT_THROW(TopKCodec(std::nan("")), std::invalid_argument);
}

// ------------------------------------------------------------------------------------------
// Error feedback

TEST(ErrorFeedback, FixedGradientIsEventuallySentAndNothingIsLost) {
  const std::int64_t n = 2000;
  const int steps = 300;
  ErrorFeedback ef(std::make_unique<TopKCodec>(0.01));
  EXPECT_EQ(ef.name(), "topk");
  EXPECT_EQ(ef.traits().aggregation, Aggregation::kDecodeThenSum);
  EXPECT_FALSE(ef.residual().defined());

  const auto g = random_gradient(n, 12);
  const auto g64 = g.to(torch::kDouble);
  const double gnorm = g64.norm().item<double>();
  // Top-k is a delta-contraction with delta = k/n: ||x - topk(x)||^2 <= (1 - delta) ||x||^2.
  // With e' = (g + e) - topk(g + e) that gives ||e'|| <= q (||e|| + ||g||), q = sqrt(1 - delta),
  // so from e = 0 the residual never exceeds q ||g|| / (1 - q).
  const double q = std::sqrt(1.0 - 20.0 / n);
  const double residual_bound = q * gnorm / (1 - q);
  auto sum_decoded = torch::zeros({n}, torch::kDouble);
  for (int t = 1; t <= steps; ++t) {
    sum_decoded += ef.decode(ef.encode(g)).to(torch::kDouble);
    // Conservation: what was sent plus what waits equals what came in.
    const auto lost = sum_decoded + ef.residual().to(torch::kDouble) - g64 * t;
    ASSERT_LT(lost.norm().item<double>(), 1e-5 * t * gnorm) << "step " << t;
    ASSERT_LE(ef.residual().to(torch::kDouble).norm().item<double>(), residual_bound * (1 + 1e-5))
        << "step " << t;
  }
  // So the mean decoded gradient converges to g at rate 1/steps...
  const double mean_error = (sum_decoded / steps - g64).norm().item<double>();
  EXPECT_LE(mean_error, residual_bound / steps * (1 + 1e-4));
  // ...whereas top-k alone would miss sqrt(0.99) of g's norm forever.
  EXPECT_LT(mean_error, 0.8 * gnorm);
}

// What the collectives, the transports and the optimizer read of a decorated codec (how its
// payloads combine, what a lost datagram may cost, who applies momentum, how much was sent)
// is what the codec inside declared, or what the decorator changes about it.
TEST(Decorators, TakeTheirTraitsFromTheCodecTheyWrap) {
  auto fp16 = [] { return std::make_unique<HalfPrecisionCodec>(HalfPrecisionCodec::Format::kFp16); };
  const ErrorFeedback ef(fp16());
  EXPECT_EQ(ef.name(), "fp16");
  EXPECT_EQ(ef.traits().aggregation, Aggregation::kSummable);
  EXPECT_TRUE(ef.traits().encodes_on_device);
  EXPECT_EQ(ef.traits().loss_tolerance.from, fp16()->traits().loss_tolerance.from);
  // Compressed bytes neither add nor survive a lost datagram, and zstd runs on the host.
  const ZstdStage zstd(fp16(), 1000);
  EXPECT_EQ(zstd.name(), "fp16");
  EXPECT_EQ(zstd.traits().aggregation, Aggregation::kDecodeThenSum);
  EXPECT_FALSE(zstd.traits().encodes_on_device);
  EXPECT_FALSE(zstd.traits().loss_tolerance.tolerant());
  // DGC's momentum correction stays declared through both wrappers.
  DgcOptions dgc;
  dgc.warmup = false;
  CodecContext ctx;
  ctx.numel = 1000;
  const ZstdStage wrapped(std::make_unique<ErrorFeedback>(std::make_unique<DgcCodec>(dgc, ctx)), 1000);
  EXPECT_TRUE(wrapped.traits().applies_momentum);
  EXPECT_EQ(wrapped.name(), "dgc");
}

TEST(Decorators, ReportTheDensityTheirInnerCodecSent) {
  ZstdStage codec(std::make_unique<ErrorFeedback>(std::make_unique<TopKCodec>(0.25)), 1000);
  EXPECT_EQ(codec.last_density(), 1.0);  // nothing encoded yet
  codec.encode(random_gradient(1000, 31));
  EXPECT_DOUBLE_EQ(codec.last_density(), 0.25);
  const std::vector<Bytes> chunks = codec.encode_chunks(random_gradient(1000, 32), {0, 10, 1000});
  EXPECT_EQ(chunks.size(), 2u);
  EXPECT_DOUBLE_EQ(codec.last_density(), 248.0 / 990.0);  // the last chunk's k of its n
}

TEST(ErrorFeedback, DenseInnerKeepsAZeroResidualAndStaysSummable) {
  ErrorFeedback ef(std::make_unique<DenseCodec>());
  EXPECT_EQ(ef.traits().aggregation, Aggregation::kSummable);
  const auto g = random_gradient(100, 13);
  Bytes acc = ef.encode(g);
  EXPECT_TRUE(bitwise_equal(ef.decode(acc), g));
  EXPECT_EQ(ef.residual().abs().max().item<float>(), 0.0f);
  ef.accumulate(acc, ef.encode(g));
  EXPECT_TRUE(torch::allclose(ef.decode(acc), 2 * g));
}

TEST(ErrorFeedback, RejectsAGradientOfAnotherLength) {
  ErrorFeedback ef(std::make_unique<TopKCodec>(0.1));
  ef.encode(random_gradient(100, 14));
  EXPECT_THROW(ef.encode(random_gradient(101, 15)), std::invalid_argument);
}

// ------------------------------------------------------------------------------------------
// Chunked encoding (ring reduce-scatter)

TEST(EncodeChunks, DenseEqualsPerSliceEncodes) {
  DenseCodec codec;
  const auto g = random_gradient(1003, 16);
  const std::vector<std::int64_t> bounds{0, 250, 250, 600, 1003};  // includes an empty chunk
  const auto chunks = codec.encode_chunks(g, bounds);
  ASSERT_EQ(chunks.size(), 4u);
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i], codec.encode(g.slice(0, bounds[i], bounds[i + 1]))) << "chunk " << i;
  }
}

TEST(EncodeChunks, RejectsBadBounds) {
  DenseCodec codec;
  const auto g = random_gradient(10, 17);
  EXPECT_THROW(codec.encode_chunks(g, {}), std::invalid_argument);
  EXPECT_THROW(codec.encode_chunks(g, {0}), std::invalid_argument);
  EXPECT_THROW(codec.encode_chunks(g, {1, 10}), std::invalid_argument);
  EXPECT_THROW(codec.encode_chunks(g, {0, 9}), std::invalid_argument);
  EXPECT_THROW(codec.encode_chunks(g, {0, 6, 4, 10}), std::invalid_argument);
  EXPECT_THROW(codec.encode_chunks(g, {0, 11}), std::invalid_argument);
}

TEST(EncodeChunks, ErrorFeedbackResidualCoversTheWholeGradient) {
  const std::int64_t n = 1000;
  const std::vector<std::int64_t> bounds{0, 300, 650, 1000};
  ErrorFeedback ef(std::make_unique<TopKCodec>(0.05));
  TopKCodec reference(0.05);
  auto e = torch::zeros({n});
  for (int step = 0; step < 5; ++step) {
    const auto g = random_gradient(n, 100 + step);
    const auto chunks = ef.encode_chunks(g, bounds);
    ASSERT_EQ(chunks.size(), 3u);
    // Manual compensate -> compress per chunk -> update.
    const auto acc = g + e;
    std::vector<torch::Tensor> decoded;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const auto slice = acc.slice(0, bounds[i], bounds[i + 1]).contiguous();
      EXPECT_EQ(chunks[i], reference.encode(slice)) << "step " << step << " chunk " << i;
      decoded.push_back(reference.decode(chunks[i]));
    }
    e = acc - torch::cat(decoded);
    EXPECT_TRUE(torch::equal(ef.residual(), e)) << "step " << step;
  }
  // Chunked and whole-tensor calls share one residual.
  EXPECT_NO_THROW(ef.encode(random_gradient(n, 200)));
}

// ------------------------------------------------------------------------------------------
// Corrupt payloads

TEST(CorruptPayloads, EveryTruncationIsRejected) {
  DenseCodec dense;
  TopKCodec topk(0.1);
  const auto g = random_gradient(40, 18);
  for (Codec* codec : std::vector<Codec*>{&dense, &topk}) {
    const Bytes full = codec->encode(g);
    for (std::size_t len = 0; len < full.size(); ++len) {
      const Bytes prefix(full.begin(), full.begin() + len);
      EXPECT_THROW(codec->decode(prefix), DecodeError) << codec->name() << " prefix " << len;
      EXPECT_THROW(decode_any(prefix), DecodeError) << codec->name() << " prefix " << len;
    }
    Bytes longer = full;
    longer.push_back(0);
    EXPECT_THROW(codec->decode(longer), DecodeError) << codec->name() << " trailing byte";
  }
}

TEST(CorruptPayloads, HeaderFieldsAreChecked) {
  DenseCodec dense;
  TopKCodec topk(0.1);
  const auto g = random_gradient(50, 19);
  const Bytes d = dense.encode(g);
  const Bytes t = topk.encode(g);

  Bytes bad = d;
  bad[0] = 'X';
  EXPECT_THROW(dense.decode(bad), DecodeError);
  try {
    dense.decode(bad);
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
  }
  // Wrong codec id: each decoder refuses the other's payloads.
  EXPECT_THROW(dense.decode(t), DecodeError);
  EXPECT_THROW(topk.decode(d), DecodeError);
  bad = d;
  bad[1] = 99;
  EXPECT_THROW(decode_any(bad), DecodeError);
  bad = t;
  bad[2] = 2;  // unknown format version
  EXPECT_THROW(topk.decode(bad), DecodeError);
  bad = t;
  bad[3] = 1;  // flags
  EXPECT_THROW(topk.decode(bad), DecodeError);
  bad = d;
  bad[4] ^= 1;  // element count no longer matches the bytes
  EXPECT_THROW(dense.decode(bad), DecodeError);
}

TEST(CorruptPayloads, TopKBodyIsChecked) {
  TopKCodec topk(0.1);
  const std::int64_t n = 50;
  const auto g = random_gradient(n, 20);
  const Bytes t = topk.encode(g);
  const std::uint32_t k = load_u32_le(t.data() + 12);
  ASSERT_EQ(k, 5u);
  const std::size_t idx0 = 16;

  Bytes bad = t;
  put_u32(bad, 12, n + 1);  // k > n
  EXPECT_THROW(topk.decode(bad), DecodeError);
  bad = t;
  put_u32(bad, 12, k - 1);  // k inconsistent with the size
  EXPECT_THROW(topk.decode(bad), DecodeError);
  bad = t;
  put_u32(bad, idx0 + 4 * (k - 1), n);  // index out of range
  EXPECT_THROW(topk.decode(bad), DecodeError);
  bad = t;
  put_u32(bad, idx0 + 4, load_u32_le(t.data() + idx0));  // duplicate index
  try {
    topk.decode(bad);
    FAIL() << "duplicate index accepted";
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("strictly increasing"), std::string::npos) << e.what();
  }
  bad = t;  // swapped (unsorted) indices
  put_u32(bad, idx0, load_u32_le(t.data() + idx0 + 4));
  put_u32(bad, idx0 + 4, load_u32_le(t.data() + idx0));
  EXPECT_THROW(topk.decode(bad), DecodeError);
}

TEST(CorruptPayloads, SparseHeaderCannotRequestAHugeAllocation) {
  TopKCodec topk(0.1, /*max_elements=*/1000);
  Bytes t = topk.encode(random_gradient(100, 21));
  EXPECT_EQ(topk.decode(t).numel(), 100);
  t[4 + 4] = 1;  // element count += 2^32
  EXPECT_THROW(topk.decode(t), DecodeError);
  EXPECT_THROW(decode_any(t), DecodeError);  // beyond what u32 indices address
}

TEST(CorruptPayloads, RandomByteFlipsNeverCrash) {
  const std::int64_t n = 64;
  DenseCodec dense;
  // The bound mirrors what the registry sets (the worker's gradient length, here with slack).
  TopKCodec topk(0.25, /*max_elements=*/4096);
  const auto g = random_gradient(n, 22);
  std::mt19937 rng(12345);
  int rejected = 0;
  int accepted = 0;
  for (Codec* codec : std::vector<Codec*>{&dense, &topk}) {
    const Bytes clean = codec->encode(g);
    for (int trial = 0; trial < 20000; ++trial) {
      Bytes bad = clean;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        // Bias towards the header and the k field, where the interesting checks live.
        const std::size_t pos = (rng() % 2 == 0) ? rng() % std::min<std::size_t>(20, bad.size())
                                                 : rng() % bad.size();
        bad[pos] ^= static_cast<std::uint8_t>(1 + rng() % 255);
      }
      try {
        const auto out = codec->decode(bad);
        ++accepted;
        ASSERT_EQ(out.dim(), 1);
        ASSERT_EQ(static_cast<std::uint64_t>(out.numel()), header_numel(bad));
      } catch (const DecodeError&) {
        ++rejected;
      }
      try {
        const auto out = decode_any(bad, 4096);
        ASSERT_EQ(static_cast<std::uint64_t>(out.numel()), header_numel(bad));
      } catch (const DecodeError&) {
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(accepted, 0);  // flips confined to values decode to valid tensors
}

// ------------------------------------------------------------------------------------------
// Registry

std::string config_error_path(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const ConfigError& e) {
    if (message) *message = e.what();
    return e.path();
  }
  return "<no ConfigError>";
}

TEST(CodecRegistry, ListsBuiltins) {
  const auto& reg = CodecRegistry::builtin();
  std::vector<std::string> names;
  for (const auto& info : reg.list()) names.push_back(info.name);
  // Other families register more codecs; these two are always there, listed by name.
  EXPECT_NE(std::find(names.begin(), names.end(), "none"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "topk"), names.end());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  ASSERT_NE(reg.find("topk"), nullptr);
  ASSERT_EQ(reg.find("topk")->params.size(), 1u);
  EXPECT_EQ(reg.find("topk")->params[0].name, "ratio");
  EXPECT_FALSE(reg.find("topk")->params[0].help.empty());
  EXPECT_EQ(reg.find("nope"), nullptr);
}

TEST(CodecRegistry, ResolveFillsDefaults) {
  const auto& reg = CodecRegistry::builtin();
  EXPECT_EQ(reg.resolve(json{{"kind", "topk"}}, "codec"),
            (json{{"kind", "topk"}, {"ratio", 0.01}, {"error_feedback", false}}));
  EXPECT_EQ(reg.resolve(json{{"kind", "none"}}, "codec"),
            (json{{"kind", "none"}, {"error_feedback", false}}));
  EXPECT_EQ(reg.resolve(json{{"kind", "topk"}, {"ratio", 1}, {"error_feedback", true}}, "codec"),
            (json{{"kind", "topk"}, {"ratio", 1}, {"error_feedback", true}}));
}

TEST(CodecRegistry, ResolveRejectsWithThePath) {
  const auto& reg = CodecRegistry::builtin();
  std::string msg;
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "zip"}}, "codec"); }, &msg),
            "codec.kind");
  EXPECT_NE(msg.find("none"), std::string::npos) << msg;  // the known codecs are listed
  EXPECT_NE(msg.find("topk"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"ratio", 0.1}}, "codec"); }), "codec.kind");
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", 3}}, "codec"); }), "codec.kind");
  EXPECT_EQ(config_error_path([&] { reg.resolve(json::array(), "codec"); }), "codec");

  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "topk"}, {"ration", 0.1}}, "codec"); },
                              &msg),
            "codec.ration");
  EXPECT_NE(msg.find("unknown key; expected one of: kind, ratio, error_feedback"),
            std::string::npos)
      << msg;
  // `none` has no ratio.
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "none"}, {"ratio", 0.1}}, "codec"); }),
            "codec.ratio");

  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "topk"}, {"ratio", "big"}}, "codec"); },
                              &msg),
            "codec.ratio");
  EXPECT_NE(msg.find("expected a number"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "topk"}, {"ratio", 1.5}}, "codec"); },
                              &msg),
            "codec.ratio");
  EXPECT_EQ(msg, "codec.ratio: expected a number in (0, 1], got 1.5");
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "topk"}, {"ratio", 0}}, "codec"); }),
            "codec.ratio");
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "topk"}, {"ratio", true}}, "codec"); }),
            "codec.ratio");
  EXPECT_EQ(config_error_path(
                [&] { reg.resolve(json{{"kind", "topk"}, {"error_feedback", "yes"}}, "codec"); }),
            "codec.error_feedback");
  // Nested paths are kept as given.
  EXPECT_EQ(config_error_path(
                [&] { reg.resolve(json{{"kind", "topk"}, {"ratio", -1}}, "sweep.codecs[2]"); }),
            "sweep.codecs[2].ratio");
}

TEST(CodecRegistry, IntegerAndStringParamsAreTypeChecked) {
  CodecRegistry& reg = CodecRegistry::extend();
  CodecParam bits;
  bits.name = "bits";
  bits.type = CodecParam::Type::kInteger;
  bits.default_value = 8;
  bits.min = 1;
  bits.max = 16;
  CodecParam mode;
  mode.name = "mode";
  mode.type = CodecParam::Type::kString;
  mode.default_value = "fast";
  mode.choices = {"fast", "exact"};
  reg.add(CodecInfo{"q", "test", {bits, mode},
                    [](const json&, const CodecContext&) { return std::make_unique<DenseCodec>(); }});
  EXPECT_EQ(reg.resolve(json{{"kind", "q"}, {"bits", 4.0}}, "c"),
            (json{{"kind", "q"}, {"bits", 4}, {"mode", "fast"}, {"error_feedback", false}}));
  std::string msg;
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "q"}, {"bits", 4.5}}, "c"); }, &msg),
            "c.bits");
  EXPECT_NE(msg.find("expected an integer in [1, 16]"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "q"}, {"bits", 17}}, "c"); }), "c.bits");
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "q"}, {"mode", "slow"}}, "c"); }, &msg),
            "c.mode");
  EXPECT_NE(msg.find("fast, exact"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path([&] { reg.resolve(json{{"kind", "q"}, {"mode", 1}}, "c"); }), "c.mode");
  EXPECT_THROW(reg.add(CodecInfo{"q", "dup", {}, [](const json&, const CodecContext&) {
                                   return std::make_unique<DenseCodec>();
                                 }}),
               std::logic_error);
  EXPECT_TRUE(reg.remove("q"));
}

TEST(CodecRegistry, CreateBuildsAndWraps) {
  const auto& reg = CodecRegistry::builtin();
  CodecContext ctx;
  ctx.numel = 500;
  auto plain = reg.create(reg.resolve(json{{"kind", "topk"}, {"ratio", 0.1}}, "codec"), ctx);
  ASSERT_NE(dynamic_cast<TopKCodec*>(plain.get()), nullptr);
  EXPECT_DOUBLE_EQ(dynamic_cast<TopKCodec*>(plain.get())->ratio(), 0.1);
  auto ef = reg.create(json{{"kind", "topk"}, {"error_feedback", true}}, ctx);
  auto* wrapper = dynamic_cast<ErrorFeedback*>(ef.get());
  ASSERT_NE(wrapper, nullptr);
  EXPECT_EQ(ef->name(), "topk");
  EXPECT_NE(dynamic_cast<const TopKCodec*>(&wrapper->inner()), nullptr);
  auto none = reg.create(json{{"kind", "none"}}, ctx);
  EXPECT_EQ(none->traits().aggregation, Aggregation::kSummable);
  EXPECT_THROW(reg.create(json{{"kind", "zip"}}, ctx), ConfigError);

  // The decode bound follows the gradient length: a payload claiming more is refused.
  TopKCodec big(0.1);
  EXPECT_EQ(plain->decode(big.encode(random_gradient(500, 23))).numel(), 500);
  EXPECT_THROW(plain->decode(big.encode(random_gradient(501, 23))), DecodeError);
}

// Every built-in codec is declared with typed options (codecs/CodecKind.h): a resolved object
// read into them and written back gives the object's declared keys, so each binding (choices
// standing for enums and flags, DGC's density list, nested codecs) maps both ways.
TEST(CodecRegistry, TypedOptionsWriteBackWhatTheyRead) {
  const auto& reg = CodecRegistry::builtin();
  std::vector<json> objects = {
      {{"kind", "dgc"}, {"warmup_densities", "0.5,0.125"}, {"values", "fp16"},
       {"warmup_stage_steps", 7}},
      {{"kind", "gradient_dropping"}, {"scope", "global"}, {"drop_ratio", 0.9}},
      {{"kind", "sdagc"}, {"values", "fp16"}},
      {{"kind", "natural_dithering"}, {"norm", "linf"}, {"levels", 3}},
      {{"kind", "onebit"}, {"granularity", "tensor"}},
      {{"kind", "efsignsgd"}, {"granularity", "tensor"}},
      {{"kind", "compose"}, {"select", {{"kind", "randomk"}, {"scale", true}}}},
      {{"kind", "lgc_ring"}, {"seed_offset", 3}},
  };
  for (const auto& info : reg.list()) objects.push_back({{"kind", info.name}});
  for (const auto& object : objects) {
    const json resolved = reg.resolve(object, "codec");
    const CodecInfo& info = reg.at(resolved.at("kind").get<std::string>());
    ASSERT_TRUE(info.read && info.write) << info.name << " is declared without typed options";
    json written = {{"kind", info.name}};
    info.write(info.read(resolved, "codec"), written);
    json expected = resolved;  // the keys the registry adds to every codec aside
    expected.erase("error_feedback");
    expected.erase("zstd");
    EXPECT_EQ(written, expected) << object.dump();
  }
}

TEST(CodecRegistry, OptionsAreReadTypedForTheirKind) {
  const auto& reg = CodecRegistry::builtin();
  const auto dgc =
      reg.options<DgcOptions>(json{{"kind", "dgc"}, {"warmup_densities", "0.5, 0.125"}}, "codec");
  ASSERT_TRUE(dgc.has_value());
  EXPECT_EQ(dgc->warmup_densities, (std::vector<double>{0.5, 0.125}));
  EXPECT_DOUBLE_EQ(dgc->density, 0.001);  // the declared default
  EXPECT_EQ(dgc->values, ValueFormat::kFp32);
  EXPECT_FALSE(reg.options<DgcOptions>(json{{"kind", "topk"}}, "codec").has_value());
  EXPECT_EQ(config_error_path([&] {
              reg.options<DgcOptions>(json{{"kind", "dgc"}, {"warmup_densities", "0.5,x"}},
                                      "sweep.codec");
            }),
            "sweep.codec.warmup_densities");
}

// Checks that need the whole object (or more than the declaration says) run when the codec is
// made and name the key in the scenario's `codec` object.
TEST(CodecRegistry, ChecksWhenMadeNameTheKey) {
  const auto& reg = CodecRegistry::builtin();
  CodecContext ctx;
  ctx.numel = 64;
  const auto made = [&](const json& object) { return [&reg, &ctx, object] { reg.create(object, ctx); }; };
  std::string msg;
  EXPECT_EQ(config_error_path(made({{"kind", "dgc"}, {"warmup_densities", "0.5,,0.1"}}), &msg),
            "codec.warmup_densities");
  EXPECT_NE(msg.find("empty entry in density list"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path(made({{"kind", "gradient_dropping"}, {"drop_ratio", 1}}), &msg),
            "codec.drop_ratio");
  EXPECT_NE(msg.find("expected a number in [0, 1), got 1"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path(made({{"kind", "signum"}, {"momentum", 1}}), &msg), "codec.momentum");
  EXPECT_NE(msg.find("expected a number in (0, 1)"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path(made({{"kind", "gradiveq"}, {"slice", 4}}), &msg), "codec.components");
  EXPECT_NE(msg.find("must not exceed slice (4)"), std::string::npos) << msg;
  EXPECT_EQ(config_error_path(made({{"kind", "terngrad"}, {"scaler_sharing", true},
                                    {"error_feedback", true}})),
            "codec.error_feedback");
  EXPECT_EQ(config_error_path(made({{"kind", "terngrad"}, {"scaler_sharing", true}, {"zstd", true}})),
            "codec.zstd");
  EXPECT_EQ(config_error_path(made({{"kind", "compose"},
                                    {"quantize", {{"kind", "qsgd"}, {"error_feedback", true}}}})),
            "codec.quantize.error_feedback");
}

// ------------------------------------------------------------------------------------------
// Exact encoding (server downlink)

TEST(ExactEncoding, PicksTheSmallerFormatAndRoundTripsBitExact) {
  const std::int64_t n = 10000;
  // Sparse: 1% non-zeros, including a -0.0 that must survive.
  auto sparse = torch::zeros({n});
  at::manual_seed(24);
  const auto positions = torch::randperm(n).slice(0, 0, 100);
  sparse.index_put_({positions}, torch::randn({100}));
  sparse[7] = -0.0f;
  const auto nnz = sparse.view(torch::kInt).ne(0).sum().item<std::int64_t>();  // 100 or 101
  const Bytes s = encode_exact(sparse);
  EXPECT_EQ(s[1], static_cast<std::uint8_t>(CodecId::kTopK));
  EXPECT_EQ(s.size(), 16u + 8 * static_cast<std::size_t>(nnz));
  EXPECT_TRUE(bitwise_equal(decode_any(s), sparse));

  // Dense: random values, sparse form would be twice as large.
  const auto dense = random_gradient(n, 25);
  const Bytes d = encode_exact(dense);
  EXPECT_EQ(d[1], static_cast<std::uint8_t>(CodecId::kDense));
  EXPECT_EQ(d.size(), 12u + 4 * n);
  EXPECT_TRUE(bitwise_equal(decode_any(d), dense));

  // Around the break-even point (16 + 8 nnz < 12 + 4 n  <=>  nnz < (n - 1) / 2).
  for (std::int64_t nnz : {4998, 4999, 5000}) {
    auto t = torch::zeros({n});
    t.slice(0, 0, nnz).fill_(1.0f);
    const Bytes b = encode_exact(t);
    EXPECT_EQ(b.size(), std::min<std::size_t>(16 + 8 * nnz, 12 + 4 * n)) << nnz;
    EXPECT_TRUE(bitwise_equal(decode_any(b), t));
  }

  // All zeros: a 16-byte sparse payload with k = 0.
  const Bytes z = encode_exact(torch::zeros({n}));
  EXPECT_EQ(z.size(), 16u);
  EXPECT_TRUE(bitwise_equal(decode_any(z), torch::zeros({n})));
  EXPECT_EQ(decode_any(encode_exact(torch::empty({0}))).numel(), 0);
}

// ------------------------------------------------------------------------------------------
// Saved state (`gradwire codec encode --state FILE`) is untrusted bytes too

TEST(CodecState, StepCountersBeyondInt64AreRejected) {
  // Read back as a signed step, 2^63 would be negative: DGC's warm-up then indexed its table of
  // densities at a negative stage. Every codec that keeps a step refuses it and keeps its state.
  CodecContext ctx;
  ctx.numel = 40;
  ctx.layers = {LayerSlice{"fc.weight", 0, {4, 8}}, LayerSlice{"fc.bias", 32, {8}}};
  for (const char* kind : {"dgc", "powersgd", "gradiveq", "lgc_ps", "lgc_ring"}) {
    const CodecRegistry& registry = CodecRegistry::builtin();
    auto codec = registry.create(registry.resolve(json{{"kind", kind}}, "codec"), ctx);
    CodecState state(kind);
    state.put_u64("step", std::uint64_t{1} << 63);
    EXPECT_THROW(codec->load_state(ByteSpan(state.serialize())), DecodeError) << kind;
    state.put_u64("step", 3);
    EXPECT_NO_THROW(codec->load_state(ByteSpan(state.serialize()))) << kind;
    EXPECT_EQ(codec->decode(ByteSpan(codec->encode(random_gradient(40, 5)))).numel(), 40) << kind;
  }
}

}  // namespace
}  // namespace gradwire

namespace gradwire {
namespace {

// The tensor-operation encoders run on a GPU (tests/gpu/gpu_test.cpp compares the devices);
// here, on the CPU, they must write the host encoders' bytes for the same input.
using testing::awkward_gradient;

TEST(TensorOpsEncode, TopKWritesTheHostSelection) {
  for (std::int64_t n : {1, 7, 1000, 100003}) {
    const torch::Tensor g = awkward_gradient(n, /*with_nan=*/true);
    for (double ratio : {0.001, 0.01, 0.3, 1.0}) {
      TopKCodec codec(ratio);
      const Bytes host = codec.encode(g);
      const Bytes ops = TopKCodec::encode_with_tensor_ops(g, codec.k_for(n));
      EXPECT_EQ(host, ops) << "n " << n << ", ratio " << ratio;
    }
  }
}

TEST(TensorOpsEncode, RandomKGathersTheHostValues) {
  const torch::Tensor g = awkward_gradient(10007, /*with_nan=*/false);
  const float* x = g.data_ptr<float>();
  std::vector<std::uint32_t> pos;
  for (std::uint32_t i = 3; i < 10007; i += 37) pos.push_back(i);
  for (float factor : {1.0f, 37.3f}) {
    const torch::Tensor values = RandomKCodec::gather_scaled(g, pos, factor);
    ASSERT_EQ(values.numel(), static_cast<std::int64_t>(pos.size()));
    for (std::size_t j = 0; j < pos.size(); ++j) {
      const float host = factor * x[pos[j]];
      EXPECT_EQ(std::memcmp(&host, values.data_ptr<float>() + j, 4), 0) << "position " << pos[j];
    }
  }
}

TEST(TensorOpsEncode, SignBitsAndSignumMomentumMatchTheHostEncoder) {
  for (double momentum : {0.0, 0.9}) {
    SignCodec host(momentum);
    SignCodec ops(momentum);
    for (int step = 0; step < 4; ++step) {
      torch::manual_seed(step);
      torch::Tensor g = awkward_gradient(10005, /*with_nan=*/true) * (step + 1);  // n % 8 != 0
      g.data_ptr<float>()[9] = torch::randn({1}).item<float>() * 1e-30f;
      const Bytes payload = host.encode(g);
      const torch::Tensor bits = ops.signs_with_tensor_ops(g);
      ASSERT_EQ(payload.size(), kPayloadHeaderSize + static_cast<std::size_t>(bits.numel()));
      EXPECT_EQ(std::memcmp(payload.data() + kPayloadHeaderSize, bits.data_ptr<std::uint8_t>(),
                            static_cast<std::size_t>(bits.numel())),
                0)
          << "momentum " << momentum << ", step " << step;
    }
  }
}

TEST(TensorOpsEncode, HalfPrecisionRoundsAsTheHostEncoder) {
  const torch::Tensor g = awkward_gradient(100003, /*with_nan=*/true);
  for (auto format : {HalfPrecisionCodec::Format::kFp16, HalfPrecisionCodec::Format::kBf16}) {
    HalfPrecisionCodec codec(format);
    EXPECT_EQ(codec.encode(g), codec.encode_with_tensor_ops(g)) << codec.name();
  }
}

// DGC with tensor operations: the same payload, momentum and velocity as the host, step
// after step, through every selection path (exact-only small tensors, sampled thresholds
// accepted at once, lowered and rescanned, and the exact fallback among too many candidates),
// dense biases, Nesterov, fp16 values and masking.
TEST(TensorOpsEncode, DgcKeepsTheHostSelectionAndBuffers) {
  CodecContext context;
  context.layers = {{"conv.weight", 0, {64, 32, 3, 3}}, {"conv.bias", 18432, {64}},
                    {"fc.weight", 18496, {10, 4000}}, {"fc.bias", 58496, {10}}, {"small.weight", 58506, {4, 3}}};
  context.numel = 58518;
  context.seed = 3;
  context.workers = 4;
  int rescanned = 0, fell_back = 0, exact_only = 0;
  struct Case {
    bool nesterov, masking;
    ValueFormat values;
    double clip;
  };
  for (const Case c : {Case{false, true, ValueFormat::kFp32, 0.0}, Case{true, true, ValueFormat::kFp16, 0.0},
                       Case{false, false, ValueFormat::kFp32, 0.0}}) {
    DgcOptions options;
    options.density = 0.01;
    options.warmup = false;
    options.nesterov = c.nesterov;
    options.momentum_masking = c.masking;
    options.values = c.values;
    options.clip_norm = c.clip;
    DgcCodec host(options, context), ops(options, context);
    for (int step = 0; step < 6; ++step) {
      torch::manual_seed(100 + step);
      torch::Tensor g = torch::randn({context.numel});
      if (step == 2) g.slice(0, 18496, 18496 + 4000).fill_(0.5f);   // ties: too many candidates
      if (step == 4) g.slice(0, 0, 18432).mul_(1e-3f).slice(0, 7, 9).fill_(50.0f);  // a rare spike
      const Bytes a = host.encode(g);
      const Bytes b = ops.encode_with_tensor_ops(g);
      const std::string what = "nesterov " + std::to_string(c.nesterov) + ", step " + std::to_string(step);
      ASSERT_EQ(a, b) << what;
      EXPECT_TRUE(torch::equal(host.velocity(), ops.velocity())) << what;
      EXPECT_TRUE(torch::equal(host.momentum_buffer(), ops.momentum_buffer())) << what;
      ASSERT_EQ(host.last_stats().size(), ops.last_stats().size());
      for (std::size_t j = 0; j < host.last_stats().size(); ++j) {
        const DgcSelectStats& x = host.last_stats()[j];
        const DgcSelectStats& y = ops.last_stats()[j];
        EXPECT_EQ(x.rounds, y.rounds) << what;
        EXPECT_EQ(x.count_before_fallback, y.count_before_fallback) << what;
        EXPECT_EQ(x.exact_fallback, y.exact_fallback) << what;
        rescanned += x.rounds > 1;
        fell_back += x.exact_fallback;
        exact_only += x.exact_only;
      }
    }
  }
  std::cout << "tensors rescanned " << rescanned << ", exact fallbacks " << fell_back << ", exact only "
            << exact_only << "\n";
  EXPECT_GT(rescanned, 0) << "no lowered threshold: the rescan path went untested";
  EXPECT_GT(fell_back, 0) << "no exact fallback: that path went untested";
  EXPECT_GT(exact_only, 0);
}

// The sparse codecs' decode_to scatters on the device it is given, the CPU included: the
// host decode's tensor.
TEST(TensorOpsEncode, SparseDecodeToIsTheHostDecode) {
  const torch::Tensor g = awkward_gradient(10007, /*with_nan=*/false);
  CodecContext context;
  context.numel = 10007;
  context.seed = 5;
  TopKCodec topk(0.01);
  RandomKCodec randomk(0.02, /*scale=*/true, context);
  DgcOptions options;
  options.warmup = false;
  DgcCodec dgc(options, context);
  for (Codec* codec : std::initializer_list<Codec*>{&topk, &randomk, &dgc}) {
    const Bytes payload = codec->encode(g);
    EXPECT_TRUE(torch::equal(codec->decode(ByteSpan(payload)), codec->decode_to(ByteSpan(payload), torch::kCPU)))
        << codec->name();
  }
}

}  // namespace
}  // namespace gradwire
