// Tests of the sparsification family: selection against brute force, conservation of
// error feedback / momentum correction, momentum factor masking, DGC's warm-up schedule,
// random-k's shared indices and summability, wire formats and their validation under
// thousands of random mutations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "codecs/CodecState.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/kernels/CpuFeatures.h"
#include "codecs/MomentumCorrection.h"
#include "codecs/sparsify/AdaCompCodec.h"
#include "codecs/sparsify/DgcCodec.h"
#include "codecs/sparsify/GradientDroppingCodec.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/sparsify/RandomKCodec.h"
#include "codecs/sparsify/SdagcCodec.h"
#include "codecs/sparsify/ThresholdSampling.h"
#include "codecs/sparsify/TopKCodec.h"
#include "codecs/wire/SparseWire.h"
#include "codecs/ZstdStage.h"

namespace gradwire {
namespace {

torch::Tensor randn(std::int64_t n, std::uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({n}, torch::kFloat);
}

/// Brute-force: is `sel` (ascending, distinct) a set of the |sel| largest magnitudes?
bool is_top_set(const torch::Tensor& x, const std::vector<std::uint32_t>& sel) {
  const float* p = x.data_ptr<float>();
  std::vector<bool> in(static_cast<std::size_t>(x.numel()), false);
  float min_in = INFINITY;
  for (auto i : sel) {
    in[i] = true;
    min_in = std::min(min_in, std::fabs(p[i]));
  }
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (!in[i] && std::fabs(p[i]) > min_in) return false;
  }
  return true;
}

std::vector<std::uint32_t> brute_topk(const torch::Tensor& x, std::int64_t k) {
  const float* p = x.data_ptr<float>();
  std::vector<std::uint32_t> idx(static_cast<std::size_t>(x.numel()));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](auto a, auto b) { return std::fabs(p[a]) > std::fabs(p[b]); });
  idx.resize(static_cast<std::size_t>(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}

CodecContext context(std::int64_t numel, int rank = 0, int workers = 1) {
  CodecContext c;
  c.rank = rank;
  c.workers = workers;
  c.numel = numel;
  c.seed = 7;
  return c;
}

// --------------------------------------------------------------------------------------------
// Selection

TEST(Selection, TopKMatchesBruteForce) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const torch::Tensor x = randn(20000, seed);
    for (std::int64_t k : {1, 7, 200, 2000}) {
      EXPECT_EQ(TopKCodec::select_largest(x.data_ptr<float>(), x.numel(), k), brute_topk(x, k));
    }
  }
}

// Large tensors take the sampled-bound path (one scan plus an exact select among ~1.5k
// candidates); it must equal the brute-force top-k exactly, ties included (values rounded to
// a few levels make thousands of equal magnitudes at the threshold), and infinities rank largest.
TEST(Selection, TopKSampledBoundPathIsExactWithTies) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    torch::Tensor x = randn(300000, seed);
    if (seed == 2) x = torch::round(x * 4) / 4;  // heavy ties
    if (seed == 3) {
      x[17] = std::numeric_limits<float>::infinity();
      x[99] = -std::numeric_limits<float>::infinity();
    }
    for (std::int64_t k : {64, 300, 3000, 30000}) {
      const auto want = brute_topk(x, k);
      // Every kernel level: the CPU's widest scan, AVX2 (CPUs without AVX-512), portable.
      for (const KernelLevel level : {KernelLevel::kNative, KernelLevel::kAvx2, KernelLevel::kPortable}) {
        use_kernels(level);
        const auto got = TopKCodec::select_largest(x.data_ptr<float>(), x.numel(), k);
        use_kernels(KernelLevel::kNative);
        EXPECT_EQ(got, want) << "seed " << seed << " k " << k << " level " << static_cast<int>(level);
      }
    }
  }
}

