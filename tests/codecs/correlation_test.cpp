// Codecs that exploit correlation (PowerSGD, GradiVeQ) and the multi-round exchange that
// carries them through the simulated collectives.
#include <limits>
#include <random>
#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "TestNames.h"
#include "codecs/CodecRegistry.h"
#include "codecs/CodecState.h"
#include "codecs/DenseCodec.h"
#include "codecs/lowrank/GradiVeQCodec.h"
#include "codecs/lowrank/PowerSgdCodec.h"
#include "common/ConfigError.h"
#include "NetworkFixture.h"
#include "nodes/schemes/ParameterServer.h"
#include "nodes/schemes/RingAllReduce.h"
#include "sim/engine/Engine.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {
namespace {

// Two weight matrices and two biases: a small MLP's layout.
std::vector<LayerSlice> mlp_layout() {
  return {LayerSlice{"fc1.weight", 0, {24, 20}}, LayerSlice{"fc1.bias", 480, {24}},
          LayerSlice{"fc2.weight", 504, {10, 24}}, LayerSlice{"fc2.bias", 744, {10}}};
}
constexpr std::int64_t kMlpNumel = 754;

/// Runs `steps` synchronous steps of `codecs` (one per worker; the last is the server's for a
/// PS) through a real simulated collective; returns every worker's update per step.
std::vector<std::vector<at::Tensor>> run_steps(const std::string& kind,
                                               std::vector<std::unique_ptr<Codec>>& codecs,
                                               const std::vector<std::vector<at::Tensor>>& grads,
                                               std::vector<std::uint64_t>* payload_bytes = nullptr,
                                               std::uint64_t* wire_bytes = nullptr) {
  const int n = static_cast<int>(grads[0].size());
  const bool ps = kind == "ps";
  testing::StarWithMessengers star(EthernetConfig(), n + (ps ? 1 : 0));
  std::vector<Codec*> raw;
  for (int r = 0; r < n; ++r) raw.push_back(codecs[r].get());
  std::unique_ptr<Collective> collective;
  if (ps) {
    collective = std::make_unique<ParameterServer>(star.raw(0, n), ns3::PeekPointer(star.messengers[n]),
                                                   raw, codecs[n].get());
  } else {
    collective = std::make_unique<RingAllReduce>(star.raw(0, n), raw);
  }
  std::vector<std::vector<at::Tensor>> updates(grads.size(), std::vector<at::Tensor>(n));
  std::function<void(int, std::size_t)> contribute = [&](int r, std::size_t step) {
    collective->contribute(r, static_cast<std::int64_t>(step), grads[step][r],
                           [&, r, step](const at::Tensor& update) {
                             updates[step][r] = update.clone();
                             if (payload_bytes && r == 0) payload_bytes->push_back(collective->last_payload_bytes(0));
                             if (step + 1 < grads.size()) {
                               // The next step starts a little later, in its own event.
                               ns3::Simulator::Schedule(ns3::MicroSeconds(100 + 37 * r),
                                                        [&, r, step] { contribute(r, step + 1); });
                             }
                           });
  };
  for (int r = 0; r < n; ++r) {
    ns3::Simulator::Schedule(ns3::MicroSeconds(10 * r), [&, r] { contribute(r, 0); });
  }
  ns3::Simulator::Run();
  if (wire_bytes) {
    *wire_bytes = 0;
    for (auto& m : star.messengers) *wire_bytes += m->bytes_sent();
  }
  return updates;
}

std::vector<std::vector<at::Tensor>> random_steps(int steps, int n, std::int64_t numel,
                                                  std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<std::vector<at::Tensor>> g(steps);
  for (auto& step : g) {
    for (int r = 0; r < n; ++r) step.push_back(torch::randn({numel}));
  }
  return g;
}

std::vector<std::unique_ptr<Codec>> make(const nlohmann::json& spec, int n, std::int64_t numel,
                                         std::vector<LayerSlice> layers) {
  const auto resolved = CodecRegistry::builtin().resolve(spec, "codec");
  std::vector<std::unique_ptr<Codec>> codecs;
  for (int r = 0; r <= n; ++r) {
    codecs.push_back(CodecRegistry::builtin().create(
        resolved, CodecContext{r < n ? r : -1, n, 7, numel, layers, 0}));
  }
  return codecs;
}

/// PowerSGD computed centrally on the stacked gradients of all workers, written independently
/// of the codec: QR (Householder) instead of Gram-Schmidt, explicit sums over workers.
struct CentralPowerSgd {
  std::vector<at::Tensor> q;       // per matrix, warm start
  std::vector<at::Tensor> errors;  // per worker, flat
  at::Tensor step(const std::vector<at::Tensor>& grads, const std::vector<LayerSlice>& layout,
                  const std::vector<bool>& compressed, int rank) {
    const int n = static_cast<int>(grads.size());
    const std::int64_t numel = grads[0].numel();
    if (errors.empty()) errors.assign(n, torch::zeros({numel}));
    std::vector<at::Tensor> m;
    for (int r = 0; r < n; ++r) m.push_back(grads[r] + errors[r]);
    at::Tensor update = torch::zeros({numel});
    std::size_t mi = 0;
    for (std::size_t l = 0; l < layout.size(); ++l) {
      const auto& layer = layout[l];
      if (!compressed[l]) {
        at::Tensor sum = torch::zeros({layer.numel()});
        for (int r = 0; r < n; ++r) sum += grads[r].narrow(0, layer.offset, layer.numel());
        update.narrow(0, layer.offset, layer.numel()).copy_(sum / n);
        continue;
      }
      const std::int64_t rows = layer.shape[0], cols = layer.numel() / rows;
      auto mat = [&](int r) { return m[r].narrow(0, layer.offset, layer.numel()).view({rows, cols}); };
      at::Tensor p = torch::zeros({rows, rank});
      for (int r = 0; r < n; ++r) p += mat(r).mm(q[mi]);
      p = std::get<0>(torch::linalg_qr(p));
      at::Tensor qsum = torch::zeros({cols, rank});
      for (int r = 0; r < n; ++r) qsum += mat(r).t().mm(p);
      q[mi] = qsum;
      update.narrow(0, layer.offset, layer.numel()).copy_((p.mm(qsum.t()) / n).reshape({-1}));
      ++mi;
    }
    for (int r = 0; r < n; ++r) {
      errors[r] = m[r] - update;
      for (std::size_t l = 0; l < layout.size(); ++l) {
        if (!compressed[l]) errors[r].narrow(0, layout[l].offset, layout[l].numel()).zero_();
      }
    }
    return update;
  }
};

class PowerSgdCollective : public ::testing::TestWithParam<std::string> {};

TEST_P(PowerSgdCollective, EqualsTheCentralComputationIncludingErrorBuffers) {
  const int n = 4, rank = 2, steps = 4;
  const auto layout = mlp_layout();
  auto codecs = make({{"kind", "powersgd"}, {"rank", rank}}, n, kMlpNumel, layout);
  // Both matrices compress ((24+20)*2*2 < 480, (10+24)*2*2 < 240); biases travel dense.
  const std::vector<bool> compressed{true, false, true, false};
  // A common starting Q, loaded into every codec and the reference.
  torch::manual_seed(3);
  CentralPowerSgd central;
  central.q = {std::get<0>(torch::linalg_qr(torch::randn({20, rank}))),
               std::get<0>(torch::linalg_qr(torch::randn({24, rank})))};
  CodecState state("powersgd");
  state.put_u64("step", 0);
  state.put_tensor("q0", central.q[0].reshape({-1}));
  state.put_tensor("q1", central.q[1].reshape({-1}));
  for (auto& c : codecs) c->load_state(state.serialize());

  const auto grads = random_steps(steps, n, kMlpNumel, 11);
  std::vector<std::uint64_t> payload;
  std::uint64_t wire = 0;
  const auto updates = run_steps(GetParam(), codecs, grads, &payload, &wire);
  for (int s = 0; s < steps; ++s) {
    const at::Tensor expected = central.step(grads[s], layout, compressed, rank);
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(updates[s][r].defined()) << "step " << s << " worker " << r;
      EXPECT_TRUE(torch::allclose(updates[s][r], expected, 1e-4, 1e-5))
          << "step " << s << " worker " << r << " max diff "
          << (updates[s][r] - expected).abs().max().item<float>();
    }
  }
  for (int r = 0; r < n; ++r) {
    const auto& codec = dynamic_cast<const PowerSgdCodec&>(*codecs[r]);
    EXPECT_TRUE(torch::allclose(codec.error(), central.errors[r], 1e-4, 1e-5)) << "worker " << r;
  }
  // Each step sends P (+ dense biases) then Q, every round as dense float32.
  const std::int64_t round0 = (24 + 10) * rank + 24 + 10;
  const std::int64_t round1 = (20 + 24) * rank;
  const std::uint64_t dense_header = DenseCodec::payload_size(0);
  ASSERT_EQ(payload.size(), static_cast<std::size_t>(steps));
  const std::uint64_t chunks = GetParam() == "ring" ? n : 1;  // the ring encodes n chunks per round
  for (std::uint64_t p : payload) {
    EXPECT_EQ(p, 2 * chunks * dense_header + 4 * static_cast<std::uint64_t>(round0 + round1));
  }
  if (GetParam() == "ring") {
    // Every chunk of a round travels 2(n-1) hops (reduce-scatter + all-gather), one 32-byte
    // frame each: the wire carries exactly the declared rounds.
    std::uint64_t per_step = 0;
    for (std::int64_t floats : {round0, round1}) {
      for (int c = 0; c < n; ++c) {
        const std::int64_t len = floats * (c + 1) / n - floats * c / n;
        per_step += 2 * (n - 1) * (32 + dense_header + 4 * static_cast<std::uint64_t>(len));
      }
    }
    EXPECT_EQ(wire, per_step * steps);
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, PowerSgdCollective, ::testing::Values("ring", "ps"),
                         [](const auto& info) { return info.param; });

TEST(PowerSgd, SinglePayloadRoundTripsAndRejectsCorruption) {
  const auto layout = mlp_layout();
  auto codecs = make({{"kind", "powersgd"}, {"rank", 3}}, 1, kMlpNumel, layout);
  torch::manual_seed(5);
  const at::Tensor g = torch::randn({kMlpNumel});
  const Bytes payload = codecs[0]->encode(g);
  const auto& codec = dynamic_cast<const PowerSgdCodec&>(*codecs[0]);
  EXPECT_EQ(payload.size(), 12u + 4u + 4u * static_cast<std::size_t>(codec.compressed_floats()));
  const at::Tensor decoded = codecs[1]->decode(payload);
  // Error feedback: what was sent plus what was kept is what came in.
  EXPECT_TRUE(torch::allclose(decoded + codec.error(), g, 1e-4, 1e-5));
  // Biases are exact.
  EXPECT_TRUE(torch::allclose(decoded.narrow(0, 480, 24), g.narrow(0, 480, 24)));
  Bytes truncated(payload.begin(), payload.end() - 3);
  EXPECT_THROW(codecs[1]->decode(truncated), DecodeError);
  Bytes wrong_rank = payload;
  wrong_rank[12] = 7;
  EXPECT_THROW(codecs[1]->decode(wrong_rank), DecodeError);
  Bytes extra = payload;
  extra.push_back(0);
  EXPECT_THROW(codecs[1]->decode(extra), DecodeError);
}

TEST(PowerSgd, NonFiniteGradientsAreRefusedWhereTheyEnter) {
  // Factors of a matrix holding a NaN are all NaN; the decoder refuses them, so the encoder
  // must not produce them.
  const auto layout = mlp_layout();
  auto codecs = make({{"kind", "powersgd"}, {"rank", 2}}, 1, kMlpNumel, layout);
  at::Tensor g = torch::randn({kMlpNumel});
  g[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(codecs[0]->encode(g), std::invalid_argument);
  g[7] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(codecs[0]->encode(g), std::invalid_argument);
  g[7] = 1.0f;
  EXPECT_NO_THROW(codecs[1]->decode(codecs[0]->encode(g)));
}

TEST(PowerSgd, RegistryRulesAndDenseStart) {
  const auto& reg = CodecRegistry::builtin();
  EXPECT_TRUE(reg.resolve({{"kind", "powersgd"}}, "codec")["error_feedback"].get<bool>());
  EXPECT_THROW(reg.resolve({{"kind", "powersgd"}, {"zstd", true}}, "codec"), ConfigError);
  // start_step: dense all-reduce before it, compressed after.
  auto codecs = make({{"kind", "powersgd"}, {"start_step", 2}}, 2, kMlpNumel, mlp_layout());
  const auto grads = random_steps(3, 2, kMlpNumel, 2);
  std::vector<std::uint64_t> payload;
  const auto updates = run_steps("ring", codecs, grads, &payload);
  EXPECT_TRUE(torch::allclose(updates[0][0], (grads[0][0] + grads[0][1]) / 2, 1e-5, 1e-6));
  EXPECT_GT(payload[0], payload[2] * 2);
  EXPECT_EQ(codecs[0]->last_density(),
            static_cast<double>(dynamic_cast<PowerSgdCodec&>(*codecs[0]).compressed_floats()) / kMlpNumel);
}

TEST(PowerSgd, OrthogonalizationEpsilonIsDeclaredWithPyTorchsDefaultZero) {
  const auto& reg = CodecRegistry::builtin();
  const auto resolved = reg.resolve({{"kind", "powersgd"}}, "codec");
  ASSERT_TRUE(resolved.contains("orthogonalization_epsilon"));
  EXPECT_EQ(resolved["orthogonalization_epsilon"].get<double>(), 0.0);
  EXPECT_NO_THROW(
      reg.resolve({{"kind", "powersgd"}, {"orthogonalization_epsilon", 1e-8}}, "codec"));
  EXPECT_THROW(reg.resolve({{"kind", "powersgd"}, {"orthogonalization_epsilon", -1e-8}}, "codec"),
               ConfigError);
}

/// One worker's PowerSGD update of M = s u v^T (20 x 30, |u| = |v| = 1) with the initial Q
/// set to v, so that P = M Q has norm s exactly.
at::Tensor rank_one_update(double s, const nlohmann::json& extra, at::Tensor* gradient = nullptr) {
  const std::vector<LayerSlice> layout{LayerSlice{"w", 0, {20, 30}}};
  nlohmann::json spec = {{"kind", "powersgd"}, {"rank", 1}};
  spec.update(extra);
  auto codecs = make(spec, 1, 600, layout);
  torch::manual_seed(21);
  const at::Tensor u = torch::randn({20});
  const at::Tensor v = torch::randn({30});
  const at::Tensor un = u / u.norm();
  const at::Tensor vn = v / v.norm();
  const at::Tensor g = (s * torch::outer(un, vn)).reshape({-1}).contiguous();
  CodecState state("powersgd");
  state.put_u64("step", 0);
  state.put_tensor("q0", vn);
  codecs[0]->load_state(state.serialize());
  if (gradient != nullptr) *gradient = g;
  return codecs[1]->decode(codecs[0]->encode(g));
}

TEST(PowerSgd, SmallGradientsKeepTheirSizeWithEpsilonZero) {
  // Epsilon 0 (the default): a rank-1 gradient comes back whole at any scale.
  for (double s : {6.6e-7, 6e-8, 1e-12}) {
    at::Tensor g;
    const at::Tensor update = rank_one_update(s, nlohmann::json::object(), &g);
    EXPECT_TRUE(torch::allclose(update, g, 1e-4, 0.0)) << s << " ratio "
        << (update.norm() / g.norm()).item<double>();
  }
  // A fixed 1e-8 shrinks the update by (s / (s + 1e-8))^2: 3% at 6.6e-7, 26% at 6e-8.
  for (double s : {6.6e-7, 6e-8}) {
    at::Tensor g;
    const at::Tensor update = rank_one_update(s, {{"orthogonalization_epsilon", 1e-8}}, &g);
    const double shrink = (s / (s + 1e-8)) * (s / (s + 1e-8));
    EXPECT_NEAR((update.norm() / g.norm()).item<double>(), shrink, 1e-4) << s;
  }
}

TEST(PowerSgd, AllZeroColumnsBecomeZerosWithEpsilonZero) {
  // A layer with a zero gradient makes P a zero matrix; with epsilon 0 its columns become
  // zeros instead of 0 / 0, so the update is exactly 0 and the payload decodes (finite).
  const auto layout = mlp_layout();
  auto codecs = make({{"kind", "powersgd"}, {"rank", 2}}, 1, kMlpNumel, layout);
  torch::manual_seed(8);
  at::Tensor g = torch::randn({kMlpNumel});
  g.narrow(0, 0, 480).zero_();  // fc1.weight
  const at::Tensor update = codecs[1]->decode(codecs[0]->encode(g));
  EXPECT_TRUE(torch::isfinite(update).all().item<bool>());
  EXPECT_TRUE(torch::equal(update.narrow(0, 0, 480), torch::zeros({480})));
  EXPECT_GT(update.narrow(0, 504, 240).abs().max().item<float>(), 0.0f);
  // A rank-1 matrix at rank 2 with Q = [v, w], w orthogonal to v: P's second column is exactly
  // zero and contributes nothing.
  const std::vector<LayerSlice> one{LayerSlice{"w", 0, {10, 10}}};
  auto small = make({{"kind", "powersgd"}, {"rank", 2}}, 1, 100, one);
  ASSERT_EQ(dynamic_cast<const PowerSgdCodec&>(*small[0]).compressed_floats(), 40);
  const at::Tensor m = torch::outer(torch::linspace(-1.0, 2.0, 10), torch::eye(10)[0]).contiguous();
  at::Tensor q = torch::zeros({10, 2});
  q[0][0] = 1.0f;
  q[1][1] = 1.0f;
  CodecState state("powersgd");
  state.put_u64("step", 0);
  state.put_tensor("q0", q.reshape({-1}));
  small[0]->load_state(state.serialize());
  const at::Tensor out = small[1]->decode(small[0]->encode(m.reshape({-1})));
  EXPECT_TRUE(torch::allclose(out, m.reshape({-1}), 1e-6, 1e-7)) << out;
}

at::Tensor orthonormal(std::int64_t d, std::int64_t k, std::uint64_t seed) {
  torch::manual_seed(seed);
  return std::get<0>(torch::linalg_qr(torch::randn({d, k})));
}

TEST(GradiVeQ, SumOfCodesDecodesToTheCodeOfTheSum) {
  GradiVeQCodec::Options o;
  o.slice = 16;
  o.components = 4;
  o.warmup_steps = 1;
  o.refit_every = 0;
  GradiVeQCodec codec(o);
  codec.observe_aggregate(torch::zeros({1000}));  // past the warm-up (its fit is replaced below)
  codec.set_basis(orthonormal(16, 4, 1));
  ASSERT_TRUE(codec.compressing());
  torch::manual_seed(2);
  const at::Tensor a = torch::randn({1000}), b = torch::randn({1000});  // 1000 = 62.5 slices
  Bytes sum = codec.encode(a);
  codec.accumulate(sum, codec.encode(b));
  const at::Tensor decoded_sum = codec.decode(sum);
  const at::Tensor decoded_of_sum = codec.decode(codec.encode(a + b));
  EXPECT_TRUE(torch::allclose(decoded_sum, decoded_of_sum, 1e-4, 1e-5));
  // Decoding projects each slice onto the basis: U U^T g.
  const at::Tensor u = orthonormal(16, 4, 1);
  at::Tensor padded = torch::zeros({63 * 16});
  padded.narrow(0, 0, 1000).copy_(a);
  const at::Tensor projected = padded.view({63, 16}).mm(u).mm(u.t()).reshape({-1}).narrow(0, 0, 1000);
  EXPECT_TRUE(torch::allclose(codec.decode(codec.encode(a)), projected, 1e-4, 1e-5));
  EXPECT_EQ(codec.encode(a).size(), 12u + 21u + 4u * 63u * 4u);
  EXPECT_DOUBLE_EQ(codec.last_density(), 63.0 * 4.0 / 1000.0);  // code floats per element
}

TEST(GradiVeQ, RejectsCorruptPayloads) {
  GradiVeQCodec::Options o;
  o.slice = 8;
  o.components = 2;
  GradiVeQCodec codec(o);
  torch::manual_seed(3);
  const Bytes dense = codec.encode(torch::randn({100}));  // before any fit: dense slices
  EXPECT_EQ(codec.decode(dense).numel(), 100);
  Bytes bad_mode = dense;
  bad_mode[12] = 9;
  EXPECT_THROW(codec.decode(bad_mode), DecodeError);
  Bytes bad_range = dense;
  bad_range[17] = 200;  // slice count beyond the gradient
  EXPECT_THROW(codec.decode(bad_range), DecodeError);
  Bytes short_payload(dense.begin(), dense.end() - 4);
  EXPECT_THROW(codec.decode(short_payload), DecodeError);
  Bytes coefficients = dense;
  coefficients[12] = 1;  // claims coefficients, but no basis has been fitted
  EXPECT_THROW(codec.decode(coefficients), DecodeError);
  for (std::size_t cut = 0; cut < 33; ++cut) {
    EXPECT_THROW(codec.decode(Bytes(dense.begin(), dense.begin() + cut)), DecodeError) << cut;
  }
  // A summand claiming QSGD-coded coefficients, which this codec never writes, is corrupt
  // bytes from a peer (DecodeError), not a codec that cannot sum (std::logic_error).
  Bytes quantized = dense;
  quantized[12] = 2;
  Bytes acc = dense;
  EXPECT_THROW(codec.accumulate(acc, quantized), DecodeError);
  EXPECT_THROW(codec.accumulate(quantized, dense), DecodeError);
}

TEST(GradiVeQ, RingFitsOneBasisEverywhereThenSumsCoefficients) {
  const int n = 4;
  const std::int64_t numel = 63 * 32;  // whole slices: a truncated last slice leaves the subspace
  auto codecs = make({{"kind", "gradiveq"}, {"slice", 32}, {"components", 4}, {"warmup_steps", 3},
                      {"refit_every", 0}},
                     n, numel, {});
  // Gradients living in a 4-dimensional subspace of slice space: the fitted basis captures
  // them exactly, so compressed steps lose nothing.
  const at::Tensor u = orthonormal(32, 4, 9);
  torch::manual_seed(10);
  std::vector<std::vector<at::Tensor>> grads(5);
  for (auto& step : grads) {
    for (int r = 0; r < n; ++r) {
      const std::int64_t slices = (numel + 31) / 32;
      step.push_back(torch::randn({slices, 4}).mm(u.t()).reshape({-1}).narrow(0, 0, numel).contiguous());
    }
  }
  std::vector<std::uint64_t> payload;
  const auto updates = run_steps("ring", codecs, grads, &payload);
  for (std::size_t s = 0; s < grads.size(); ++s) {
    at::Tensor mean = torch::zeros({numel});
    for (int r = 0; r < n; ++r) mean += grads[s][r];
    mean /= n;
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(torch::allclose(updates[s][r], mean, 1e-3, 1e-4)) << "step " << s << " worker " << r;
    }
  }
  // Steps 0-2 dense (the fit happens on their aggregates), 3-4 coefficients: 8x fewer floats.
  EXPECT_GT(payload[0], 7 * payload[3]);
  EXPECT_LT(payload[0], 9 * payload[3]);
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(dynamic_cast<GradiVeQCodec&>(*codecs[r]).compressing());
  }
  // Every worker (and the spare server instance, untouched here) agrees on the payloads:
  const Bytes a = codecs[0]->encode(grads[4][0]);
  const Bytes b = codecs[3]->encode(grads[4][0]);
  EXPECT_EQ(a, b) << "workers fitted different bases";
}

