// Collectives deliver the right aggregate through the real ns-3 network, and take the time the
// bandwidth bound says they should.
#include <memory>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "TestNames.h"
#include "codecs/CodecRegistry.h"
#include "netmodels/AlphaBetaModel.h"
#include "NetworkFixture.h"
#include "nodes/schemes/ParameterServer.h"
#include "nodes/schemes/RingAllReduce.h"

namespace gradwire {
namespace {

struct Outcome {
  std::vector<at::Tensor> means;  // what each worker received
  std::vector<double> done_at;    // simulated time of delivery
  std::uint64_t sent = 0, received = 0;
};

std::vector<std::unique_ptr<Codec>> make_codecs(const nlohmann::json& spec, int n,
                                                std::int64_t numel) {
  std::vector<std::unique_ptr<Codec>> codecs;
  const auto resolved = CodecRegistry::builtin().resolve(spec, "codec");
  for (int r = 0; r <= n; ++r) {  // the extra one is the server's
    codecs.push_back(CodecRegistry::builtin().create(resolved, CodecContext{r, n, 1, numel, {}, 0}));
  }
  return codecs;
}

Outcome run_collective(const std::string& kind, const nlohmann::json& codec_spec,
                       const std::vector<at::Tensor>& grads,
                       const EthernetConfig& config = EthernetConfig()) {
  const int n = static_cast<int>(grads.size());
  const bool ps = kind == "ps";
  testing::StarWithMessengers star(config, n + (ps ? 1 : 0));
  auto codecs = make_codecs(codec_spec, n, grads[0].numel());
  std::vector<Codec*> raw;
  for (int r = 0; r < n; ++r) raw.push_back(codecs[r].get());
  std::unique_ptr<Collective> collective;
  if (ps) {
    collective = std::make_unique<ParameterServer>(star.raw(0, n), ns3::PeekPointer(star.messengers[n]),
                                                   raw, codecs[n].get());
  } else {
    collective = std::make_unique<RingAllReduce>(star.raw(0, n), raw);
  }
  Outcome out;
  out.means.resize(n);
  out.done_at.assign(n, -1);
  for (int r = 0; r < n; ++r) {
    ns3::Simulator::Schedule(ns3::Seconds(0), [&, r] {
      collective->contribute(r, 0, grads[r], [&, r](const at::Tensor& mean) {
        out.means[r] = mean.clone();
        out.done_at[r] = ns3::Simulator::Now().GetSeconds();
      });
    });
  }
  ns3::Simulator::Run();
  for (auto& m : star.messengers) {
    out.sent += m->bytes_sent();
    out.received += m->bytes_received();
  }
  return out;
}

std::vector<at::Tensor> random_grads(int n, std::int64_t numel, std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<at::Tensor> g;
  for (int i = 0; i < n; ++i) g.push_back(torch::randn({numel}));
  return g;
}

class DenseMean : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(DenseMean, EveryWorkerGetsTheExactMean) {
  const auto [kind, n] = GetParam();
  const auto grads = random_grads(n, 10007, 5);  // not divisible by n: uneven ring chunks
  const Outcome out = run_collective(kind, {{"kind", "none"}}, grads);
  const at::Tensor expected = torch::stack(grads).mean(0);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(out.means[r].defined()) << "worker " << r << " never got the aggregate";
    EXPECT_TRUE(torch::allclose(out.means[r], expected, 1e-5, 1e-6)) << "worker " << r;
    // Replicas must stay identical, bit for bit.
    EXPECT_TRUE(torch::equal(out.means[r], out.means[0]));
  }
  EXPECT_EQ(out.sent, out.received);
  EXPECT_GT(out.sent, 0u);
}

INSTANTIATE_TEST_SUITE_P(Collectives, DenseMean,
                         ::testing::Combine(::testing::Values("ring", "ps"),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_workers";
                         });

TEST(Collectives, SparseRingAndServerAverageTheDecodedPayloads) {
  const int n = 4;
  const auto grads = random_grads(n, 5000, 9);
  const nlohmann::json spec = {{"kind", "topk"}, {"ratio", 0.02}};
  // What each worker's top-k keeps, decoded, averaged: the reference aggregate.
  auto codecs = make_codecs(spec, n, 5000);
  at::Tensor expected = torch::zeros({5000});
  for (int r = 0; r < n; ++r) expected += codecs[r]->decode(codecs[r]->encode(grads[r]));
  expected /= n;
  for (const std::string kind : {"ring", "ps"}) {
    const Outcome out = run_collective(kind, spec, grads);
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(out.means[r].defined()) << kind << " worker " << r;
      EXPECT_TRUE(torch::allclose(out.means[r], expected, 1e-6, 1e-7)) << kind << " worker " << r;
    }
    EXPECT_EQ(out.sent, out.received) << kind;
  }
}

TEST(Collectives, RingAllReduceTimeMeetsTheBandwidthBound) {
  // 4 workers, 16 MB dense gradient each, lossless 1 Gbps star, MTU 9000 (fewer packets).
  const int n = 4;
  const std::int64_t numel = 4'000'000;
  const double bytes = 4.0 * numel;
  EthernetConfig config;
  config.rate_bps = 1e9;
  config.mtu = 9000;
  const Outcome out = run_collective("ring", {{"kind", "none"}}, random_grads(n, numel, 2), config);
  const double bound = AlphaBetaModel(0, 1e9).ring_allreduce_time(bytes, n);  // 2(n-1)/n S/B
  for (int r = 0; r < n; ++r) {
    EXPECT_GE(out.done_at[r], bound) << "worker " << r << " beat the bandwidth bound";
    EXPECT_LE(out.done_at[r], 1.25 * bound) << "worker " << r;
  }
}

}  // namespace
}  // namespace gradwire