TEST(Selection, DgcSampledThresholdThenExactFallback) {
  int fallbacks = 0;
  int accepted = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const torch::Tensor x = randn(200000, seed) * torch::rand({200000}) * 3;
    for (std::int64_t k : {200, 2000}) {
      SplitMix64 rng(seed);
      std::vector<std::uint32_t> out;
      DgcSelectStats st;
      dgc_select(x.data_ptr<float>(), x.numel(), k, 0.01, rng, 0, out, &st);
      ASSERT_FALSE(st.exact_only);
      ASSERT_TRUE(std::is_sorted(out.begin(), out.end()));
      ASSERT_TRUE(is_top_set(x, out)) << "not a top set, seed " << seed;
      if (st.exact_fallback) {
        ++fallbacks;
        EXPECT_GT(st.count_before_fallback, static_cast<std::int64_t>(1.3 * k));
        EXPECT_EQ(static_cast<std::int64_t>(out.size()), k);
        EXPECT_EQ(out, brute_topk(x, k));
      } else {
        ++accepted;
        EXPECT_GE(static_cast<std::int64_t>(out.size()), static_cast<std::int64_t>(std::ceil(0.8 * k)));
        EXPECT_LE(static_cast<std::int64_t>(out.size()), static_cast<std::int64_t>(1.3 * k));
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(Selection, DgcFallbackForcedByTies) {
  // Half the entries share one magnitude: the threshold selects far more than 1.3k, so the
  // exact top-k among them must give exactly k, ties to the lower index.
  torch::Tensor x = torch::full({100000}, 1.0f);
  x.index_put_({torch::arange(0, 100000, 2)}, 0.5f);
  SplitMix64 rng(3);
  std::vector<std::uint32_t> out;
  DgcSelectStats st;
  dgc_select(x.data_ptr<float>(), x.numel(), 100, 0.01, rng, 10, out, &st);
  EXPECT_TRUE(st.exact_fallback);
  ASSERT_EQ(out.size(), 100u);
  for (std::size_t j = 0; j < out.size(); ++j) EXPECT_EQ(out[j], 10 + 2 * j + 1);
}

TEST(Selection, DgcLowersThresholdWhenTooFewPass) {
  // Heavy tails: the sample over-estimates the threshold on some draws; whichever way it goes
  // the result keeps at least 0.8k entries or stopped after 10 passes.
  const torch::Tensor x = randn(100000, 11).pow(5);
  for (std::uint64_t s = 0; s < 20; ++s) {
    SplitMix64 rng(s);
    std::vector<std::uint32_t> out;
    DgcSelectStats st;
    dgc_select(x.data_ptr<float>(), x.numel(), 100, 0.01, rng, 0, out, &st);
    EXPECT_TRUE(out.size() >= 80u || st.rounds == 10);
    EXPECT_TRUE(is_top_set(x, out));
  }
}

// --------------------------------------------------------------------------------------------
// Conservation

TEST(Conservation, ErrorFeedbackAroundTopK) {
  ErrorFeedback ef(std::make_unique<TopKCodec>(0.01));
  torch::Tensor sum_in = torch::zeros({5000});
  torch::Tensor sum_out = torch::zeros({5000});
  for (int step = 0; step < 20; ++step) {
    const torch::Tensor g = randn(5000, 100 + step);
    sum_in += g;
    sum_out += ef.decode(ef.encode(g));
    ASSERT_TRUE(torch::allclose(sum_out + ef.residual(), sum_in, 1e-4, 1e-4)) << step;
  }
}

template <typename C>
void check_residual_conservation(C& codec, const std::function<torch::Tensor(const C&)>& state,
                                 std::int64_t n) {
  torch::Tensor sum_in = torch::zeros({n});
  torch::Tensor sum_out = torch::zeros({n});
  for (int step = 0; step < 15; ++step) {
    const torch::Tensor g = randn(n, 300 + step);
    sum_in += g;
    const Bytes p = codec.encode(g);
    sum_out += codec.decode(p);
    ASSERT_TRUE(torch::allclose(sum_out + state(codec), sum_in, 1e-4, 1e-4))
        << codec.name() << " step " << step;
  }
}

TEST(Conservation, GradientDroppingAdaCompDgcWithoutMomentum) {
  const std::int64_t n = 20000;
  GradientDroppingCodec gd(GradientDroppingOptions{}, context(n));
  check_residual_conservation<GradientDroppingCodec>(gd, [](const auto& c) { return c.residual(); }, n);
  AdaCompCodec ada(AdaCompOptions{}, context(n));
  check_residual_conservation<AdaCompCodec>(ada, [](const auto& c) { return c.residual(); }, n);
  DgcOptions o;
  o.momentum_correction = false;
  o.warmup = false;
  o.density = 0.01;
  o.clip_norm = 0.0;  // the unclipped arithmetic (DgcClipping tests clipping)
  DgcCodec dgc(o, context(n));
  check_residual_conservation<DgcCodec>(dgc, [](const auto& c) { return c.velocity(); }, n);
  SdagcOptions so;
  so.momentum_compensation = false;
  so.lr_revision = true;
  so.clip_norm = 0.0;  // clipping changes what comes in: conservation is of the unclipped input
  SdagcCodec sd(so, context(n));
  check_residual_conservation<SdagcCodec>(sd, [](const auto& c) { return c.velocity(); }, n);
}

TEST(Conservation, DgcMomentumCorrectionSendsAllOfTheVelocity) {
  // With momentum correction, v accumulates u: sum(sent) + v == sum over steps of u_t.
  const std::int64_t n = 20000;
  DgcOptions o;
  o.warmup = false;
  o.density = 0.005;
  o.clip_norm = 0.0;  // the unclipped arithmetic (DgcClipping tests clipping)
  DgcCodec dgc(o, context(n));
  torch::Tensor u = torch::zeros({n});
  torch::Tensor sum_u = torch::zeros({n});
  torch::Tensor sum_out = torch::zeros({n});
  for (int step = 0; step < 10; ++step) {
    const torch::Tensor g = randn(n, 500 + step);
    // The codec's u before this step (after masking) drives this step's u.
    u = (step == 0 ? torch::zeros({n}) : dgc.momentum_buffer().clone()) * 0.9 + g;
    sum_u += u;
    sum_out += dgc.decode(dgc.encode(g));
    ASSERT_TRUE(torch::allclose(sum_out + dgc.velocity(), sum_u, 1e-3, 1e-4)) << step;
  }
  EXPECT_TRUE(dgc.traits().applies_momentum);
}

// --------------------------------------------------------------------------------------------
// Momentum factor masking

TEST(Masking, ZeroesExactlyTheSentCoordinatesOfUAndV) {
  const std::int64_t n = 50000;
  DgcOptions o;
  o.warmup = false;
  o.density = 0.01;
  o.clip_norm = 0.0;  // the unclipped arithmetic (DgcClipping tests clipping)
  DgcCodec dgc(o, context(n));
  for (int step = 0; step < 5; ++step) {
    const torch::Tensor g = randn(n, 700 + step);
    const torch::Tensor u_before = step == 0 ? torch::zeros({n}) : dgc.momentum_buffer().clone();
    dgc.encode(g);
    const torch::Tensor u_expected_unmasked = u_before * 0.9 + g;
    const std::set<std::uint32_t> sent(dgc.last_indices().begin(), dgc.last_indices().end());
    const float* u = dgc.momentum_buffer().data_ptr<float>();
    const float* v = dgc.velocity().data_ptr<float>();
    const float* ue = u_expected_unmasked.data_ptr<float>();
    for (std::int64_t i = 0; i < n; ++i) {
      if (sent.count(static_cast<std::uint32_t>(i))) {
        ASSERT_EQ(u[i], 0.0f);
        ASSERT_EQ(v[i], 0.0f);
      } else {
        ASSERT_NEAR(u[i], ue[i], 1e-5);
        ASSERT_NE(u[i], 0.0f);
      }
    }
  }
}

// --------------------------------------------------------------------------------------------
// Warm-up

TEST(Warmup, DocumentedDensityForEveryEpoch) {
  CodecContext ctx = context(200000);
  ctx.steps_per_epoch = 3;
  DgcCodec dgc(DgcOptions{}, ctx);
  const std::vector<double> expected{0.25, 0.0625, 0.015625, 0.004, 0.001, 0.001};
  for (std::size_t epoch = 0; epoch < expected.size(); ++epoch) {
    for (int s = 0; s < 3; ++s) {
      const torch::Tensor g = randn(200000, 40 * epoch + s);
      dgc.encode(g);
      EXPECT_DOUBLE_EQ(dgc.density_at(dgc.steps() - 1), expected[epoch]);
      // What was actually sent tracks the schedule (sampled threshold: within [0.8, 1.3]).
      EXPECT_GE(dgc.last_density(), 0.8 * expected[epoch] - 1e-9) << epoch;
      EXPECT_LE(dgc.last_density(), 1.3 * expected[epoch] + 1e-9) << epoch;
    }
  }
}

TEST(Warmup, StageLengthOverrideAndSwitch) {
  DgcOptions o;
  o.warmup_stage_steps = 10;
  DgcCodec dgc(o, context(1000));
  EXPECT_DOUBLE_EQ(dgc.density_at(9), 0.25);
  EXPECT_DOUBLE_EQ(dgc.density_at(10), 0.0625);
  EXPECT_DOUBLE_EQ(dgc.density_at(40), 0.001);
  o.warmup = false;
  DgcCodec off(o, context(1000));
  EXPECT_DOUBLE_EQ(off.density_at(0), 0.001);
  EXPECT_EQ(parse_density_list("0.5, 0.25"), (std::vector<double>{0.5, 0.25}));
  EXPECT_THROW(parse_density_list("0.5,,0.1"), std::invalid_argument);
  EXPECT_THROW(parse_density_list("2"), std::invalid_argument);
}

TEST(Dgc, BiasesTravelDenseWithTheirMomentum) {
  CodecContext ctx = context(0);
  ctx.layers = {LayerSlice{"w", 0, {100, 50}}, LayerSlice{"b", 5000, {100}}};
  ctx.numel = 5100;
  DgcOptions o;
  o.warmup = false;
  o.clip_norm = 0.0;  // the unclipped arithmetic (DgcClipping tests clipping)
  DgcCodec dgc(o, ctx);
  const torch::Tensor g = randn(5100, 9);
  const torch::Tensor d = dgc.decode(dgc.encode(g));
  EXPECT_TRUE(torch::equal(d.narrow(0, 5000, 100), g.narrow(0, 5000, 100)));
  EXPECT_EQ((d.narrow(0, 0, 5000) != 0).sum().item<std::int64_t>(), 5);  // 0.1% of 5000
  // The bias momentum is kept (not masked): a second step sends 0.9 g1 + g2.
  const torch::Tensor g2 = randn(5100, 10);
  const torch::Tensor d2 = dgc.decode(dgc.encode(g2));
  EXPECT_TRUE(torch::allclose(d2.narrow(0, 5000, 100), (g * 0.9 + g2).narrow(0, 5000, 100)));
}

// Local clipping (paper section 3.2) per parameter tensor: with density 1 and no warm-up every
// entry of v = clipped g is sent on the first step, so the decoded payload is the clipped g.
namespace dgc_clipping {

/// g of `n` elements with L2 norm `norm` (a uniform direction from `seed`).
torch::Tensor with_norm(std::int64_t n, double norm, std::uint64_t seed) {
  const torch::Tensor g = randn(n, seed);
  return g * static_cast<float>(norm / g.norm().item<double>());
}

DgcOptions sends_everything(double clip_norm) {
  DgcOptions o;
  o.density = 1.0;
  o.warmup = false;
  o.clip_norm = clip_norm;
  return o;
}

double norm_of(const torch::Tensor& x) { return x.to(torch::kDouble).norm().item<double>(); }

}  // namespace dgc_clipping

TEST(DgcClipping, EachLayerOfOneEncodeInputIsClippedOnItsOwn) {
  using namespace dgc_clipping;
  // One bucket of three tensors: a layer over the limit, a layer under it and a bias over it.
  // clip_norm 2 at 4 workers: limit 2 / sqrt(4) = 1 per tensor.
  CodecContext ctx = context(0, 0, 4);
  ctx.layers = {LayerSlice{"big.weight", 0, {40, 50}}, LayerSlice{"small.weight", 2000, {30, 20}},
                LayerSlice{"big.bias", 2600, {40}}};
  ctx.numel = 2640;
  const torch::Tensor big = with_norm(2000, 10.0, 1), small = with_norm(600, 0.5, 2), bias = with_norm(40, 3.0, 3);
  const torch::Tensor g = torch::cat({big, small, bias});
  for (const bool tensor_ops : {false, true}) {
    DgcCodec dgc(sends_everything(2.0), ctx);
    const torch::Tensor d =
        dgc.decode(tensor_ops ? dgc.encode_with_tensor_ops(g) : dgc.encode(g));
    const std::string path = tensor_ops ? "tensor ops" : "host";
    // The big layer is rescaled to the limit, in its own direction...
    EXPECT_NEAR(norm_of(d.narrow(0, 0, 2000)), 1.0, 1e-5) << path;
    EXPECT_TRUE(torch::allclose(d.narrow(0, 0, 2000), big * 0.1f, 1e-5, 1e-7)) << path;
    // ...the small one beside it is not touched (a whole-input clip would scale it by ~0.1)...
    EXPECT_TRUE(torch::equal(d.narrow(0, 2000, 600), small)) << path;
    // ...and the dense bias is clipped as a tensor of its own.
    EXPECT_NEAR(norm_of(d.narrow(0, 2600, 40)), 1.0, 1e-5) << path;
  }
}

TEST(DgcClipping, ThresholdScalesWithOneOverSqrtOfTheWorkers) {
  using namespace dgc_clipping;
  // One tensor of norm 3, clip_norm 4: limit 4 (1 worker: not clipped), 2 (4 workers),
  // 1 (16 workers), 0.5 (64 workers).
  const torch::Tensor g = with_norm(1000, 3.0, 4);
  for (const auto& [workers, expected] : std::vector<std::pair<int, double>>{{1, 3.0}, {4, 2.0}, {16, 1.0}, {64, 0.5}}) {
    CodecContext ctx = context(1000, 0, workers);
    ctx.layers = {LayerSlice{"w", 0, {100, 10}}};
    DgcCodec dgc(sends_everything(4.0), ctx);
    const torch::Tensor d = dgc.decode(dgc.encode(g));
    EXPECT_NEAR(norm_of(d), expected, 1e-5 * expected) << workers << " workers";
  }
}

TEST(DgcClipping, ClipNormZeroTurnsItOff) {
  using namespace dgc_clipping;
  CodecContext ctx = context(2600, 0, 16);
  ctx.layers = {LayerSlice{"a", 0, {40, 50}}, LayerSlice{"b", 2000, {30, 20}}};
  const torch::Tensor g = torch::cat({with_norm(2000, 1000.0, 5), with_norm(600, 50.0, 6)});
  DgcCodec off(sends_everything(0.0), ctx);
  EXPECT_TRUE(torch::equal(off.decode(off.encode(g)), g));
  // The default clips: 5 / sqrt(16) = 1.25 per tensor.
  EXPECT_DOUBLE_EQ(DgcOptions{}.clip_norm, 5.0);
  DgcOptions defaults = sends_everything(DgcOptions{}.clip_norm);
  DgcCodec on(defaults, ctx);
  const torch::Tensor d = on.decode(on.encode(g));
  EXPECT_NEAR(norm_of(d.narrow(0, 0, 2000)), 1.25, 1e-5);
  EXPECT_NEAR(norm_of(d.narrow(0, 2000, 600)), 1.25, 1e-5);
}

TEST(DgcClipping, ANonFiniteTensorIsLeftAsItIs) {
  using namespace dgc_clipping;
  // Scaling by limit / inf would zero the finite entries and make the inf a NaN.
  CodecContext ctx = context(2600, 0, 4);
  ctx.layers = {LayerSlice{"a", 0, {40, 50}}, LayerSlice{"b", 2000, {30, 20}}};
  torch::Tensor g = torch::cat({with_norm(2000, 10.0, 9), with_norm(600, 10.0, 10)});
  g[3] = std::numeric_limits<float>::infinity();
  DgcCodec dgc(sends_everything(2.0), ctx);
  const torch::Tensor d = dgc.decode(dgc.encode(g));
  EXPECT_TRUE(torch::equal(d.narrow(0, 0, 2000), g.narrow(0, 0, 2000)));
  EXPECT_NEAR(norm_of(d.narrow(0, 2000, 600)), 1.0, 1e-5);  // the finite tensor beside it is clipped
}

TEST(DgcClipping, WithoutALayoutTheWholeInputIsOneTensor) {
  using namespace dgc_clipping;
  // Tools give no layout: the input is clipped as one tensor (limit 1 at 4 workers).
  const torch::Tensor g = torch::cat({with_norm(2000, 10.0, 7), with_norm(600, 0.5, 8)});
  DgcCodec dgc(sends_everything(2.0), context(2600, 0, 4));
  const torch::Tensor d = dgc.decode(dgc.encode(g));
  EXPECT_NEAR(norm_of(d), 1.0, 1e-5);
  EXPECT_TRUE(torch::allclose(d, g * static_cast<float>(1.0 / norm_of(g)), 1e-5, 1e-7));
}

TEST(Dgc, FusedEncodeMatchesTheTwoPassReference) {
  // DgcCodec fuses the momentum update with the selection scan, samples the threshold from a
  // preview of the updated v and may split the pass over threads. It must give exactly what
  // momentum_accumulate over everything followed by dgc_select per tensor gives: same
  // indices, same values, same u and v, bit for bit, for any thread count. With clipping
  // (limit 100 at 1 worker: w1 is always over it, w2 from step 2, b1 never) each tensor's g is
  // first scaled by its own factor.
  const std::vector<LayerSlice> layers = {LayerSlice{"w1", 0, {1500, 2000}},
                                          LayerSlice{"b1", 3000000, {100}},
                                          LayerSlice{"w2", 3000100, {50, 40}}};
  const std::int64_t n = 3002100;
  const int threads_before = at::get_num_threads();
  for (const bool nesterov : {false, true}) {
    for (const bool correction : {true, false}) {
      for (const int threads : {1, 3}) {
       for (const double clip : {0.0, 100.0}) {
        at::set_num_threads(threads);
        CodecContext ctx = context(n);
        ctx.layers = layers;
        DgcOptions o;
        o.warmup = false;
        o.density = 0.002;
        o.clip_norm = clip;
        o.nesterov = nesterov;
        o.momentum_correction = correction;
        DgcCodec dgc(o, ctx);
        const float m = correction ? 0.9f : 0.0f;
        torch::Tensor u = torch::zeros({n});
        torch::Tensor v = torch::zeros({n});
        SplitMix64 rng(mix_seed(ctx.seed, 1, 0x646763));
        for (int step = 0; step < 4; ++step) {
          const torch::Tensor g = randn(n, 1000 + step) * (step + 1);
          const torch::Tensor d = dgc.decode(dgc.encode(g));
          float* up = u.data_ptr<float>();
          float* vp = v.data_ptr<float>();
          for (const LayerSlice& l : layers) {
            const float* gl = g.data_ptr<float>() + l.offset;
            const double norm = std::sqrt(sum_of_squares(gl, l.numel()));
            const float scale = clip > 0.0 && norm > clip ? static_cast<float>(clip / norm) : 1.0f;
            momentum_accumulate(up + l.offset, vp + l.offset, gl, l.numel(), m, nesterov, scale);
          }
          std::vector<std::uint32_t> expected;
          dgc_select(vp, 3000000, 6000, o.sample_ratio, rng, 0, expected);
          for (std::uint32_t i = 3000000; i < 3000100; ++i) expected.push_back(i);  // bias: dense
          dgc_select(vp + 3000100, 2000, 4, o.sample_ratio, rng, 3000100, expected);
          ASSERT_EQ(dgc.last_indices(), expected) << "step " << step << " threads " << threads;
          torch::Tensor sent = torch::zeros({n});
          float* sp = sent.data_ptr<float>();
          for (const std::uint32_t i : expected) {
            sp[i] = vp[i];
            vp[i] -= sp[i];
            if (correction && (i < 3000000 || i >= 3000100)) up[i] = 0.0f;
          }
          ASSERT_TRUE(torch::equal(d, sent)) << step;
          ASSERT_TRUE(torch::equal(dgc.velocity(), v)) << step;
          ASSERT_TRUE(torch::equal(dgc.momentum_buffer(), u)) << step;
        }
       }
      }
    }
  }
  at::set_num_threads(threads_before);
}

TEST(Selection, CollectAtLeastMatchesAPlainScan) {
  const torch::Tensor x = randn(100003, 77);
  const float* p = x.data_ptr<float>();
  for (const float t : {0.0f, 0.5f, 2.0f, 3.5f, 10.0f}) {
    std::vector<std::uint32_t> got{42};
    collect_at_least(p, x.numel(), magnitude_key(t), 5, got);
    std::vector<std::uint32_t> want{42};
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      if (magnitude_key(p[i]) >= magnitude_key(t)) want.push_back(5 + static_cast<std::uint32_t>(i));
    }
    EXPECT_EQ(got, want) << t;
    // The overload that also returns the keys: the same positions, each with its own key; at
    // every kernel level (the CPU's widest scan, AVX2, portable).
    for (const KernelLevel level : {KernelLevel::kNative, KernelLevel::kAvx2, KernelLevel::kPortable}) {
      use_kernels(level);
      std::vector<std::uint32_t> plain{42}, with_keys{42}, keys;
      collect_at_least(p, x.numel(), magnitude_key(t), 5, plain);
      collect_at_least(p, x.numel(), magnitude_key(t), 5, with_keys, keys);
      use_kernels(KernelLevel::kNative);
      const int l = static_cast<int>(level);
      EXPECT_EQ(plain, want) << t << " level " << l;
      EXPECT_EQ(with_keys, want) << t << " level " << l;
      ASSERT_EQ(keys.size(), with_keys.size());
      for (std::size_t j = 1; j < keys.size(); ++j) {
        ASSERT_EQ(keys[j], magnitude_key(p[with_keys[j] - 5])) << t << " entry " << j << " level " << l;
      }
    }
  }
}

// --------------------------------------------------------------------------------------------
// Random-k

TEST(RandomK, IndicesAgreeAcrossWorkersAndPayloadsAdd) {
  const std::int64_t n = 30000;
  RandomKCodec a(0.01, false, context(n, 0, 3));
  RandomKCodec b(0.01, false, context(n, 1, 3));
  for (int step = 0; step < 4; ++step) {
    const torch::Tensor ga = randn(n, 10 + step);
    const torch::Tensor gb = randn(n, 20 + step);
    Bytes pa = a.encode(ga);
    const Bytes pb = b.encode(gb);
    const torch::Tensor da = a.decode(pa);
    const torch::Tensor db = b.decode(pb);
    EXPECT_TRUE(torch::equal(da != 0, db != 0));  // same positions
    EXPECT_EQ((da != 0).sum().item<std::int64_t>(), 300);
    // Payload of the sum == sum of the payloads (a third worker encoding ga + gb).
    RandomKCodec c(0.01, false, context(n, 2, 3));
    for (int s = 0; s < step; ++s) c.encode(torch::zeros({n}));
    const Bytes psum = c.encode(ga + gb);
    a.accumulate(pa, pb);
    EXPECT_TRUE(torch::allclose(a.decode(pa), c.decode(psum)));
    EXPECT_EQ(pa.size(), psum.size());
  }
}

TEST(RandomK, ChunksAgreeAndDifferBetweenSteps) {
  const std::int64_t n = 10000;
  RandomKCodec a(0.05, false, context(n, 0, 2));
  RandomKCodec b(0.05, false, context(n, 1, 2));
  const std::vector<std::int64_t> bounds{0, 5000, 10000};
  const auto ca = a.encode_chunks(randn(n, 1), bounds);
  const auto cb = b.encode_chunks(randn(n, 2), bounds);
  for (int i = 0; i < 2; ++i) {
    Bytes acc = ca[i];
    a.accumulate(acc, cb[i]);  // would throw if positions differed
  }
  const auto next = a.encode_chunks(randn(n, 3), bounds);
  EXPECT_FALSE(torch::equal(a.decode(next[0]) != 0, a.decode(ca[0]) != 0));
  // Positions are a uniform k-subset: distinct, sorted, in range.
  const auto pos = RandomKCodec::positions(99, 1000, 400);
  EXPECT_EQ(std::set<std::uint32_t>(pos.begin(), pos.end()).size(), 400u);
  EXPECT_TRUE(std::is_sorted(pos.begin(), pos.end()));
  EXPECT_LT(pos.back(), 1000u);
  // Mismatched steps are rejected, not silently summed.
  Bytes acc = ca[0];
  EXPECT_THROW(a.accumulate(acc, next[0]), DecodeError);
}

TEST(RandomK, ScaleMakesItUnbiased) {
  const std::int64_t n = 2000;
  RandomKCodec c(0.1, true, context(n));
  const torch::Tensor g = randn(n, 4);
  torch::Tensor mean = torch::zeros({n});
  for (int i = 0; i < 400; ++i) mean += c.decode(c.encode(g));
  mean /= 400;
  EXPECT_LT((mean - g).abs().mean().item<float>(), 0.25f);
}

// --------------------------------------------------------------------------------------------
// Counts from ratios: the count a decimal ratio stands for, not one more or less

TEST(RatioCounts, GradientDroppingKeepsOnePercentOfOneHundred) {
  // (1 - 0.99) * 100 is 1.0000000000000009 in double: ceil of it kept 2.
  EXPECT_EQ(GradientDroppingCodec::kept_count(100, 0.99), 1);
  EXPECT_EQ(GradientDroppingCodec::kept_count(1000, 0.999), 1);
  EXPECT_EQ(GradientDroppingCodec::kept_count(200000, 0.99), 2000);
  EXPECT_EQ(GradientDroppingCodec::kept_count(101, 0.99), 2);  // ceil(1.01)
  EXPECT_EQ(GradientDroppingCodec::kept_count(10, 0.99), 1);   // at least one
  GradientDroppingOptions o;
  o.drop_ratio = 0.99;
  o.sample_ratio = 1.0;  // the whole tensor: an exact threshold
  GradientDroppingCodec gd(o, context(100));
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const Bytes p = gd.encode(randn(100, seed));
    EXPECT_DOUBLE_EQ(gd.last_density(), 0.01) << seed;
    EXPECT_EQ(gd.decode(p).count_nonzero().item<std::int64_t>(), 1) << seed;
  }
}

TEST(RatioCounts, RandomKDgcAndThresholdSamplesUseTheDecimalCount) {
  // 0.145 * 100 is 14.499999999999998: llround gave 14, the decimal's k is 15 (halves up).
  EXPECT_EQ(RandomKCodec(0.145, false, context(100)).k_for(100), 15);
  EXPECT_EQ(RandomKCodec(0.01, false, context(61706)).k_for(61706), 617);
  DgcOptions o;
  o.density = 0.145;
  o.warmup = false;
  o.momentum_correction = false;
  CodecContext ctx = context(100);
  ctx.layers = {LayerSlice{"w", 0, {10, 10}}};
  DgcCodec dgc(o, ctx);
  dgc.encode(randn(100, 3));  // a tensor this small takes the exact top-k of k elements
  EXPECT_DOUBLE_EQ(dgc.last_density(), 0.15);
  // 0.07 * 100 is 7.000000000000001: ceil of it sampled 8.
  SplitMix64 rng(5);
  EXPECT_EQ(plan_threshold_sample(100, 0.07, 1, rng).count, 7);
  EXPECT_EQ(plan_threshold_sample(200000, 0.001, 1, rng).count, 200);
}

// --------------------------------------------------------------------------------------------
// Gradient Dropping's threshold sample (Aji & Heafield 2017: a 0.1% sample)

TEST(GradientDropping, SampleRatioSetsTheSampleSize) {
  const std::int64_t n = 200000;
  const std::int64_t keep = GradientDroppingCodec::kept_count(n, 0.99);
  ASSERT_EQ(keep, 2000);
  // The ratio decides: the floor (n / keep = 100) is below 0.1% of 200,000.
  EXPECT_EQ(GradientDroppingCodec::sample_count(n, keep, 0.001), 200);
  EXPECT_EQ(GradientDroppingCodec::sample_count(n, keep, 0.01), 2000);
  EXPECT_EQ(GradientDroppingCodec::sample_count(n, keep, 0.05), 10000);
  // The floor: one sampled element expected at or above the threshold.
  EXPECT_EQ(GradientDroppingCodec::sample_count(n, keep, 0.0001), 100);
  EXPECT_EQ(GradientDroppingCodec::sample_count(48000, 480, 0.001), 100);
  EXPECT_EQ(GradientDroppingCodec::sample_count(10080, 101, 0.001), 99);
  // Tiny tensors are sampled whole; the sample never exceeds the tensor.
  EXPECT_EQ(GradientDroppingCodec::sample_count(50, 1, 0.001), 50);
  EXPECT_EQ(GradientDroppingCodec::sample_count(50, 1, 1.0), 50);
}

TEST(GradientDropping, SampleRatioChangesThePayloadAndKeepsTheDensity) {
  const std::int64_t n = 200000;
  const int steps = 40;
  std::vector<std::vector<Bytes>> payloads;
  std::vector<double> spread;  // standard deviation of the per-step density
  for (double sample_ratio : {0.001, 0.01, 0.05}) {
    GradientDroppingOptions o;
    o.drop_ratio = 0.99;
    o.sample_ratio = sample_ratio;
    GradientDroppingCodec gd(o, context(n));
    payloads.emplace_back();
    double sum = 0.0, sum_sq = 0.0, lowest = 1.0, highest = 0.0;
    for (int step = 0; step < steps; ++step) {
      payloads.back().push_back(gd.encode(randn(n, 100 + static_cast<std::uint64_t>(step))));
      const double d = gd.last_density();
      sum += d;
      sum_sq += d * d;
      lowest = std::min(lowest, d);
      highest = std::max(highest, d);
    }
    const double mean = sum / steps;
    spread.push_back(std::sqrt(std::max(0.0, sum_sq / steps - mean * mean)));
    // The threshold estimates the (1 - drop_ratio) quantile: the density averages ~1%.
    EXPECT_NEAR(mean, 0.01, 0.0015) << sample_ratio;
    EXPECT_GT(lowest, 0.0) << sample_ratio;
    if (sample_ratio >= 0.05) {
      EXPECT_GT(lowest, 0.005);
      EXPECT_LT(highest, 0.015);
    }
  }
  // A larger sample estimates the threshold better: the density varies less from step to step
  // (measured: 0.0076, 0.0019, 0.0011).
  EXPECT_GT(spread[0], spread[1]);
  EXPECT_GT(spread[1], spread[2]);
  // Same gradients, same seed: only the sample size differs, and with it the threshold.
  EXPECT_NE(payloads[0][0], payloads[1][0]);
  EXPECT_NE(payloads[1][0], payloads[2][0]);
  EXPECT_NE(payloads[0][0], payloads[2][0]);
}

// --------------------------------------------------------------------------------------------
// Wire formats

TEST(Wire, IndexCodingsRoundTripAndTheSmallestIsChosen) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint32_t n = 1 + rng() % 100000;
    std::set<std::uint32_t> s;
    const std::size_t k = rng() % std::min<std::uint32_t>(n, 3000);
    while (s.size() < k) s.insert(rng() % n);
    const std::vector<std::uint32_t> idx(s.begin(), s.end());
    std::vector<float> values(k);
    for (auto& v : values) v = static_cast<float>(rng() % 1000) - 500.0f;
    for (IndexCoding c : {IndexCoding::kPlain32, IndexCoding::kVarintGaps, IndexCoding::kBitPackedGaps,
                          IndexCoding::kVarintRuns}) {
      ByteWriter w;
      write_index_section(w, c, idx.data(), k);
      const Bytes b = w.take();
      ASSERT_EQ(b.size(), index_section_size(c, idx.data(), k));
      ByteReader r(ByteSpan(b), "test");
      EXPECT_EQ(read_index_section(r, c, k, b.size(), n), idx);
    }
    const Bytes p = encode_compact_sparse(n, idx.data(), values.data(), k, ValueFormat::kFp32);
    EXPECT_EQ(p.size(), compact_sparse_size(idx.data(), k, ValueFormat::kFp32));
    const SparseEntries e = decode_compact_entries(ByteSpan(p), n);
    EXPECT_EQ(e.indices, idx);
    EXPECT_EQ(e.values, values);
  }
  // A dense run costs one byte per index (varint) or less (bit-packed zero gaps).
  std::vector<std::uint32_t> run(1000);
  for (std::uint32_t i = 0; i < 1000; ++i) run[i] = 5 + i;
  EXPECT_EQ(index_section_size(IndexCoding::kBitPackedGaps, run.data(), run.size()), 5u);
  EXPECT_EQ(index_section_size(IndexCoding::kVarintRuns, run.data(), run.size()), 3u);
  EXPECT_EQ(choose_index_coding(run.data(), run.size()), IndexCoding::kVarintRuns);
}