// A conv kernel, its bias and a weight matrix whose gradient slices live in different
// 2-dimensional subspaces of slice space (16 elements per slice): the paper's reason for a
// basis per layer.
struct TwoSubspaces {
  static constexpr std::int64_t kD = 16, kK = 2;
  std::vector<LayerSlice> layers = {LayerSlice{"conv.weight", 0, {8, 4, 3, 3}},   // 288: 18 slices
                                    LayerSlice{"conv.bias", 288, {8}},
                                    LayerSlice{"fc.weight", 296, {10, 40}}};       // 400: 25 slices
  std::int64_t numel = 696;
  at::Tensor conv_basis = orthonormal(kD, kK, 21);
  at::Tensor fc_basis = orthonormal(kD, kK, 22);

  /// A gradient with every conv slice in span(conv_basis), every fc slice in span(fc_basis).
  at::Tensor gradient(std::uint64_t seed) const {
    torch::manual_seed(seed);
    at::Tensor g = torch::empty({numel});
    g.narrow(0, 0, 288).copy_(torch::randn({18, kK}).mm(conv_basis.t()).reshape({-1}));
    g.narrow(0, 288, 8).copy_(torch::randn({8}));
    g.narrow(0, 296, 400).copy_(torch::randn({25, kK}).mm(fc_basis.t()).reshape({-1}));
    return g;
  }
};

