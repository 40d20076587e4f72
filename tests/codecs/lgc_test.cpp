// Tests of Learned Gradient Compression (lgc_ring, lgc_ps; codecs/learned/LgcCodec.h): the rounds of
// each phase and their declared sizes, exact means in the sparse phases, error-feedback
// conservation, linearity of the lgc_ring codes, the autoencoder's reconstruction error on
// held-out vectors falling with training, the weights broadcast, corrupt payloads, state, and a
// short data-parallel training run on a synthetic Gaussian mixture against uncompressed SGD.
// Exchanges run in process through tests/support/ExchangeDriver.h.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "codecs/learned/LgcAutoencoder.h"
#include "codecs/learned/LgcCodec.h"
#include "codecs/sparsify/TopKCodec.h"
#include "common/ConfigError.h"
#include "ExchangeDriver.h"

namespace gradwire {
namespace {

using nlohmann::json;
using testing::ExchangeTrace;
using testing::run_exchange;

/// Gradient-like test vectors: a few smooth components (neighbouring parameters move
/// together) plus noise, different per seed.
torch::Tensor smooth_gradient(std::int64_t n, std::uint64_t seed, double noise = 0.3) {
  torch::manual_seed(seed);
  const torch::Tensor t = torch::arange(n, torch::kFloat) / static_cast<double>(n);
  torch::Tensor g = torch::zeros({n});
  for (int c = 0; c < 3; ++c) {
    const auto f = torch::rand({1}).item<double>() * 12.0 + 1.0;
    const auto phase = torch::rand({1}).item<double>() * 6.28;
    g += torch::randn({1}).item<double>() * torch::sin(t * f * 6.28 + phase);
  }
  return (g + noise * torch::randn({n})).contiguous();
}

/// n workers' codecs of one kind (and the server's instance, rank -1).
struct Group {
  std::vector<std::unique_ptr<Codec>> owned;
  std::vector<MultiRoundCodec*> workers;
  std::unique_ptr<Codec> server_owned;
  MultiRoundCodec* server = nullptr;