// choose_index_coding counts all four sizes in one branch-free pass; it must agree with
// index_section_size coding by coding, also for runs whose length needs a 2- or 3-byte
// varint (lengths around 2^7 and 2^14) and gaps of every varint length.
TEST(Wire, ChosenCodingIsTheSmallestSectionSize) {
  std::mt19937 rng(11);
  const std::size_t run_lengths[] = {1, 2, 127, 128, 129, 130, 16384, 16385, 16386, 20000};
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::uint32_t> idx;
    std::uint64_t next = rng() % 3;
    const int pieces = 1 + static_cast<int>(rng() % 12);
    for (int piece = 0; piece < pieces && next < (std::uint64_t{1} << 31); ++piece) {
      const std::size_t len = trial % 3 == 0 ? 1 + rng() % 5 : run_lengths[rng() % 10];
      for (std::size_t i = 0; i < len; ++i) idx.push_back(static_cast<std::uint32_t>(next++));
      next += std::uint64_t{1} + (rng() % 4 == 0 ? rng() % (1u << (7 * (1 + rng() % 4))) : rng() % 3);
    }
    const std::size_t k = idx.size();
    std::size_t sizes[4];
    for (int c = 0; c < 4; ++c) sizes[c] = index_section_size(static_cast<IndexCoding>(c), idx.data(), k);
    const std::size_t best = static_cast<std::size_t>(std::min_element(sizes, sizes + 4) - sizes);
    std::size_t section = 0;
    EXPECT_EQ(static_cast<std::size_t>(choose_index_coding(idx.data(), k, &section)), best) << "trial " << trial;
    EXPECT_EQ(section, sizes[best]) << "trial " << trial;
    // The run coding's size is the one counted, whichever wins.
    ByteWriter w;
    write_index_section(w, IndexCoding::kVarintRuns, idx.data(), k);
    EXPECT_EQ(w.take().size(), sizes[3]) << "trial " << trial;
  }
  std::size_t section = 7;
  EXPECT_EQ(choose_index_coding(nullptr, 0, &section), IndexCoding::kPlain32);
  EXPECT_EQ(section, 0u);
}