std::unique_ptr<GradiVeQCodec> fitted_on(const TwoSubspaces& w, bool per_layer) {
  GradiVeQCodec::Options o;
  o.slice = TwoSubspaces::kD;
  o.components = TwoSubspaces::kK;
  o.warmup_steps = 3;
  o.refit_every = 0;
  o.per_layer = per_layer;
  auto codec = std::make_unique<GradiVeQCodec>(o, w.layers, w.numel);
  for (int step = 0; step < 3; ++step) codec->observe_aggregate(w.gradient(100 + step));
  return codec;
}

TEST(GradiVeQ, PerLayerBasesReconstructLayersInDifferentSubspacesExactly) {
  const TwoSubspaces w;
  const auto per_layer_owner = fitted_on(w, true);
  GradiVeQCodec& per_layer = *per_layer_owner;
  ASSERT_TRUE(per_layer.compressing());
  // The weights get bases; the bias travels as its 8 elements.
  const std::vector<std::pair<std::int64_t, std::int64_t>> compressed{{0, 288}, {296, 400}};
  EXPECT_EQ(per_layer.compressed_layers(w.numel), compressed);
  // Each fitted basis spans its layer's subspace: U U^T is the projector onto it.
  const at::Tensor conv_projector = w.conv_basis.mm(w.conv_basis.t());
  EXPECT_TRUE(torch::allclose(per_layer.basis(0).mm(per_layer.basis(0).t()), conv_projector, 1e-4, 1e-5));
  EXPECT_FALSE(torch::allclose(per_layer.basis(1).mm(per_layer.basis(1).t()), conv_projector, 1e-2, 1e-2));

  const at::Tensor g = w.gradient(7);
  const Bytes payload = per_layer.encode(g);
  EXPECT_TRUE(torch::allclose(per_layer.decode(payload), g, 1e-4, 1e-5));
  // Header, prefix, 18 + 25 slices of 2 coefficients and the bias's 8 floats.
  EXPECT_EQ(payload.size(), 12u + 21u + 4u * ((18 + 25) * 2 + 8));
  EXPECT_DOUBLE_EQ(per_layer.last_density(), (43.0 * 2 + 8) / 696.0);

  // One basis for the flat gradient cannot hold two 2-dimensional subspaces in 2 directions.
  const auto global_owner = fitted_on(w, false);
  GradiVeQCodec& global = *global_owner;
  ASSERT_TRUE(global.compressing());
  EXPECT_EQ(global.compressed_layers(w.numel).size(), 1u);
  const at::Tensor error = global.decode(global.encode(g)) - g;
  EXPECT_GT(error.norm().item<double>(), 0.3 * g.norm().item<double>());
  // A peer with the other plan is refused, both ways.
  EXPECT_THROW(global.decode(payload), DecodeError);
  EXPECT_THROW(per_layer.decode(global.encode(g)), DecodeError);
}