  Group(const std::string& kind, int n, std::int64_t numel, json params = json::object()) {
    params["kind"] = kind;
    for (int r = -1; r < n; ++r) {
      CodecContext ctx;
      ctx.rank = r;
      ctx.workers = n;
      ctx.numel = numel;
      ctx.seed = 11;
      auto codec = CodecRegistry::builtin().create(params, ctx);
      auto* multi = dynamic_cast<MultiRoundCodec*>(codec.get());
      if (multi == nullptr) throw std::logic_error(kind + " is not a MultiRoundCodec");
      if (r < 0) {
        server = multi;
        server_owned = std::move(codec);
      } else {
        workers.push_back(multi);
        owned.push_back(std::move(codec));
      }
    }
  }
  LgcCodec& lgc(int r) { return dynamic_cast<LgcCodec&>(*workers.at(static_cast<std::size_t>(r))); }
  LgcCodec& lgc_server() { return dynamic_cast<LgcCodec&>(*server); }
};

std::vector<torch::Tensor> gradients(int n, std::int64_t numel, std::uint64_t seed) {
  std::vector<torch::Tensor> g;
  for (int r = 0; r < n; ++r) g.push_back(smooth_gradient(numel, seed * 100 + static_cast<std::uint64_t>(r)));
  return g;
}

/// What each worker's codec compensates this step: its gradient plus its residual.
std::vector<torch::Tensor> compensated(Group& g, const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> acc;
  for (std::size_t r = 0; r < grads.size(); ++r) {
    const torch::Tensor& res = g.lgc(static_cast<int>(r)).residual();
    acc.push_back(res.defined() ? grads[r] + res : grads[r].clone());
  }
  return acc;
}

torch::Tensor topk_index(const torch::Tensor& acc, std::int64_t k) {
  const auto sel = TopKCodec::select_largest(acc.data_ptr<float>(), acc.numel(), k);
  std::vector<std::int64_t> v(sel.begin(), sel.end());
  return torch::tensor(v, torch::kLong);
}

std::vector<std::uint32_t> topk_u32(const torch::Tensor& acc, std::int64_t k) {
  return TopKCodec::select_largest(acc.data_ptr<float>(), acc.numel(), k);
}

torch::Tensor scatter(std::int64_t n, const torch::Tensor& idx, const torch::Tensor& values) {
  return torch::zeros({n}).index_copy_(0, idx, values);
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  const double err = (a - b).abs().max().item<double>();
  const double scale = std::max(1.0, b.abs().max().item<double>());
  EXPECT_LE(err, tol * scale) << what;
}

// --------------------------------------------------------------------------------------------
// Registry

TEST(LgcRegistry, DeclaresMultiRoundWithOwnErrorFeedback) {
  for (const char* kind : {"lgc_ps", "lgc_ring"}) {
    const CodecInfo* info = CodecRegistry::builtin().find(kind);
    ASSERT_NE(info, nullptr) << kind;
    EXPECT_TRUE(info->multi_round);
    EXPECT_TRUE(info->own_error_feedback);
    const json resolved = CodecRegistry::builtin().resolve({{"kind", kind}}, "codec");
    EXPECT_TRUE(resolved.at("error_feedback").get<bool>());
    for (const char* key : {"ratio", "warmup_steps", "phase1_steps", "ae_train_iters", "ae_lr",
                            "downsample_layers", "code_channels", "hidden_channels", "seed_offset"}) {
      EXPECT_TRUE(resolved.contains(key)) << key;
    }
    EXPECT_THROW(CodecRegistry::builtin().resolve({{"kind", kind}, {"zstd", true}}, "codec"), ConfigError);
    EXPECT_THROW(CodecRegistry::builtin().resolve({{"kind", kind}, {"ratio", 0}}, "codec"), ConfigError);
    EXPECT_NO_THROW(CodecRegistry::builtin().resolve({{"kind", kind}, {"error_feedback", false}}, "codec"));
  }
}

TEST(LgcRegistry, KIsTheDecimalRatiosCountHalvesUp) {
  // 0.145 * 100 is 14.499999999999998 in double; the ratio stands for 14.5, so k = 15, as topk.
  for (const char* kind : {"lgc_ps", "lgc_ring"}) {
    Group g(kind, 1, 100, {{"ratio", 0.145}});
    EXPECT_EQ(g.lgc(0).k_for(100), 15) << kind;
    EXPECT_EQ(g.lgc(0).k_for(100), TopKCodec(0.145).k_for(100)) << kind;
    EXPECT_EQ(Group(kind, 1, 61706).lgc(0).k_for(61706), 617) << kind;
  }
}

// --------------------------------------------------------------------------------------------
// Phases and rounds

TEST(LgcExchange, DenseWarmupIsTheExactMean) {
  const std::int64_t n = 500;
  Group g("lgc_ring", 3, n, {{"warmup_steps", 2}});
  for (int step = 0; step < 2; ++step) {
    const auto grads = gradients(3, n, 1 + static_cast<std::uint64_t>(step));
    const ExchangeTrace t = run_exchange(g.workers, grads);
    ASSERT_EQ(t.rounds.size(), 1u);
    EXPECT_EQ(t.rounds[0].op, RoundOp::kSum);
    EXPECT_EQ(t.rounds[0].sizes[0], n);
    const torch::Tensor mean = (grads[0] + grads[1] + grads[2]) / 3.0;
    for (const auto& r : t.results) expect_close(r, mean, 1e-6, "dense mean");
    EXPECT_EQ(g.lgc(1).residual().abs().max().item<float>(), 0.0f);
  }
  EXPECT_EQ(g.lgc(0).step(), 2);
}

TEST(LgcExchange, RingPhase1SharesTheLeadersIndicesAndAveragesExactly) {
  const std::int64_t n = 2000;
  const int workers = 3;
  Group g("lgc_ring", workers, n, {{"ratio", 0.05}});
  const std::int64_t k = g.lgc(0).k_for(n);
  for (int step = 0; step < 4; ++step) {
    const auto grads = gradients(workers, n, 10 + static_cast<std::uint64_t>(step));
    const auto acc = compensated(g, grads);
    const int leader = step % workers;
    const auto idx_u32 = topk_u32(acc[static_cast<std::size_t>(leader)], k);
    const torch::Tensor idx = topk_index(acc[static_cast<std::size_t>(leader)], k);
    const ExchangeTrace t = run_exchange(g.workers, grads);
    ASSERT_EQ(t.rounds.size(), 2u);
    EXPECT_EQ(t.rounds[0].op, RoundOp::kBroadcast);
    EXPECT_EQ(t.rounds[0].root, leader);
    EXPECT_EQ(static_cast<std::size_t>(t.rounds[0].sizes[static_cast<std::size_t>(leader)]),
              LgcCodec::indices_payload_size(idx_u32, false));
    EXPECT_EQ(t.rounds[1].op, RoundOp::kSum);
    for (auto s : t.rounds[1].sizes) EXPECT_EQ(s, k);

    torch::Tensor mean = torch::zeros({k});
    for (const auto& a : acc) mean += a.index_select(0, idx);
    mean /= workers;
    const torch::Tensor expected = scatter(n, idx, mean);
    for (const auto& r : t.results) expect_close(r, expected, 1e-6, "phase-1 mean");

    // Error feedback loses nothing: what was averaged plus what stays behind is what came in.
    torch::Tensor in = torch::zeros({n});
    torch::Tensor out = t.results[0] * workers;
    for (int r = 0; r < workers; ++r) {
      in += acc[static_cast<std::size_t>(r)];
      out += g.lgc(r).residual();
    }
    expect_close(out, in, 1e-5, "conservation");
  }
}

TEST(LgcExchange, PsPhase1MatchesTheMeanWithServerOrOnEveryWorker) {
  const std::int64_t n = 1500;
  const int workers = 4;
  Group with_server("lgc_ps", workers, n, {{"ratio", 0.02}});
  Group ring_style("lgc_ps", workers, n, {{"ratio", 0.02}});
  const std::int64_t k = with_server.lgc(0).k_for(n);
  for (int step = 0; step < 5; ++step) {
    const auto grads = gradients(workers, n, 30 + static_cast<std::uint64_t>(step));
    const auto acc = compensated(with_server, grads);
    const int leader = step % workers;
    const auto idx_u32 = topk_u32(acc[static_cast<std::size_t>(leader)], k);
    const torch::Tensor idx = topk_index(acc[static_cast<std::size_t>(leader)], k);

    const ExchangeTrace a = run_exchange(with_server.workers, grads, with_server.server);
    const ExchangeTrace b = run_exchange(ring_style.workers, grads);
    ASSERT_EQ(a.rounds.size(), 2u);
    EXPECT_EQ(a.rounds[0].op, RoundOp::kBroadcast);
    EXPECT_EQ(static_cast<std::size_t>(a.rounds[0].sizes[static_cast<std::size_t>(leader)]),
              LgcCodec::indices_payload_size(idx_u32, true));
    EXPECT_EQ(a.rounds[1].op, RoundOp::kReduce);
    for (int r = 0; r < workers; ++r) {
      EXPECT_EQ(static_cast<std::size_t>(a.rounds[1].sizes[static_cast<std::size_t>(r)]),
                r == leader ? LgcCodec::leader_payload_size() : LgcCodec::values_payload_size(k));
    }
    torch::Tensor mean = torch::zeros({k});
    for (const auto& x : acc) mean += x.index_select(0, idx);
    const torch::Tensor expected = scatter(n, idx, mean / workers);
    for (const auto& r : a.results) expect_close(r, expected, 1e-6, "ps mean (server)");
    for (const auto& r : b.results) expect_close(r, expected, 1e-6, "ps mean (each worker)");
  }
}

/// Runs `steps` exchanges with fresh gradients; returns the last trace.
ExchangeTrace run_steps(Group& g, int steps, std::int64_t n, std::uint64_t seed, bool server) {
  ExchangeTrace last;
  for (int s = 0; s < steps; ++s) {
    last = run_exchange(g.workers, gradients(static_cast<int>(g.workers.size()), n, seed + static_cast<std::uint64_t>(s)),
                        server ? g.server : nullptr);
  }
  return last;
}

TEST(LgcExchange, RingPhase2BroadcastsTheWeightsOnceThenSumsCodes) {
  const std::int64_t n = 3000;
  const int workers = 3;
  Group g("lgc_ring", workers, n,
          {{"ratio", 0.05}, {"phase1_steps", 6}, {"ae_train_iters", 30}});
  run_steps(g, 6, n, 50, false);
  EXPECT_EQ(g.lgc(1).autoencoder(), nullptr);

  // First phase-2 step: weights (root 0), indices (root leader), codes (kSum).
  const auto grads = gradients(workers, n, 99);
  const auto acc = compensated(g, grads);
  const int leader = 6 % workers;
  const std::int64_t k = g.lgc(0).k_for(n);
  const torch::Tensor idx = topk_index(acc[static_cast<std::size_t>(leader)], k);
  const ExchangeTrace t = run_exchange(g.workers, grads);
  ASSERT_EQ(t.rounds.size(), 3u);
  EXPECT_EQ(t.rounds[0].op, RoundOp::kBroadcast);
  EXPECT_EQ(t.rounds[0].root, 0);
  const LgcAutoencoder* ae = g.lgc(0).autoencoder();
  ASSERT_NE(ae, nullptr);
  EXPECT_EQ(static_cast<std::size_t>(t.rounds[0].sizes[0]),
            LgcCodec::weights_payload_size(ae->parameter_count()));
  EXPECT_EQ(t.rounds[1].root, leader);
  EXPECT_EQ(t.rounds[2].op, RoundOp::kSum);
  // The code and the worker's values' norm (the bound on the decoded mean's).
  for (auto s : t.rounds[2].sizes) EXPECT_EQ(s, ae->code_length() + 1);
  EXPECT_LT(ae->code_length(), k);  // the point of phase 2
  for (int r = 1; r < workers; ++r) {
    ASSERT_NE(g.lgc(r).autoencoder(), nullptr);
    EXPECT_EQ(g.lgc(r).autoencoder()->weights(), ae->weights()) << "rank " << r;
  }
  // Rank 0 trained on its phase-1 vectors: the loss fell.
  const auto& losses = g.lgc(0).training_losses();
  ASSERT_EQ(losses.size(), 30u);
  EXPECT_LT(losses.back(), losses.front());

  // The update is decode(mean of the codes) = decode(encode(mean of the values)).
  torch::Tensor mean = torch::zeros({k});
  for (const auto& a : acc) mean += a.index_select(0, idx);
  mean /= workers;
  const torch::Tensor expected = scatter(n, idx, ae->decode(ae->encode(mean)));
  for (const auto& r : t.results) expect_close(r, expected, 1e-5, "phase-2 ring update");

  // Later steps: no weights round.
  const ExchangeTrace next = run_steps(g, 1, n, 200, false);
  ASSERT_EQ(next.rounds.size(), 2u);
  EXPECT_EQ(next.rounds[0].op, RoundOp::kBroadcast);
  EXPECT_EQ(next.rounds[1].op, RoundOp::kSum);
  EXPECT_EQ(next.rounds[1].sizes[0], ae->code_length() + 1);
}

// An autoencoder that amplifies (here: its trained weights x 2, a gain of 2^8 through its
// eight layers; in training, vectors unlike those it was fitted on) must neither blow up the
// update nor grow the error-feedback residual: the decoded mean is bounded by the workers' mean
// value norm, and each worker's own reconstruction is never further from its values than zero.
TEST(LgcExchange, AnAmplifyingAutoencoderBoundsTheUpdateAndTheResidual) {
  const std::int64_t n = 3000;
  const int workers = 3;
  for (const std::string kind : {"lgc_ring", "lgc_ps"}) {
    const bool ps = kind == "lgc_ps";
    Group g(kind, workers, n, {{"ratio", 0.05}, {"phase1_steps", 6}, {"ae_train_iters", 30}});
    run_steps(g, 6, n, 50, ps);
    // The first phase-2 step broadcasts the weights; every instance then loads them doubled.
    const ExchangeTrace first = run_steps(g, 1, n, 90, ps);
    Bytes amplified = first.rounds.at(0).payloads.at(0);
    const std::size_t count = g.lgc(0).autoencoder()->weights().size();
    float* w = reinterpret_cast<float*>(amplified.data() + amplified.size() - 4 * count);
    for (std::size_t i = 0; i < count; ++i) w[i] *= 2.0f;
    for (int r = 0; r < workers; ++r) g.lgc(r).observe_broadcast(0, amplified);
    if (ps) g.lgc_server().observe_broadcast(0, amplified);
    for (int step = 0; step < 5; ++step) {
      const auto grads = gradients(workers, n, 120 + static_cast<std::uint64_t>(step));
      const auto acc = compensated(g, grads);
      const int leader = (7 + step) % workers;
      const std::int64_t k = g.lgc(0).k_for(n);
      const torch::Tensor idx = topk_index(acc[static_cast<std::size_t>(leader)], k);
      double mean_norm = 0;
      for (const auto& a : acc) mean_norm += a.index_select(0, idx).norm().item<double>() / workers;
      const ExchangeTrace t = run_exchange(g.workers, grads, ps ? g.server : nullptr);
      for (int r = 0; r < workers; ++r) {
        const auto u = static_cast<std::size_t>(r);
        ASSERT_TRUE(torch::isfinite(t.results[u]).all().item<bool>()) << kind << " rank " << r;
        EXPECT_LE(t.results[u].norm().item<double>(), mean_norm * 1.0001)
            << kind << ", step " << step << ", rank " << r;
        EXPECT_LE(g.lgc(r).residual().norm().item<double>(), acc[u].norm().item<double>() * 1.0001)
            << kind << ", step " << step << ", rank " << r;
      }
    }
  }
}

TEST(LgcExchange, PsPhase2DecodesCodesWithTheLeadersValuesOnTheServer) {
  const std::int64_t n = 2500;
  const int workers = 4;
  Group g("lgc_ps", workers, n, {{"ratio", 0.04}, {"phase1_steps", 8}, {"ae_train_iters", 30}});
  Group local("lgc_ps", workers, n, {{"ratio", 0.04}, {"phase1_steps", 8}, {"ae_train_iters", 30}});
  run_steps(g, 8, n, 70, true);
  run_steps(local, 8, n, 70, false);
  EXPECT_EQ(g.lgc_server().autoencoder(), nullptr);

  for (int s = 0; s < 3; ++s) {
    const auto grads = gradients(workers, n, 300 + static_cast<std::uint64_t>(s));
    const ExchangeTrace a = run_exchange(g.workers, grads, g.server);
    const ExchangeTrace b = run_exchange(local.workers, grads);
    const LgcAutoencoder* ae = g.lgc_server().autoencoder();
    ASSERT_NE(ae, nullptr);  // the server learnt the weights from the broadcast it relayed
    EXPECT_EQ(ae->weights(), g.lgc(0).autoencoder()->weights());
    const int leader = (8 + s) % workers;
    ASSERT_EQ(a.rounds.size(), s == 0 ? 3u : 2u);
    const auto& reduce = a.rounds.back();
    EXPECT_EQ(reduce.op, RoundOp::kReduce);
    for (int r = 0; r < workers; ++r) {
      EXPECT_EQ(static_cast<std::size_t>(reduce.sizes[static_cast<std::size_t>(r)]),
                r == leader ? LgcCodec::leader_payload_size()
                            : LgcCodec::code_payload_size(ae->code_length()));
    }
    // The server's decode and every worker's own decode agree.
    for (std::size_t r = 0; r < a.results.size(); ++r) {
      expect_close(a.results[r], b.results[r], 1e-5, "server vs workers");
      EXPECT_EQ(a.results[r].count_nonzero().item<std::int64_t>() <= g.lgc(0).k_for(n), true);
    }
  }
}

// --------------------------------------------------------------------------------------------
// The autoencoder

LgcAutoencoderConfig ae_config(bool side, std::int64_t k) {
  LgcAutoencoderConfig c;
  c.side_information = side;
  c.layers = 3;
  c.hidden_channels = 8;
  c.code_channels = 2;
  c.input_length = k;
  return c;
}

TEST(LgcAutoencoder, RingCodesAreLinearAndDecodingIsHomogeneous) {
  const std::int64_t k = 203;  // not a multiple of 8: exercises the padding
  LgcAutoencoder ae(ae_config(false, k), 5);
  ae.train(torch::stack({smooth_gradient(k, 1), smooth_gradient(k, 2)}), {}, 5, 1e-2);
  const torch::Tensor a = smooth_gradient(k, 3);
  const torch::Tensor b = smooth_gradient(k, 4);
  const torch::Tensor c = smooth_gradient(k, 5);
  // decode(sum of encodings) == decode(encoding of the sum): what lgc_ring's all-reduce needs.
  const torch::Tensor sum_of_codes = ae.encode(a) + ae.encode(b) + ae.encode(c);
  expect_close(sum_of_codes, ae.encode(a + b + c), 1e-5, "encode is linear");
  expect_close(ae.decode(sum_of_codes), ae.decode(ae.encode(a + b + c)), 1e-5, "decode(sum)");
  expect_close(ae.decode(ae.encode(a) * 3.5), ae.decode(ae.encode(a)) * 3.5, 1e-5, "homogeneous");
  EXPECT_EQ(ae.code_length(), 2 * 26);  // 203 -> 208 padded, / 8, x 2 channels
  // Batched and single forms agree.
  const torch::Tensor batch = ae.decode(ae.encode(torch::stack({a, b})));
  expect_close(batch[1], ae.decode(ae.encode(b)), 1e-6, "batched");
}

TEST(LgcAutoencoder, HeldOutReconstructionErrorFallsWithTraining) {
  const std::int64_t k = 128;
  std::vector<torch::Tensor> train_rows, held_rows, train_side, held_side;
  for (int i = 0; i < 72; ++i) {
    const torch::Tensor x = smooth_gradient(k, 1000 + static_cast<std::uint64_t>(i), 0.1);
    // The leader's values: correlated with this worker's (same mini-batch statistics).
    const torch::Tensor s = x * 0.8 + 0.3 * smooth_gradient(k, 5000 + static_cast<std::uint64_t>(i), 0.2);
    (i < 60 ? train_rows : held_rows).push_back(x);
    (i < 60 ? train_side : held_side).push_back(s);
  }
  for (const bool side : {false, true}) {
    LgcAutoencoder ae(ae_config(side, k), 9);
    const torch::Tensor hs = side ? torch::stack(held_side) : torch::Tensor();
    const torch::Tensor ts = side ? torch::stack(train_side) : torch::Tensor();
    const double before = ae.relative_error(torch::stack(held_rows), hs);
    double previous = before;
    for (int round = 0; round < 3; ++round) {
      const auto losses = ae.train(torch::stack(train_rows), ts, 40, 1e-2);
      ASSERT_EQ(losses.size(), 40u);
      const double now = ae.relative_error(torch::stack(held_rows), hs);
      EXPECT_LT(now, previous) << "side " << side << " round " << round;
      previous = now;
    }
    EXPECT_LT(previous, 0.5 * before) << "side " << side;
    EXPECT_LT(previous, 0.5) << "side " << side;
  }
}

TEST(LgcAutoencoder, SameSeedSameWeightsAndGlobalGeneratorUntouched) {
  torch::manual_seed(123);
  const torch::Tensor expected = torch::rand({4});
  torch::manual_seed(123);
  LgcAutoencoder a(ae_config(true, 100), 77);
  const torch::Tensor after = torch::rand({4});
  EXPECT_TRUE(torch::equal(after, expected));
  LgcAutoencoder b(ae_config(true, 100), 77);
  EXPECT_EQ(a.weights(), b.weights());
  LgcAutoencoder c(ae_config(true, 100), 78);
  EXPECT_NE(a.weights(), c.weights());
  const auto w = a.weights();
  c.set_weights(w.data(), w.size());
  EXPECT_EQ(c.weights(), w);
  EXPECT_THROW(c.set_weights(w.data(), w.size() - 1), std::invalid_argument);
}

// --------------------------------------------------------------------------------------------
// Single-worker form, corrupt payloads, state

TEST(LgcCodec, SingleWorkerFormIsErrorCompensatedTopK) {
  const std::int64_t n = 1000;
  Group g("lgc_ring", 1, n, {{"ratio", 0.03}});
  LgcCodec& c = g.lgc(0);
  const torch::Tensor x = smooth_gradient(n, 3);
  const Bytes p = c.encode(x);
  const torch::Tensor idx = topk_index(x, 30);
  EXPECT_EQ(p.size(), LgcCodec::indices_payload_size(topk_u32(x, 30), true));
  expect_close(c.decode(p), scatter(n, idx, x.index_select(0, idx)), 0.0, "decode");
  expect_close(c.decode(p) + c.residual(), x, 1e-6, "residual keeps the rest");
  EXPECT_DOUBLE_EQ(c.last_density(), 0.03);
  // The payload says its k: a decoder built with another ratio reads it too.
  Group other("lgc_ps", 1, n, {{"ratio", 0.5}});
  expect_close(other.lgc(0).decode(p), c.decode(p), 0.0, "other ratio");
}

/// Every truncation and `flips` random single-byte changes: `consume` either accepts the
/// bytes or throws DecodeError, never anything else (and never reads out of bounds: the ASan
/// build of these sources catches that).
template <typename F>
void expect_only_decode_errors(const Bytes& payload, F consume, int flips, std::uint32_t seed,
                               const std::string& what) {
  for (std::size_t len = 0; len < payload.size(); ++len) {
    Bytes cut(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_THROW(consume(cut), DecodeError) << what << " truncated to " << len;
  }
  Bytes longer = payload;
  longer.push_back(0);
  EXPECT_THROW(consume(longer), DecodeError) << what << " with a byte to spare";
  std::mt19937 rng(seed);
  for (int i = 0; i < flips; ++i) {
    Bytes m = payload;
    m[rng() % m.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    try {
      consume(m);
    } catch (const DecodeError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": mutation " << i << " raised a non-DecodeError: " << e.what();
    }
  }
}

TEST(LgcCodec, CorruptPayloadsRaiseDecodeErrorOnly) {
  const std::int64_t n = 1200;
  const int workers = 3;
  Group g("lgc_ps", workers, n, {{"ratio", 0.05}, {"phase1_steps", 3}, {"ae_train_iters", 5}});
  run_steps(g, 3, n, 400, true);
  const ExchangeTrace t = run_steps(g, 1, n, 500, true);  // weights, indices+values, codes
  ASSERT_EQ(t.rounds.size(), 3u);
  const Bytes weights = t.rounds[0].payloads.at(0);
  const Bytes broadcast = t.rounds[1].payloads.at(0);
  const int leader = 3 % workers;
  const std::vector<Bytes> reduce = t.rounds[2].payloads;

  // A fresh server instance for broadcasts (it keeps what it parses).
  Group fresh("lgc_ps", workers, n, {{"ratio", 0.05}, {"phase1_steps", 3}, {"ae_train_iters", 5}});
  auto observe = [&](const Bytes& b) { fresh.server->observe_broadcast(0, b); };
  expect_only_decode_errors(weights, observe, 1500, 1, "weights");
  expect_only_decode_errors(broadcast, observe, 1500, 2, "indices+values");

  // Reduce payloads against the real server state (reduce_round keeps nothing).
  g.server->observe_broadcast(1, broadcast);
  for (int r = 0; r < workers; ++r) {
    auto reduce_with = [&](const Bytes& b) {
      std::vector<Bytes> copies = reduce;
      copies[static_cast<std::size_t>(r)] = b;
      std::vector<ByteSpan> spans(copies.begin(), copies.end());
      g.server->reduce_round(2, spans);
    };
    expect_only_decode_errors(reduce[static_cast<std::size_t>(r)], reduce_with, 800,
                              10 + static_cast<std::uint32_t>(r),
                              r == leader ? "leader reduce" : "code reduce");
  }
  // Wrong number of payloads, two leaders.
  std::vector<ByteSpan> too_few(reduce.begin(), reduce.end() - 1);
  EXPECT_THROW(g.server->reduce_round(2, too_few), DecodeError);
  std::vector<ByteSpan> two_leaders(reduce.begin(), reduce.end());
  two_leaders[static_cast<std::size_t>((leader + 1) % workers)] = reduce[static_cast<std::size_t>(leader)];
  EXPECT_THROW(g.server->reduce_round(2, two_leaders), DecodeError);

  // The single-worker form.
  const Bytes single = g.lgc(1).encode(smooth_gradient(n, 8));
  expect_only_decode_errors(single, [&](const Bytes& b) { g.lgc(2).decode(b); }, 2000, 3, "single");
  // Exchange payloads are not the single-worker form.
  EXPECT_THROW(g.lgc(2).decode(weights), DecodeError);
}

TEST(LgcCodec, PhaseOneValuesPayloadsRejectCorruption) {
  const std::int64_t n = 800;
  Group g("lgc_ps", 3, n, {{"ratio", 0.05}});
  const ExchangeTrace t = run_steps(g, 1, n, 600, true);
  g.server->observe_broadcast(0, t.rounds[0].payloads.at(0));
  const std::vector<Bytes> reduce = t.rounds[1].payloads;
  auto reduce_with = [&](const Bytes& b) {
    std::vector<Bytes> copies = reduce;
    copies[1] = b;
    std::vector<ByteSpan> spans(copies.begin(), copies.end());
    g.server->reduce_round(1, spans);
  };
  expect_only_decode_errors(reduce[1], reduce_with, 1000, 4, "values reduce");
}

TEST(LgcCodec, StateRoundTripsResidualStepAndWeights) {
  const std::int64_t n = 900;
  Group g("lgc_ring", 2, n, {{"ratio", 0.05}, {"phase1_steps", 2}, {"ae_train_iters", 3}});
  run_steps(g, 3, n, 700, false);
  const Bytes state = g.lgc(1).save_state();
  Group h("lgc_ring", 2, n, {{"ratio", 0.05}, {"phase1_steps", 2}, {"ae_train_iters", 3}});
  h.lgc(1).load_state(state);
  EXPECT_EQ(h.lgc(1).step(), 3);
  ASSERT_NE(h.lgc(1).autoencoder(), nullptr);
  EXPECT_EQ(h.lgc(1).autoencoder()->weights(), g.lgc(1).autoencoder()->weights());
  EXPECT_TRUE(torch::equal(h.lgc(1).residual(), g.lgc(1).residual()));
  EXPECT_EQ(h.lgc(1).save_state(), state);
  Bytes bad = state;
  bad.resize(bad.size() / 2);
  EXPECT_THROW(h.lgc(1).load_state(bad), DecodeError);
  // Another codec's state is rejected by name.
  Group ps("lgc_ps", 2, n);
  EXPECT_THROW(ps.lgc(1).load_state(state), DecodeError);
  h.lgc(1).load_state(ByteSpan());
  EXPECT_EQ(h.lgc(1).step(), 0);
  EXPECT_EQ(h.lgc(1).autoencoder(), nullptr);
}

/// Whether round 0 of a step carried the autoencoder's weights from rank 0.
bool carried_weights(const ExchangeTrace& t, const LgcAutoencoder& ae) {
  return !t.rounds.empty() && t.rounds[0].op == RoundOp::kBroadcast && t.rounds[0].root == 0 &&
         static_cast<std::size_t>(t.rounds[0].sizes[0]) ==
             LgcCodec::weights_payload_size(ae.parameter_count());
}

TEST(LgcExchange, FineTunesOnScheduleAndEveryWorkerLoadsTheNewWeights) {
  const std::int64_t n = 2000;
  const int workers = 3;
  for (const std::string kind : {"lgc_ring", "lgc_ps"}) {
    SCOPED_TRACE(kind);
    const bool ps = kind == "lgc_ps";
    const json params = {{"ratio", 0.05}, {"phase1_steps", 4}, {"ae_train_iters", 20},
                         {"ae_finetune_every", 3}, {"ae_finetune_iters", 10}};
    Group g(kind, workers, n, params);
    // Phase 2 starts at step 4; fine-tunes at 7 and 10; nothing in between.
    std::vector<float> before;
    for (int step = 0; step < 12; ++step) {
      const ExchangeTrace t = run_exchange(
          g.workers, gradients(workers, n, 900 + static_cast<std::uint64_t>(step)),
          ps ? g.server : nullptr);
      const bool scheduled = step == 4 || step == 7 || step == 10;
      EXPECT_EQ(g.lgc(1).weights_step(step), scheduled) << "step " << step;
      if (step < 4) {
        EXPECT_EQ(g.lgc(0).autoencoder(), nullptr);
        continue;
      }
      const LgcAutoencoder* ae = g.lgc(0).autoencoder();
      ASSERT_NE(ae, nullptr);
      EXPECT_EQ(carried_weights(t, *ae), scheduled) << "step " << step;
      EXPECT_EQ(t.rounds.size(), scheduled ? 3u : 2u) << "step " << step;
      const std::vector<float> now = ae->weights();
      if (step > 4) {
        // The weights change exactly when they travel.
        EXPECT_EQ(now != before, scheduled) << "step " << step;
      }
      if (scheduled) {
        // The first training runs ae_train_iters iterations, each fine-tune ae_finetune_iters
        // on the vectors rank 0 kept since the last one.
        EXPECT_EQ(g.lgc(0).training_losses().size(), step == 4 ? 20u : 10u);
      }
      for (int r = 1; r < workers; ++r) {
        ASSERT_NE(g.lgc(r).autoencoder(), nullptr);
        EXPECT_EQ(g.lgc(r).autoencoder()->weights(), now) << "rank " << r << " step " << step;
      }
      if (ps) {
        ASSERT_NE(g.lgc_server().autoencoder(), nullptr);
        EXPECT_EQ(g.lgc_server().autoencoder()->weights(), now) << "server, step " << step;
      }
      before = now;
    }
    EXPECT_EQ(g.lgc(0).trainings(), 3);
    EXPECT_EQ(g.lgc(1).trainings(), 0);  // only rank 0 trains

    // ae_finetune_every 0: the model is trained once and never changes.
    json once = params;
    once["ae_finetune_every"] = 0;
    Group h(kind, workers, n, once);
    run_steps(h, 5, n, 900, ps);
    const std::vector<float> first = h.lgc(0).autoencoder()->weights();
    for (int step = 5; step < 12; ++step) {
      const ExchangeTrace t = run_steps(h, 1, n, 900 + static_cast<std::uint64_t>(step), ps);
      EXPECT_FALSE(carried_weights(t, *h.lgc(0).autoencoder())) << "step " << step;
    }
    EXPECT_EQ(h.lgc(0).autoencoder()->weights(), first);
    EXPECT_EQ(h.lgc(0).trainings(), 1);
  }
}

TEST(LgcExchange, FineTunedWeightsBroadcastRejectsCorruption) {
  const std::int64_t n = 1200;
  const int workers = 3;
  const json params = {{"ratio", 0.05}, {"phase1_steps", 2}, {"ae_train_iters", 5},
                       {"ae_finetune_every", 2}, {"ae_finetune_iters", 5}};
  for (const std::string kind : {"lgc_ring", "lgc_ps"}) {
    SCOPED_TRACE(kind);
    const bool ps = kind == "lgc_ps";
    Group g(kind, workers, n, params);
    run_steps(g, 4, n, 40, ps);  // phase 2 from step 2
    const ExchangeTrace t = run_steps(g, 1, n, 50, ps);  // step 4: the first fine-tune
    ASSERT_TRUE(carried_weights(t, *g.lgc(0).autoencoder()));
    const Bytes weights = t.rounds[0].payloads.at(0);
    Group fresh(kind, workers, n, params);
    expect_only_decode_errors(weights, [&](const Bytes& b) { fresh.server->observe_broadcast(0, b); },
                              1500, 21, "fine-tuned weights");
    // A worker receiving them in its weights round (step 6, the next fine-tune) as well.
    run_steps(g, 1, n, 60, ps);
    const Round round = g.workers[1]->begin_exchange(smooth_gradient(n, 61));
    ASSERT_EQ(round.op, RoundOp::kBroadcast);
    RoundOutcome cut;
    cut.broadcast.assign(weights.begin(), weights.end() - 1);
    EXPECT_THROW(g.workers[1]->continue_exchange(0, std::move(cut)), DecodeError);
  }
}

TEST(LgcCodec, StateKeepsThePhaseTwoVectorsAFineTuneNeeds) {
  const std::int64_t n = 900;
  const json params = {{"ratio", 0.05}, {"phase1_steps", 2}, {"ae_train_iters", 5},
                       {"ae_finetune_every", 4}, {"ae_finetune_iters", 5}};
  for (const std::string kind : {"lgc_ring", "lgc_ps"}) {
    SCOPED_TRACE(kind);
    const bool ps = kind == "lgc_ps";
    Group g(kind, 2, n, params);
    run_steps(g, 4, n, 70, ps);  // phase 2 from step 2; steps 2 and 3 collected
    // Every worker restored from its state goes on exactly as the original.
    Group h(kind, 2, n, params);
    for (int r = 0; r < 2; ++r) h.lgc(r).load_state(g.lgc(r).save_state());
    if (ps) h.lgc_server().load_state(g.lgc_server().save_state());
    for (int step = 4; step < 7; ++step) {
      const auto grads = gradients(2, n, 80 + static_cast<std::uint64_t>(step));
      const ExchangeTrace a = run_exchange(g.workers, grads, ps ? g.server : nullptr);
      const ExchangeTrace b = run_exchange(h.workers, grads, ps ? h.server : nullptr);
      ASSERT_EQ(a.rounds.size(), b.rounds.size()) << "step " << step;
      EXPECT_EQ(a.rounds.size(), step == 6 ? 3u : 2u) << "step " << step;
      for (int r = 0; r < 2; ++r) {
        EXPECT_TRUE(torch::equal(a.results[static_cast<std::size_t>(r)],
                                 b.results[static_cast<std::size_t>(r)]))
            << "step " << step;
      }
    }
    EXPECT_EQ(h.lgc(0).autoencoder()->weights(), g.lgc(0).autoencoder()->weights());
  }
}

// --------------------------------------------------------------------------------------------
// End to end: data-parallel SGD on a synthetic Gaussian mixture, LGC against exact averaging.

struct Mixture {
  torch::Tensor x_train, y_train, x_test, y_test;
};

Mixture make_mixture() {
  torch::manual_seed(2024);
  const int classes = 10, features = 32;
  const torch::Tensor means = torch::randn({classes, features}) * 0.7;
  auto sample = [&](int count) {
    const torch::Tensor y = torch::randint(classes, {count}, torch::kLong);
    return std::make_pair(means.index_select(0, y) + torch::randn({count, features}), y);
  };
  Mixture m;
  std::tie(m.x_train, m.y_train) = sample(4000);
  std::tie(m.x_test, m.y_test) = sample(1000);
  return m;
}

/// Trains a 32-64-10 MLP on 4 workers' shards for `steps` synchronous steps; `codec` empty
/// means exact averaging. Returns test accuracy.
double train_mixture(const Mixture& data, const std::string& codec, const json& params, int steps) {
  const int workers = 4, batch = 32;
  torch::manual_seed(7);
  torch::nn::Sequential model(torch::nn::Linear(32, 64), torch::nn::ReLU(), torch::nn::Linear(64, 10));
  std::int64_t numel = 0;
  for (const auto& p : model->parameters()) numel += p.numel();
  std::unique_ptr<Group> group;
  if (!codec.empty()) group = std::make_unique<Group>(codec, workers, numel, params);
  torch::Tensor momentum = torch::zeros({numel});
  const double lr = 0.05;
  const std::int64_t shard = data.x_train.size(0) / workers;
  for (int step = 0; step < steps; ++step) {
    std::vector<torch::Tensor> grads;
    for (int w = 0; w < workers; ++w) {
      const std::int64_t start = w * shard + (step * batch) % (shard - batch);
      model->zero_grad();
      const torch::Tensor loss = torch::cross_entropy_loss(
          model->forward(data.x_train.narrow(0, start, batch)), data.y_train.narrow(0, start, batch));
      loss.backward();
      std::vector<torch::Tensor> parts;
      for (const auto& p : model->parameters()) parts.push_back(p.grad().reshape({-1}));
      grads.push_back(torch::cat(parts).contiguous());
    }
    torch::Tensor update;
    if (group) {
      update = run_exchange(group->workers, grads, codec == "lgc_ps" ? group->server : nullptr).results[0];
    } else {
      update = torch::stack(grads).mean(0);
    }
    momentum = momentum * 0.9 + update;
    torch::NoGradGuard no_grad;
    std::int64_t offset = 0;
    for (auto& p : model->parameters()) {
      p.sub_(lr * momentum.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor predicted = model->forward(data.x_test).argmax(1);
  return predicted.eq(data.y_test).to(torch::kFloat).mean().item<double>();
}

TEST(LgcEndToEnd, SyntheticTrainsWithinAFewPointsOfUncompressed) {
  const Mixture data = make_mixture();
  const int steps = 200;
  const double dense = train_mixture(data, "", {}, steps);
  EXPECT_GT(dense, 0.6);
  const json params = {{"ratio", 0.1}, {"phase1_steps", 50}, {"ae_train_iters", 60}};
  const double ring = train_mixture(data, "lgc_ring", params, steps);
  const double ps = train_mixture(data, "lgc_ps", params, steps);
  std::printf("synthetic accuracy: none %.3f, lgc_ring %.3f, lgc_ps %.3f\n", dense, ring, ps);
  EXPECT_GT(ring, dense - 0.05);
  EXPECT_GT(ps, dense - 0.05);
}

}  // namespace
}  // namespace gradwire