TEST(Wire, HalfPrecisionConversion) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 1e-3f, 3.14159f}) {
    const float back = half_to_float(float_to_half(f));
    EXPECT_NEAR(back, f, std::fabs(f) * 1e-3 + 1e-7) << f;
  }
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie rounds to even
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  // fp16 values keep their rounding error in the residual.
  GradientDroppingOptions o;
  o.values = ValueFormat::kFp16;
  GradientDroppingCodec gd(o, context(4000));
  const torch::Tensor g = randn(4000, 8);
  const Bytes p = gd.encode(g);
  EXPECT_TRUE(torch::allclose(gd.decode(p) + gd.residual(), g));
}

std::vector<std::pair<std::string, std::unique_ptr<Codec>>> all_codecs(std::int64_t n) {
  std::vector<std::pair<std::string, std::unique_ptr<Codec>>> out;
  const CodecRegistry& r = CodecRegistry::builtin();
  CodecContext ctx = context(n);
  ctx.layers = {LayerSlice{"conv", 0, {10, 2, 5, 5}}, LayerSlice{"convb", 500, {10}},
                LayerSlice{"fc", 510, {n - 520, 1}}, LayerSlice{"fcb", n - 10, {10}}};
  for (const char* obj : {R"({"kind":"dgc","warmup":false,"density":0.01})",
                          R"({"kind":"dgc","values":"fp16"})",
                          R"({"kind":"gradient_dropping"})", R"({"kind":"sdagc"})",
                          R"({"kind":"adacomp"})", R"({"kind":"randomk"})",
                          R"({"kind":"dgc","zstd":true})", R"({"kind":"topk","zstd":true,"error_feedback":true})"}) {
    out.emplace_back(obj, r.create(nlohmann::json::parse(obj), ctx));
  }
  return out;
}