TEST(GradiVeQ, PerLayerCodesAddInTheCompressedDomainAcrossChunks) {
  const TwoSubspaces w;
  const auto a_owner = fitted_on(w, true);
  GradiVeQCodec& a = *a_owner;
  const auto b_owner = fitted_on(w, true);
  GradiVeQCodec& b = *b_owner;
  torch::manual_seed(30);
  const at::Tensor x = torch::randn({w.numel}), y = torch::randn({w.numel});  // not in the subspaces
  // Ring chunks: whole slices, consecutive, covering the gradient; summed chunk by chunk.
  for (const std::vector<std::int64_t>& bounds :
       {std::vector<std::int64_t>{0, w.numel}, {0, 232, 464, w.numel}, {0, 100, 200, 300, 400, 500, 600, w.numel}}) {
    std::vector<Bytes> sums = a.encode_chunks(x, bounds);
    const std::vector<Bytes> others = b.encode_chunks(y, bounds);
    ASSERT_EQ(sums.size(), bounds.size() - 1);
    std::vector<at::Tensor> parts;
    for (std::size_t c = 0; c < sums.size(); ++c) {
      a.accumulate(sums[c], ByteSpan(others[c]));
      parts.push_back(b.decode(sums[c]));
    }
    const at::Tensor decoded_sum = at::cat(parts);
    ASSERT_EQ(decoded_sum.numel(), w.numel);
    // The code is linear: the sum of codes decodes to the projection of the sum, layer by
    // layer (the bias exactly).
    const at::Tensor of_sum = a.decode(a.encode(x + y));
    EXPECT_TRUE(torch::allclose(decoded_sum, of_sum, 1e-4, 1e-5)) << bounds.size() - 1 << " chunks";
    at::Tensor expected = (x + y).clone();
    expected.narrow(0, 0, 288).copy_((x + y).narrow(0, 0, 288).view({18, 16}).mm(a.basis(0)).mm(a.basis(0).t()).reshape({-1}));
    expected.narrow(0, 296, 400).copy_((x + y).narrow(0, 296, 400).view({25, 16}).mm(a.basis(1)).mm(a.basis(1).t()).reshape({-1}));
    EXPECT_TRUE(torch::allclose(decoded_sum, expected, 1e-4, 1e-5));
    if (bounds.size() == 4) {
      // Balanced by code size: no chunk carries more than its share plus one slice's code.
      for (const Bytes& c : a.encode_chunks(x, bounds)) EXPECT_LE(c.size(), 33u + 4u * (94 / 3 + 16)) << c.size();
    }
  }
}

TEST(GradiVeQ, RingSumsPerLayerCoefficientsHopByHop) {
  const TwoSubspaces w;
  const int n = 4;
  auto codecs = make({{"kind", "gradiveq"}, {"slice", 16}, {"components", 2}, {"warmup_steps", 3},
                      {"refit_every", 0}},
                     n, w.numel, w.layers);
  std::vector<std::vector<at::Tensor>> grads(5);
  for (std::size_t s = 0; s < grads.size(); ++s) {
    for (int r = 0; r < n; ++r) grads[s].push_back(w.gradient(1000 + 10 * s + static_cast<std::uint64_t>(r)));
  }
  std::vector<std::uint64_t> payload;
  const auto updates = run_steps("ring", codecs, grads, &payload);
  for (std::size_t s = 0; s < grads.size(); ++s) {
    at::Tensor mean = torch::zeros({w.numel});
    for (int r = 0; r < n; ++r) mean += grads[s][r];
    mean /= n;
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(torch::allclose(updates[s][r], mean, 1e-3, 1e-4)) << "step " << s << " worker " << r;
    }
  }
  // Steps 0-2 dense, then 94 floats instead of 696 (plus the chunks' prefixes).
  EXPECT_GT(payload[0], 5 * payload[3]);
}

TEST(GradiVeQ, PerLayerPayloadsRejectCorruptBytes) {
  const TwoSubspaces w;
  const auto codec_owner = fitted_on(w, true);
  GradiVeQCodec& codec = *codec_owner;
  const Bytes good = codec.encode(w.gradient(8));
  for (std::size_t cut = 0; cut < good.size(); cut += (cut < 40 ? 1 : 37)) {
    EXPECT_THROW(codec.decode(Bytes(good.begin(), good.begin() + cut)), DecodeError) << cut;
  }
  Bytes layout = good;
  layout[29] ^= 0x40;  // the layout checksum
  EXPECT_THROW(codec.decode(layout), DecodeError);
  Bytes slice_length = good;
  slice_length[21] = 17;  // d
  EXPECT_THROW(codec.decode(slice_length), DecodeError);
  Bytes numel = good;
  numel[4] ^= 0x01;  // another element count: another plan, and no basis for it
  EXPECT_THROW(codec.decode(numel), DecodeError);
  Bytes huge = good;
  huge[10] = 0x7f;  // 2^50-odd elements
  EXPECT_THROW(codec.decode(huge), DecodeError);
  Bytes longer = good;
  longer.push_back(0);
  EXPECT_THROW(codec.decode(longer), DecodeError);
  Bytes acc = good;
  EXPECT_THROW(codec.accumulate(acc, ByteSpan(layout)), DecodeError);
  EXPECT_THROW(codec.accumulate(acc, ByteSpan(longer)), DecodeError);
  // Random byte flips: a decode error or a tensor of the gradient's length, never a crash.
  std::mt19937 rng(4);
  for (int trial = 0; trial < 500; ++trial) {
    Bytes m = good;
    for (int f = 0; f < 3; ++f) m[rng() % m.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    try {
      EXPECT_LE(codec.decode(m).numel(), w.numel);
    } catch (const DecodeError&) {
    }
  }
}

TEST(GradiVeQ, PerLayerStateRoundTrips) {
  const TwoSubspaces w;
  const auto codec_owner = fitted_on(w, true);
  GradiVeQCodec& codec = *codec_owner;
  GradiVeQCodec::Options o;
  o.slice = TwoSubspaces::kD;
  o.components = TwoSubspaces::kK;
  o.warmup_steps = 3;
  o.refit_every = 0;
  GradiVeQCodec twin(o, w.layers, w.numel);
  twin.load_state(codec.save_state());
  EXPECT_TRUE(twin.compressing());
  const at::Tensor g = w.gradient(9);
  EXPECT_EQ(twin.encode(g), codec.encode(g));
  GradiVeQCodec other_length(o, w.layers, 700);
  EXPECT_THROW(other_length.load_state(codec.save_state()), DecodeError);
  // Without the layers the same length is one layer with one basis: another plan, refused.
  GradiVeQCodec unknown_layout(o);
  EXPECT_THROW(unknown_layout.load_state(codec.save_state()), DecodeError);
}

nlohmann::json run_doc(const nlohmann::json& codec, const std::string& topology) {
  return {{"gradwire", 1},
          {"name", "correlation"},
          {"seed", 5},
          {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
          {"dataset", {{"kind", "synthetic"}, {"separation", 0.6}, {"features", 16},
                       {"train_samples", 4000}, {"test_samples", 1000}}},
          {"training", {{"workers", 4}, {"steps", 150}, {"batch", 16}, {"eval_every", 50},
                        {"optimizer", {{"lr", 0.05}, {"momentum", 0.9}}}}},
          {"compute", {{"mode", "fixed"}, {"seconds", 0.002}, {"threads", 1}}},
          {"topology", {{"kind", topology}}},
          {"codec", codec},
          {"network", {{"rate", "1Gbps"}}}};
}

TEST(EndToEnd, PowerSgdAndGradiVeQTrainWithinAFewPointsOfNone) {
  const RunResult none = Engine(load_scenario(run_doc({{"kind", "none"}}, "ring"))).run("", nullptr);
  const double reference = none.summary["final_accuracy"].get<double>();
  EXPECT_GT(reference, 0.5);
  const std::vector<std::pair<nlohmann::json, std::string>> cases{
      {{{"kind", "powersgd"}, {"rank", 2}}, "ring"},
      {{{"kind", "powersgd"}, {"rank", 2}}, "ps"},
      {{{"kind", "gradiveq"}, {"slice", 32}, {"components", 8}, {"warmup_steps", 30}}, "ring"},
      // Error feedback around slice-aligned ring chunks.
      {{{"kind", "gradiveq"}, {"slice", 32}, {"components", 4}, {"warmup_steps", 30},
        {"error_feedback", true}}, "ring"},
      {{{"kind", "gradiveq"}, {"slice", 32}, {"components", 8}, {"warmup_steps", 30},
        {"qsgd_levels", 16}}, "ps"}};
  for (const auto& [codec, topology] : cases) {
    const RunResult r = Engine(load_scenario(run_doc(codec, topology))).run("", nullptr);
    EXPECT_NEAR(r.summary["final_accuracy"].get<double>(), reference, 0.05) << codec.dump() << topology;
    EXPECT_GT(r.summary["compression_ratio"].get<double>(), 1.5) << codec.dump() << topology;
  }
}

}  // namespace
}  // namespace gradwire