TEST(Wire, RejectsTruncatedOversizedAndCorruptedPayloads) {
  const std::int64_t n = 3000;
  std::mt19937 rng(12345);
  int rejected = 0;
  int accepted = 0;
  for (auto& [label, codec] : all_codecs(n)) {
    const Bytes good = codec->encode(randn(n, 77) * torch::rand({n}));
    const torch::Tensor ref = codec->decode(ByteSpan(good));
    ASSERT_EQ(ref.numel(), n) << label;
    // Every truncation, and one byte too many.
    for (std::size_t len = 0; len < good.size(); ++len) {
      const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_THROW(codec->decode(ByteSpan(cut)), DecodeError) << label << " length " << len;
    }
    Bytes longer = good;
    longer.push_back(0);
    EXPECT_THROW(codec->decode(ByteSpan(longer)), DecodeError) << label;
    // Thousands of random mutations: flips, byte sets, insertions, deletions. Each decode must
    // either throw DecodeError or return n elements; ASan (ctest -L asan) checks the reads.
    for (int t = 0; t < 1500; ++t) {
      Bytes b = good;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = rng() % b.size();
        switch (rng() % 4) {
          case 0: b[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
          case 1: b[at] = static_cast<std::uint8_t>(rng()); break;
          case 2: b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), static_cast<std::uint8_t>(rng())); break;
          default: if (b.size() > 1) b.erase(b.begin() + static_cast<std::ptrdiff_t>(at)); break;
        }
      }
      try {
        const torch::Tensor d = codec->decode(ByteSpan(b));
        ASSERT_LE(static_cast<std::uint64_t>(d.numel()), static_cast<std::uint64_t>(n)) << label;
        ++accepted;
      } catch (const DecodeError&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 5000);
  (void)accepted;
}

TEST(Wire, DecoderRejectsHugeElementCounts) {
  DgcCodec dgc(DgcOptions{}, context(1000));
  std::vector<std::uint32_t> idx{1, 2};
  std::vector<float> v{1, 2};
  const Bytes p = encode_compact_sparse(std::uint64_t{1} << 31, idx.data(), v.data(), 2, ValueFormat::kFp32);
  EXPECT_THROW(dgc.decode(ByteSpan(p)), DecodeError);
  try {
    dgc.decode(ByteSpan(p));
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds this decoder's limit"), std::string::npos);
  }
}

TEST(Zstd, RoundTripAndSmallerOnRedundantPayloads) {
  const CodecRegistry& r = CodecRegistry::builtin();
  auto plain = r.create(nlohmann::json::parse(R"({"kind":"none"})"), context(10000));
  auto z = r.create(nlohmann::json::parse(R"({"kind":"none","zstd":true})"), context(10000));
  const torch::Tensor g = torch::round(randn(10000, 3) * 4) / 4;  // few distinct values
  const Bytes a = plain->encode(g);
  const Bytes b = z->encode(g);
  EXPECT_LT(b.size(), a.size() / 2);
  EXPECT_TRUE(torch::equal(z->decode(ByteSpan(b)), g));
  EXPECT_EQ(z->traits().aggregation, Aggregation::kDecodeThenSum);
  EXPECT_FALSE(r.resolve(nlohmann::json::parse(R"({"kind":"topk"})"), "codec").contains("zstd"));
  EXPECT_EQ(r.resolve(nlohmann::json::parse(R"({"kind":"topk","zstd":true})"), "codec")["zstd"], true);
  EXPECT_THROW(r.resolve(nlohmann::json::parse(R"({"kind":"topk","zstd":1})"), "codec"), std::exception);
}

// --------------------------------------------------------------------------------------------
// State carried across objects (what `gradwire codec --state` relies on)

TEST(State, SaveLoadContinuesExactly) {
  const std::int64_t n = 5000;
  for (const char* obj : {R"({"kind":"dgc","warmup_stage_steps":1})", R"({"kind":"gradient_dropping"})",
                          R"({"kind":"sdagc"})", R"({"kind":"adacomp"})",
                          R"({"kind":"randomk","error_feedback":true})",
                          R"({"kind":"topk","error_feedback":true,"zstd":true})"}) {
    const CodecRegistry& r = CodecRegistry::builtin();
    auto one = r.create(nlohmann::json::parse(obj), context(n));
    auto first = r.create(nlohmann::json::parse(obj), context(n));
    std::vector<Bytes> expected;
    for (int s = 0; s < 3; ++s) expected.push_back(one->encode(randn(n, 60 + s)));
    Bytes state;
    for (int s = 0; s < 3; ++s) {
      auto fresh = r.create(nlohmann::json::parse(obj), context(n));
      fresh->load_state(ByteSpan(state));
      EXPECT_EQ(fresh->encode(randn(n, 60 + s)), expected[s]) << obj << " step " << s;
      state = fresh->save_state();
    }
    Bytes bad = state;
    if (!bad.empty()) {
      bad.resize(bad.size() - 3);
      auto fresh = r.create(nlohmann::json::parse(obj), context(n));
      EXPECT_THROW(fresh->load_state(ByteSpan(bad)), DecodeError) << obj;
    }
    (void)first;
  }
}

TEST(AdaComp, SendsSignsWithOneScalePerTensorAndAdapts) {
  AdaCompCodec ada(AdaCompOptions{}, context(10000));
  const torch::Tensor g = randn(10000, 2);
  const torch::Tensor d = ada.decode(ada.encode(g));
  const torch::Tensor nz = d.masked_select(d != 0).abs();
  ASSERT_GT(nz.numel(), 0);
  EXPECT_FLOAT_EQ(nz.min().item<float>(), nz.max().item<float>());  // one scale
  // At least one per bin of 500 elements is selected (the bin's max of |G| passes |H| >= gmax
  // when g and G agree in sign, which they do on the first step).
  EXPECT_GE(nz.numel(), 20);
  // First step: G = g, H = 2g, so |g| >= gmax / 2 passes: ~10% of a Gaussian bin of 500.
  EXPECT_LT(ada.last_density(), 0.2);
  // Later steps adapt to the residue: still a small fraction.
  for (int s = 0; s < 10; ++s) ada.encode(randn(10000, 30 + s));
  EXPECT_LT(ada.last_density(), 0.2);
}

/// A small conv + fc network's layout: what per-tensor sends are reported against.
CodecContext conv_fc_context() {
  CodecContext ctx = context(20000 + 16 + 40000 + 100);
  ctx.layers = {LayerSlice{"conv.weight", 0, {16, 50, 5, 5}},
                LayerSlice{"conv.bias", 20000, {16}},
                LayerSlice{"fc.weight", 20016, {100, 400}},
                LayerSlice{"fc.bias", 60016, {100}}};
  return ctx;
}

TEST(TensorSends, AdaCompSplitsItsPayloadByTensorAndSendsFewerOfAnFcLayer) {
  const CodecContext ctx = conv_fc_context();
  AdaCompCodec ada(AdaCompOptions{}, ctx);
  for (int step = 0; step < 4; ++step) {
    const Bytes payload = ada.encode(randn(ctx.numel, 40 + static_cast<std::uint64_t>(step)));
    const std::vector<TensorSend>& sends = ada.last_tensor_sends();
    ASSERT_EQ(sends.size(), ctx.layers.size());
    std::int64_t sent = 0;
    double bytes = 0;
    for (const TensorSend& t : sends) {
      sent += t.sent;
      bytes += t.bytes;
    }
    // Every sent element belongs to one tensor, and every payload byte but the header's and
    // the index coding's fixed fields (u8 coding, u32 k, u32 index bytes, u32 tensors) to one.
    EXPECT_EQ(static_cast<double>(sent), std::round(ada.last_density() * static_cast<double>(ctx.numel)));
    EXPECT_NEAR(bytes, static_cast<double>(payload.size() - kPayloadHeaderSize - 13), 1e-6);
    // Bins of 50 (conv) against 500 (fc): a larger share of the conv weight passes its bins'
    // maxima (the paper's ~40x against ~200x split); on these independent Gaussian steps the
    // gap widens from about 2x as the residue builds up.
    const double conv = static_cast<double>(sends[0].sent) / 20000.0;
    const double fc = static_cast<double>(sends[2].sent) / 40000.0;
    EXPECT_GT(conv, 1.5 * fc) << "step " << step << ": conv " << conv << ", fc " << fc;
  }
  // A layout that does not tile the gradient (a tool's slice) reports nothing.
  AdaCompCodec unknown(AdaCompOptions{}, context(5000));
  unknown.encode(randn(5000, 3));
  EXPECT_TRUE(unknown.last_tensor_sends().empty());
}

TEST(TensorSends, DgcAndSdagcCountTheirSelectionPerTensor) {
  const CodecContext ctx = conv_fc_context();
  const CodecRegistry& registry = CodecRegistry::builtin();
  for (const char* kind : {R"({"kind":"dgc","warmup":false,"density":0.01})", R"({"kind":"sdagc"})"}) {
    auto codec = registry.create(nlohmann::json::parse(kind), ctx);
    const Bytes payload = codec->encode(randn(ctx.numel, 9));
    const std::vector<TensorSend>& sends = codec->last_tensor_sends();
    ASSERT_EQ(sends.size(), ctx.layers.size()) << kind;
    std::int64_t sent = 0;
    double bytes = 0;
    for (const TensorSend& t : sends) {
      sent += t.sent;
      bytes += t.bytes;
      EXPECT_GT(t.sent, 0) << kind;  // DGC: k >= 1 per tensor (biases whole); SDAGC: never starved
    }
    EXPECT_EQ(static_cast<double>(sent), std::round(codec->last_density() * static_cast<double>(ctx.numel))) << kind;
    EXPECT_NEAR(bytes, static_cast<double>(payload.size() - kPayloadHeaderSize), 1e-6) << kind;
  }
  // DGC sends its biases whole and about k = density n of each weight (its threshold is
  // estimated from a sample, so the count is near k, not k).
  auto dgc = registry.create(nlohmann::json::parse(R"({"kind":"dgc","warmup":false,"density":0.01})"), ctx);
  dgc->encode(randn(ctx.numel, 10));
  const std::vector<TensorSend>& d = dgc->last_tensor_sends();
  EXPECT_EQ(d[1].sent, 16);
  EXPECT_EQ(d[3].sent, 100);
  EXPECT_GT(d[0].sent, 100);
  EXPECT_LT(d[0].sent, 300);
  EXPECT_GT(d[2].sent, 200);
  EXPECT_LT(d[2].sent, 600);
  // Through error feedback (a decorator), the inner codec's sends.
  auto wrapped = registry.create(nlohmann::json::parse(R"({"kind":"adacomp","error_feedback":true})"), ctx);
  wrapped->encode(randn(ctx.numel, 11));
  EXPECT_EQ(wrapped->last_tensor_sends().size(), ctx.layers.size());
}

// The abstract names four helpers and the defaults run all four: with 4 workers a gradient of
// norm ~200 is clipped to 5 / sqrt(4) before anything is selected, so what is sent is no
// larger than that; "clip_norm": 0 sends the large values as they are.
TEST(Sdagc, DefaultsClipAndReviseTheLearningRate) {
  const CodecRegistry& registry = CodecRegistry::builtin();
  const CodecContext ctx = context(40000, 0, 4);
  const torch::Tensor g = randn(40000, 3);  // norm sqrt(40000) = 200
  const auto sent_norm = [&](const char* spec) {
    auto codec = registry.create(nlohmann::json::parse(spec), ctx);
    return codec->decode(codec->encode(g)).norm().item<double>();
  };
  EXPECT_LE(sent_norm(R"({"kind":"sdagc"})"), 2.5 * (1 + 1e-5));
  EXPECT_GT(sent_norm(R"({"kind":"sdagc","clip_norm":0})"), 10.0);
  const SdagcOptions defaults;
  EXPECT_EQ(defaults.clip_norm, 5.0);
  EXPECT_TRUE(defaults.lr_revision);
  EXPECT_TRUE(defaults.momentum_compensation);
}

TEST(Sdagc, ThresholdFollowsTheStandardDeviation) {
  SdagcOptions o;
  o.momentum_compensation = false;
  SdagcCodec by_default(o, context(200000));
  by_default.encode(randn(200000, 1));
  // Gaussian: P(|x| >= 2 sigma) = 4.55% at the default lambda 2, P(|x| >= 3 sigma) = 0.27%.
  EXPECT_NEAR(by_default.last_density(), 0.0455, 0.002);
  EXPECT_FALSE(by_default.traits().applies_momentum);
  o.lambda = 3.0;
  SdagcCodec three(o, context(200000));
  three.encode(randn(200000, 1));
  EXPECT_NEAR(three.last_density(), 0.0027, 0.0006);
}

// --------------------------------------------------------------------------------------------
// AdaComp's and SDAGC's encoders are vectorised and fuse their passes; they must send exactly
// what the plain element-by-element algorithm sends. The references below are that algorithm,
// loop for loop (the form the codecs had before they were vectorised), kept here as the
// specification: payload bytes and saved state must match bit for bit, at every kernel level,
// over layer plans with conv and fc tensors, sizes that are not multiples of a vector or a
// bin, zeros, ties, inf and NaN, and several steps so the residual and momentum carry over.
// A fingerprint of all of it is pinned too: it also catches a change of the shared wire code
// that the references reuse.

/// Test gradients from SplitMix64 (no LibTorch or <random> in the loop, so the fingerprint
/// does not depend on their versions): a centred sum of uniforms times a uniform scale (heavier
/// tails than a Gaussian); `zeros` of them exactly 0; `specials` sprinkles +-inf and NaN.
torch::Tensor bytes_test_gradient(std::int64_t n, std::uint64_t seed, double zeros = 0.0,
                                  bool specials = false) {
  SplitMix64 rng(seed);
  const auto uniform = [&rng] { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; };
  torch::Tensor t = torch::empty({n}, torch::kFloat);
  float* p = t.data_ptr<float>();
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = (uniform() + uniform() + uniform() + uniform() - 2.0) * uniform() * 1e-2;
    p[i] = uniform() < zeros ? 0.0f : static_cast<float>(x);
  }
  if (specials && n > 40) {
    p[n / 3] = INFINITY;
    p[n / 2] = -INFINITY;
    p[n - 7] = NAN;
  }
  // Ties: a run of equal magnitudes (AdaComp's |H| >= gmax and SDAGC's |v| >= thr at equality).
  for (std::int64_t i = n / 5; i < std::min(n, n / 5 + 40); ++i) p[i] = (i % 2 ? 1.0f : -1.0f) * 3e-3f;
  return t;
}

std::uint64_t fnv1a(std::uint64_t h, const Bytes& b) {
  for (const std::uint8_t c : b) h = (h ^ c) * 0x100000001b3ULL;
  return (h ^ b.size()) * 0x100000001b3ULL;
}

Bytes float_state(const std::string& codec, const std::vector<std::pair<std::string, std::vector<float>>>& tensors) {
  CodecState st(codec);
  for (const auto& [key, values] : tensors) {
    torch::Tensor t = torch::empty({static_cast<std::int64_t>(values.size())}, torch::kFloat);
    std::copy(values.begin(), values.end(), t.data_ptr<float>());
    st.put_tensor(key, t);
  }
  return st.serialize();
}

/// Reference AdaComp encode: the algorithm of AdaCompCodec.h, one element at a time.
struct ReferenceAdaComp {
  AdaCompOptions options;
  std::vector<LayerSlice> layers;
  std::vector<float> r;

  Bytes encode(const torch::Tensor& grad) {
    const std::int64_t n = grad.numel();
    if (r.empty()) r.assign(static_cast<std::size_t>(n), 0.0f);
    const float* g = grad.data_ptr<float>();
    std::vector<std::uint32_t> indices;
    std::vector<std::uint8_t> negative;
    std::vector<std::pair<std::uint32_t, float>> segments;
    for (const Segment& s : plan_segments(layers, n, false)) {
      const std::int64_t bin = s.dims == 4 ? options.bin_conv : options.bin_fc;
      const std::size_t first = indices.size();
      double gmax_sum = 0.0;
      std::int64_t bins = 0;
      for (std::int64_t b = s.offset; b < s.offset + s.length; b += bin) {
        const std::int64_t e = std::min(b + bin, s.offset + s.length);
        float gmax = 0.0f;
        for (std::int64_t i = b; i < e; ++i) {
          r[i] += g[i];
          gmax = std::max(gmax, std::fabs(r[i]));
        }
        gmax_sum += gmax;
        ++bins;
        if (!(gmax > 0.0f)) continue;
        for (std::int64_t i = b; i < e; ++i) {
          if (r[i] != 0.0f && std::fabs(r[i] + g[i]) >= gmax) indices.push_back(static_cast<std::uint32_t>(i));
        }
      }
      const std::size_t count = indices.size() - first;
      if (count == 0) continue;
      const auto scale = static_cast<float>(gmax_sum / static_cast<double>(bins));
      for (std::size_t j = first; j < indices.size(); ++j) {
        const std::uint32_t i = indices[j];
        const bool neg = r[i] < 0.0f;
        negative.push_back(neg ? 1 : 0);
        r[i] -= neg ? -scale : scale;
      }
      segments.emplace_back(static_cast<std::uint32_t>(count), scale);
    }
    const std::size_t k = indices.size();
    const IndexCoding coding = choose_index_coding(indices.data(), k);
    const std::size_t section = index_section_size(coding, indices.data(), k);
    ByteWriter w;
    write_header(w, CodecId::kAdaComp, AdaCompCodec::kFormatVersion, static_cast<std::uint64_t>(n));
    w.u8(static_cast<std::uint8_t>(coding));
    w.u32(static_cast<std::uint32_t>(k));
    w.u32(static_cast<std::uint32_t>(section));
    w.u32(static_cast<std::uint32_t>(segments.size()));
    for (const auto& [count, scale] : segments) {
      w.u32(count);
      w.f32(scale);
    }
    write_index_section(w, coding, indices.data(), k);
    std::vector<std::uint8_t> bits((k + 7) / 8, 0);
    for (std::size_t j = 0; j < k; ++j) bits[j / 8] |= static_cast<std::uint8_t>(negative[j] << (j % 8));
    w.raw(bits.data(), bits.size());
    return w.take();
  }
};

/// Reference SDAGC encode: the algorithm of SdagcCodec.h, one element at a time (sums in
/// double, in element order).
struct ReferenceSdagc {
  SdagcOptions options;
  std::vector<LayerSlice> layers;
  int workers = 1;
  std::vector<float> u, v;

  Bytes encode(const torch::Tensor& grad) {
    const std::int64_t n = grad.numel();
    if (u.empty()) {
      u.assign(static_cast<std::size_t>(n), 0.0f);
      v.assign(static_cast<std::size_t>(n), 0.0f);
    }
    const float* g = grad.data_ptr<float>();
    float scale = 1.0f;
    if (options.clip_norm > 0.0) {
      double sq = 0.0;
      for (std::int64_t i = 0; i < n; ++i) sq += static_cast<double>(g[i]) * g[i];
      const double limit = options.clip_norm / std::sqrt(static_cast<double>(workers));
      if (std::sqrt(sq) > limit) scale = static_cast<float>(limit / std::sqrt(sq));
    }
    const float m = options.momentum_compensation ? static_cast<float>(options.momentum) : 0.0f;
    for (std::int64_t i = 0; i < n; ++i) {
      if (m == 0.0f) {
        v[i] += scale * g[i];
      } else {
        const float ui = m * u[i] + scale * g[i];
        u[i] = ui;
        v[i] += ui;
      }
    }
    std::vector<std::uint32_t> indices;
    std::vector<float> values;
    for (const Segment& s : plan_segments(layers, n, false)) {
      const float* x = v.data() + s.offset;
      double sum = 0.0;
      double sq = 0.0;
      for (std::int64_t i = 0; i < s.length; ++i) {
        sum += x[i];
        sq += static_cast<double>(x[i]) * x[i];
      }
      const double mean = sum / static_cast<double>(s.length);
      const double var = std::max(0.0, sq / static_cast<double>(s.length) - mean * mean);
      const auto thr = static_cast<float>(options.lambda * std::sqrt(var));
      const std::uint32_t key = std::max<std::uint32_t>(magnitude_key(thr), 1u);
      const std::size_t first = indices.size();
      for (std::int64_t i = 0; i < s.length; ++i) {
        if (magnitude_key(x[i]) >= key) indices.push_back(static_cast<std::uint32_t>(s.offset + i));
      }
      if (indices.size() == first) {
        std::int64_t best = 0;
        for (std::int64_t i = 1; i < s.length; ++i) {
          if (magnitude_key(x[i]) > magnitude_key(x[best])) best = i;
        }
        indices.push_back(static_cast<std::uint32_t>(s.offset + best));
      }
      float revise = 1.0f;
      if (options.lr_revision) {
        double sent_sq = 0.0;
        double u_sq = 0.0;
        for (std::size_t j = first; j < indices.size(); ++j) sent_sq += static_cast<double>(v[indices[j]]) * v[indices[j]];
        for (std::int64_t i = 0; i < s.length; ++i) u_sq += static_cast<double>(u[s.offset + i]) * u[s.offset + i];
        if (sent_sq > u_sq && sent_sq > 0.0) revise = static_cast<float>(std::sqrt(u_sq / sent_sq));
      }
      for (std::size_t j = first; j < indices.size(); ++j) {
        const std::uint32_t i = indices[j];
        const float q = round_to_format(revise * v[i], options.values);
        values.push_back(q);
        v[i] -= q;
        if (m != 0.0f) u[i] = 0.0f;
      }
    }
    return encode_compact_sparse(static_cast<std::uint64_t>(n), indices.data(), values.data(), indices.size(),
                                 options.values);
  }
};

/// Layer plans for the byte tests: {} (one fc-like segment), conv and fc tensors with biases
/// (sizes off every vector width and bin), and a plan that does not tile (one segment).
struct BytesCase {
  const char* name;
  std::int64_t n;
  std::vector<LayerSlice> layers;
};

std::vector<BytesCase> bytes_cases() {
  std::vector<LayerSlice> net = {LayerSlice{"conv1.weight", 0, {6, 3, 5, 5}},      // 450
                                 LayerSlice{"conv1.bias", 450, {6}},
                                 LayerSlice{"conv2.weight", 456, {16, 6, 3, 3}},    // 864
                                 LayerSlice{"conv2.bias", 1320, {16}},
                                 LayerSlice{"fc1.weight", 1336, {120, 1037}},       // 124440
                                 LayerSlice{"fc1.bias", 125776, {120}},
                                 LayerSlice{"fc2.weight", 125896, {10, 120}},       // 1200
                                 LayerSlice{"fc2.bias", 127096, {10}}};
  std::vector<LayerSlice> big = {LayerSlice{"conv.weight", 0, {64, 32, 3, 3}},      // 18432
                                 LayerSlice{"conv.bias", 18432, {64}},
                                 LayerSlice{"fc.weight", 18496, {1001, 307}},       // 307307
                                 LayerSlice{"fc.bias", 325803, {1001}}};
  return {{"one", 1, {}},          {"n7", 7, {}},
          {"n50", 50, {}},         {"n501", 501, {}},
          {"n4099", 4099, {}},     {"n70001", 70001, {}},
          {"n300007", 300007, {}}, {"net", 127106, net},
          {"big", 326804, big},    {"gap", 1000, {LayerSlice{"w", 10, {990}}}}};
}

/// Runs `steps` encodes of `codec` and `reference` on the same gradients; both must give the
/// same payloads and states. Returns the fingerprint of the codec's payloads and states.
template <typename Codec_, typename Reference>
std::uint64_t compare_with_reference(Codec_& codec, Reference& reference, const BytesCase& c, std::uint64_t seed,
                                     const std::string& label, const std::function<Bytes(const Reference&)>& state) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (int step = 0; step < 4; ++step) {
    // Step 2 zeroes half of the gradient (bins and layers with nothing new), step 3 brings inf
    // and NaN on some cases.
    const torch::Tensor g = bytes_test_gradient(c.n, mix_seed(seed, step), step == 2 ? 0.5 : 0.0,
                                                step == 3 && seed % 3 == 0);
    const Bytes got = codec.encode(g);
    const Bytes want = reference.encode(g);
    EXPECT_EQ(got, want) << label << " step " << step;
    EXPECT_EQ(codec.save_state(), state(reference)) << label << " step " << step << " state";
    if (got != want) return 0;
    h = fnv1a(fnv1a(h, got), codec.save_state());
  }
  return h;
}

std::uint64_t adacomp_bytes_fingerprint(const std::string& level) {
  std::uint64_t h = 0;
  for (const BytesCase& c : bytes_cases()) {
    for (const auto& [bin_conv, bin_fc] : {std::pair<std::int64_t, std::int64_t>{50, 500}, {7, 33}, {1, 1}}) {
      CodecContext ctx = context(c.n);
      ctx.layers = c.layers;
      AdaCompOptions o;
      o.bin_conv = bin_conv;
      o.bin_fc = bin_fc;
      AdaCompCodec codec(o, ctx);
      ReferenceAdaComp reference{o, c.layers, {}};
      const std::string label = std::string(c.name) + " bins " + std::to_string(bin_conv) + "/" +
                                std::to_string(bin_fc) + " kernels " + level;
      h = h * 31 + compare_with_reference<AdaCompCodec, ReferenceAdaComp>(
                       codec, reference, c, static_cast<std::uint64_t>(c.n * 7 + bin_fc), label,
                       [](const ReferenceAdaComp& r) { return float_state("adacomp", {{"residual", r.r}}); });
    }
  }
  return h;
}

std::uint64_t sdagc_bytes_fingerprint(const std::string& level) {
  std::uint64_t h = 0;
  for (const BytesCase& c : bytes_cases()) {
    for (int variant = 0; variant < 20; ++variant) {
      CodecContext ctx = context(c.n, 0, 4);
      ctx.layers = c.layers;
      SdagcOptions o;
      o.clip_norm = (variant & 1) ? 0.05 : 0.0;
      o.lr_revision = (variant & 2) != 0;
      o.values = (variant & 4) ? ValueFormat::kFp16 : ValueFormat::kFp32;
      o.momentum_compensation = (variant & 8) == 0;
      o.lambda = variant < 16 ? 3.0 : (variant == 16 ? 0.5 : (variant == 17 ? 1.5 : (variant == 18 ? 5.0 : 40.0)));
      SdagcCodec codec(o, ctx);
      ReferenceSdagc reference{o, c.layers, 4, {}, {}};
      const std::string label = std::string(c.name) + " variant " + std::to_string(variant) + " kernels " + level;
      h = h * 31 + compare_with_reference<SdagcCodec, ReferenceSdagc>(
                       codec, reference, c, static_cast<std::uint64_t>(c.n * 131 + variant), label,
                       [](const ReferenceSdagc& r) { return float_state("sdagc", {{"u", r.u}, {"v", r.v}}); });
    }
  }
  return h;
}

// Fingerprints of every payload and state above, recorded from the element-by-element encoders
// (the references' algorithm) with `sparsifiers_test --gtest_filter='*SameBytes*'`, which
// prints them when they differ.
constexpr std::uint64_t kAdaCompBytesFingerprint = 0x58457f5a7e00774bULL;
constexpr std::uint64_t kSdagcBytesFingerprint = 0x9e486ac30b87f9c0ULL;

TEST(AdaComp, SameBytesAsTheElementByElementAlgorithm) {
  for (const KernelLevel level : {KernelLevel::kNative, KernelLevel::kAvx2, KernelLevel::kPortable}) {
    use_kernels(level);
    const std::string name = std::to_string(static_cast<int>(level));
    const std::uint64_t h = adacomp_bytes_fingerprint(name);
    use_kernels(KernelLevel::kNative);
    EXPECT_EQ(h, kAdaCompBytesFingerprint) << "kernel level " << name << std::hex << ": 0x" << h;
  }
}

TEST(Sdagc, SameBytesAsTheElementByElementAlgorithm) {
  for (const KernelLevel level : {KernelLevel::kNative, KernelLevel::kAvx2, KernelLevel::kPortable}) {
    use_kernels(level);
    const std::string name = std::to_string(static_cast<int>(level));
    const std::uint64_t h = sdagc_bytes_fingerprint(name);
    // Every |v| exactly at the threshold (+-c with mean 0 and lambda 1: lambda * std = c): all
    // of them reach it.
    for (const std::int64_t n : {1000, 70000}) {
      SdagcOptions o;
      o.lambda = 1.0;
      o.momentum_compensation = false;
      SdagcCodec codec(o, context(n));
      ReferenceSdagc reference{o, {}, 1, {}, {}};
      torch::Tensor g = torch::full({n}, 0.25f);
      g.index_put_({torch::indexing::Slice(1, torch::indexing::None, 2)}, -0.25f);
      EXPECT_EQ(codec.encode(g), reference.encode(g)) << n << " kernels " << name;
      EXPECT_EQ(codec.last_density(), 1.0) << n << " kernels " << name;
    }
    use_kernels(KernelLevel::kNative);
    EXPECT_EQ(h, kSdagcBytesFingerprint) << "kernel level " << name << std::hex << ": 0x" << h;
  }
}

}  // namespace
}  // namespace gradwire
