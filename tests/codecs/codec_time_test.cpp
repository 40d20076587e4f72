// Codec time: the declared work of codecs (CodecWork, seconds_on) and the timing decorators
// (TimedCodec, TimedMultiRoundCodec). The decorators must be invisible to the data path (same
// payloads, decodes, sums and state as an undecorated twin, every registered codec) and charge
// what the timing mode says: the declared work on a device profile, or wall time x scale.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ExchangeDriver.h"
#include "codecs/CodecRegistry.h"
#include "codecs/CodecWork.h"
#include "codecs/DenseCodec.h"
#include "codecs/ErrorFeedback.h"
#include "codecs/MultiRoundCodec.h"
#include "codecs/TimedCodec.h"
#include "codecs/TimedMultiRoundCodec.h"
#include "codecs/sparsify/TopKCodec.h"
#include "common/WorkStopwatch.h"

namespace gradwire {
namespace {

using nlohmann::json;

/// Records every charge.
class RecordingTimer : public CodecTimer {
 public:
  struct Charge {
    CodecOp op;
    double seconds;
  };
  void charge(CodecOp op, double seconds) override { charges.push_back({op, seconds}); }
  double total(CodecOp op) const {
    double s = 0;
    for (const Charge& c : charges) s += c.op == op ? c.seconds : 0.0;
    return s;
  }
  std::size_t count(CodecOp op) const {
    return static_cast<std::size_t>(std::count_if(charges.begin(), charges.end(),
                                                  [&](const Charge& c) { return c.op == op; }));
  }
  std::vector<Charge> charges;
};

/// A laptop-class CPU core's sustained rates: 20 GB/s streaming, 10 Gop/s scalar.
constexpr CodecDevice kCpu{20e9, 10e9};

CodecTiming profile(CodecDevice device = kCpu) {
  CodecTiming t;
  t.mode = CodecTiming::Mode::kProfile;
  t.device = device;
  return t;
}

CodecTiming measured(double scale) {
  CodecTiming t;
  t.mode = CodecTiming::Mode::kMeasured;
  t.scale = scale;
  return t;
}

/// Two weight matrices and their biases, so per-layer codecs (DGC, PowerSGD, one-bit) see a
/// model layout: 24x20, 24, 10x24, 10.
std::vector<LayerSlice> small_layout() {
  return {LayerSlice{"fc1.weight", 0, {24, 20}}, LayerSlice{"fc1.bias", 480, {24}},
          LayerSlice{"fc2.weight", 504, {10, 24}}, LayerSlice{"fc2.bias", 744, {10}}};
}
constexpr std::int64_t kNumel = 754;

CodecContext context(int rank, int workers, std::int64_t numel, std::vector<LayerSlice> layers) {
  CodecContext ctx;
  ctx.rank = rank;
  ctx.workers = workers;
  ctx.seed = 7;
  ctx.numel = numel;
  ctx.layers = std::move(layers);
  ctx.steps_per_epoch = 2;
  return ctx;
}

/// Settings that make a codec show its later phases within a few steps.
json settings(const std::string& name) {
  json object{{"kind", name}};
  if (name == "lgc_ps" || name == "lgc_ring") {
    object["phase1_steps"] = 1;
    object["ae_train_iters"] = 2;
  }
  if (name == "gradiveq") {
    object["warmup_steps"] = 1;
  }
  return object;
}

std::unique_ptr<Codec> build(const json& object, const CodecContext& ctx) {
  const auto& reg = CodecRegistry::builtin();
  return reg.create(reg.resolve(object, "codec"), ctx);
}

torch::Tensor gradient(std::int64_t n, int seed) {
  torch::manual_seed(seed);
  return torch::randn({n}, torch::kFloat);
}

void expect_same_tensor(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  // Bit for bit (NaN-safe): the decorator must not change a single value.
  EXPECT_TRUE(torch::equal(a.contiguous().view(torch::kInt), b.contiguous().view(torch::kInt))) << what;
}

// --- Forwarding: every registered codec, decorated, behaves exactly as its twin ---------------

TEST(TimedCodec, EveryCodecMatchesItsUndecoratedTwin) {
  const auto& reg = CodecRegistry::builtin();
  for (const CodecInfo& info : reg.list()) {
    SCOPED_TRACE(info.name);
    const CodecContext ctx = context(0, 2, kNumel, small_layout());
    const json object = settings(info.name);
    std::unique_ptr<Codec> plain = build(object, ctx);
    std::unique_ptr<Codec> inner = build(object, ctx);
    RecordingTimer timer;
    std::unique_ptr<Codec> timed = time_codec(*inner, timer, profile());
    EXPECT_EQ(timed->name(), plain->name());
    EXPECT_EQ(timed->traits().aggregation, plain->traits().aggregation);
    EXPECT_EQ(timed->traits().applies_momentum, plain->traits().applies_momentum);
    EXPECT_EQ(timed->traits().loss_tolerance.from, plain->traits().loss_tolerance.from);
    EXPECT_EQ(dynamic_cast<MultiRoundCodec*>(timed.get()) != nullptr,
              dynamic_cast<MultiRoundCodec*>(plain.get()) != nullptr);

    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const torch::Tensor g = gradient(kNumel, 100 + step);
      std::vector<Bytes> a;
      std::vector<Bytes> b;
      // The ring's form, chunks, for the codecs whose payloads add hop by hop (the others keep
      // state for one whole gradient and are encoded whole).
      if (step == 2 && plain->traits().aggregation == Aggregation::kSummable) {
        const std::vector<std::int64_t> bounds{0, kNumel / 2, kNumel};
        a = plain->encode_chunks(g, bounds);
        b = timed->encode_chunks(g, bounds);
      } else {
        a = {plain->encode(g)};
        b = {timed->encode(g)};
      }
      ASSERT_EQ(a, b);
      EXPECT_EQ(timed->last_density(), plain->last_density());
      for (std::size_t i = 0; i < a.size(); ++i) {
        expect_same_tensor(timed->decode(a[i]), plain->decode(a[i]), "decode");
      }
      if (plain->traits().aggregation == Aggregation::kSummable) {
        Bytes acc_plain = a[0];
        Bytes acc_timed = a[0];
        plain->accumulate(acc_plain, a[0]);
        timed->accumulate(acc_timed, a[0]);
        EXPECT_EQ(acc_plain, acc_timed);
      }
      // The update every worker applies covers the whole gradient (all chunks).
      std::vector<torch::Tensor> parts;
      for (const Bytes& chunk : a) parts.push_back(plain->decode(chunk));
      const torch::Tensor sum = torch::cat(parts);
      expect_same_tensor(timed->finalize(sum.clone(), 2), plain->finalize(sum.clone(), 2),
                         "finalize");
      plain->observe_aggregate(sum);
      timed->observe_aggregate(sum);
      EXPECT_EQ(timed->save_state(), plain->save_state());
    }
    // Profile charges are a pure function of the declared work: positive for encode.
    EXPECT_EQ(timer.count(CodecOp::kEncode), 3u);
    EXPECT_GT(timer.total(CodecOp::kEncode), 0.0);
    EXPECT_GT(timer.total(CodecOp::kDecode), 0.0);
    EXPECT_GT(timer.total(CodecOp::kFinalize), 0.0);
    // State loaded through the decorator reaches the inner codec.
    const Bytes state = plain->save_state();
    timed->load_state(state);
    EXPECT_EQ(inner->save_state(), state);
  }
}

TEST(TimedMultiRoundCodec, RoundsMatchTheUndecoratedTwins) {
  const auto& reg = CodecRegistry::builtin();
  constexpr int kWorkers = 2;
  std::vector<json> objects;
  for (const CodecInfo& info : reg.list()) {
    if (info.multi_round) objects.push_back(settings(info.name));
  }
  objects.push_back(json{{"kind", "terngrad"}, {"scaler_sharing", true}});
  ASSERT_GE(objects.size(), 4u);  // powersgd, lgc_ps, lgc_ring, terngrad's agreed scales
  for (const json& object : objects) {
    SCOPED_TRACE(object.dump());
    std::vector<std::unique_ptr<Codec>> plain;
    std::vector<std::unique_ptr<Codec>> inner;
    std::vector<std::unique_ptr<Codec>> timed;
    std::vector<RecordingTimer> timers(kWorkers);
    std::vector<MultiRoundCodec*> plain_rounds;
    std::vector<MultiRoundCodec*> timed_rounds;
    for (int rank = 0; rank < kWorkers; ++rank) {
      const CodecContext ctx = context(rank, kWorkers, kNumel, small_layout());
      plain.push_back(build(object, ctx));
      inner.push_back(build(object, ctx));
      timed.push_back(time_codec(*inner.back(), timers[rank], profile()));
      plain_rounds.push_back(dynamic_cast<MultiRoundCodec*>(plain.back().get()));
      timed_rounds.push_back(dynamic_cast<MultiRoundCodec*>(timed.back().get()));
      ASSERT_NE(plain_rounds.back(), nullptr);
      ASSERT_NE(timed_rounds.back(), nullptr) << "the decorator hides the rounds";
      EXPECT_NE(dynamic_cast<TimedMultiRoundCodec*>(timed.back().get()), nullptr);
    }
    std::size_t calls = 0;
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      std::vector<torch::Tensor> grads;
      for (int rank = 0; rank < kWorkers; ++rank) grads.push_back(gradient(kNumel, 10 * step + rank));
      const testing::ExchangeTrace a = testing::run_exchange(plain_rounds, grads);
      const testing::ExchangeTrace b = testing::run_exchange(timed_rounds, grads);
      ASSERT_EQ(a.rounds.size(), b.rounds.size());
      calls += a.rounds.size() + 1;  // begin_exchange + one continue_exchange per round
      for (std::size_t r = 0; r < a.rounds.size(); ++r) {
        EXPECT_EQ(a.rounds[r].sizes, b.rounds[r].sizes);
        EXPECT_EQ(a.rounds[r].payloads, b.rounds[r].payloads);
      }
      for (int rank = 0; rank < kWorkers; ++rank) {
        expect_same_tensor(a.results[rank], b.results[rank], "exchange_result");
        EXPECT_EQ(timed[rank]->save_state(), plain[rank]->save_state());
      }
    }
    // Every call of the exchange is charged as a round (kReduce rounds add reduce_round's).
    EXPECT_GE(timers[0].count(CodecOp::kRound), calls);
    EXPECT_GT(timers[0].total(CodecOp::kRound), 0.0);
  }
}

TEST(TimedCodec, TimeCodecPicksTheDecorator) {
  DenseCodec dense;
  RecordingTimer timer;
  std::unique_ptr<Codec> timed = time_codec(dense, timer, profile());
  EXPECT_NE(dynamic_cast<TimedCodec*>(timed.get()), nullptr);
  EXPECT_EQ(dynamic_cast<MultiRoundCodec*>(timed.get()), nullptr);
  EXPECT_THROW(time_codec(dense, timer, profile(CodecDevice{0, 1e9})), std::invalid_argument);
  EXPECT_THROW(time_codec(dense, timer, measured(-1)), std::invalid_argument);
}

// --- Declared work and seconds_on -------------------------------------------------------------

TEST(CodecWork, SecondsOnFollowsTheDocumentedRule) {
  CodecWork w;
  w.memory_bytes = 3e9;
  w.flops = 2e9;
  w.select_elements = 1e8;
  w.select_compares = 5e8;
  const CodecDevice device{30e9, 100e9};
  // memory / bandwidth + (flops + compares) / flops_per_s
  EXPECT_DOUBLE_EQ(seconds_on(w, device), 3e9 / 30e9 + (2e9 + 5e8) / 100e9);
  // Elements alone cost nothing: the compares carry the selection's cost.
  CodecWork elements_only;
  elements_only.select_elements = 1e9;
  EXPECT_EQ(seconds_on(elements_only, device), 0.0);
  EXPECT_THROW(seconds_on(w, CodecDevice{0, 1e9}), std::invalid_argument);
  EXPECT_THROW(seconds_on(w, CodecDevice{1e9, -1}), std::invalid_argument);
  EXPECT_THROW(seconds_on(w, CodecDevice{1e9, std::nan("")}), std::invalid_argument);
}

TEST(CodecWork, SelectionIsNLog2KCompares) {
  const CodecWork s = CodecWork::selection(1e6, 1024);
  EXPECT_EQ(s.select_elements, 1e6);
  EXPECT_DOUBLE_EQ(s.select_compares, 1e6 * 10);
  // At least one compare per element, even for k = 1.
  EXPECT_DOUBLE_EQ(CodecWork::selection(100, 1).select_compares, 100);
  // A sparse gather costs a cache line per element, never more than a full pass.
  EXPECT_EQ(CodecWork::gather(1000, 10).memory_bytes, 640);
  EXPECT_EQ(CodecWork::gather(1000, 500).memory_bytes, 4000);
}

TEST(CodecWork, DefaultIsOneStreamingPass) {
  DenseCodec dense;
  const std::uint64_t payload = DenseCodec::payload_size(1000);
  EXPECT_EQ(dense.work(CodecOp::kEncode, 1000, payload), CodecWork::memory(4000 + payload));
  EXPECT_EQ(dense.work(CodecOp::kDecode, 1000, payload), CodecWork::memory(payload + 4000));
  EXPECT_EQ(dense.work(CodecOp::kAccumulate, 1000, payload),
            CodecWork::memory(3.0 * payload) + CodecWork::compute(1000));
  EXPECT_EQ(dense.work(CodecOp::kFinalize, 1000, 0),
            CodecWork::memory(8000) + CodecWork::compute(1000));
  EXPECT_EQ(dense.work(CodecOp::kRound, 1000, 0), CodecWork{});
}

TEST(CodecTimeProfile, PassBasedCodecGrowsLinearlyWithNumel) {
  for (const char* name : {"none", "fp16", "qsgd", "signsgd"}) {
    SCOPED_TRACE(name);
    std::vector<double> seconds;
    for (const std::int64_t n : {100000, 200000, 400000}) {
      std::unique_ptr<Codec> codec = build(json{{"kind", name}}, context(0, 2, n, {}));
      RecordingTimer timer;
      std::unique_ptr<Codec> timed = time_codec(*codec, timer, profile());
      const Bytes payload = timed->encode(gradient(n, 1));
      timed->decode(payload);
      seconds.push_back(timer.total(CodecOp::kEncode) + timer.total(CodecOp::kDecode));
    }
    // Doubling n doubles the time, up to the fixed-size header (well under 0.1%).
    EXPECT_NEAR(seconds[1] / seconds[0], 2.0, 2e-3);
    EXPECT_NEAR(seconds[2] / seconds[1], 2.0, 2e-3);
  }
}

TEST(CodecTimeProfile, TopKChargesItsDeclaredSelection) {
  const std::int64_t n = 100000;
  TopKCodec topk(0.01);
  RecordingTimer timer;
  std::unique_ptr<Codec> timed = time_codec(topk, timer, profile());
  const Bytes payload = timed->encode(gradient(n, 3));
  const double k = 1000;
  // By hand: a scan of 4n bytes, the payload written, k values gathered a cache line each;
  // n log2(k) compares.
  const double memory = 4.0 * n + static_cast<double>(payload.size()) + 64.0 * k;
  const double compares = n * std::log2(k);
  ASSERT_EQ(timer.count(CodecOp::kEncode), 1u);
  EXPECT_DOUBLE_EQ(timer.total(CodecOp::kEncode),
                   memory / kCpu.memory_bandwidth + compares / kCpu.flops_per_s);
  const CodecWork declared = topk.work(CodecOp::kEncode, n, payload.size());
  EXPECT_EQ(declared.select_elements, n);
  // The selection is most of top-k's declared time on this device.
  EXPECT_GT(compares / kCpu.flops_per_s, memory / kCpu.memory_bandwidth);
}

TEST(CodecTimeProfile, ErrorFeedbackAddsItsPassesToTheInnerCodec) {
  const std::int64_t n = 50000;
  TopKCodec alone(0.01);
  ErrorFeedback ef(std::make_unique<TopKCodec>(0.01));
  const std::uint64_t payload = TopKCodec::payload_size(500);
  const CodecWork expected = alone.work(CodecOp::kEncode, n, payload) +
                             alone.work(CodecOp::kDecode, n, payload) +
                             CodecWork::memory(24.0 * n) + CodecWork::compute(2.0 * n);
  EXPECT_EQ(ef.work(CodecOp::kEncode, n, payload), expected);
  EXPECT_EQ(ef.work(CodecOp::kDecode, n, payload), alone.work(CodecOp::kDecode, n, payload));
}

TEST(CodecTimeProfile, PowerSgdFlopsScaleWithRank) {
  const std::vector<LayerSlice> layers{LayerSlice{"w", 0, {256, 128}}};
  const std::int64_t n = 256 * 128;
  std::vector<double> flops;
  std::vector<double> seconds;
  for (const int rank : {1, 4}) {
    std::unique_ptr<Codec> codec =
        build(json{{"kind", "powersgd"}, {"rank", rank}}, context(0, 1, n, layers));
    RecordingTimer timer;
    std::unique_ptr<Codec> timed = time_codec(*codec, timer, profile());
    auto* rounds = dynamic_cast<MultiRoundCodec*>(timed.get());
    ASSERT_NE(rounds, nullptr);
    testing::run_exchange({rounds}, {gradient(n, 5)});
    // Three calls (begin, after P, after Q), each charged its declared round work.
    ASSERT_EQ(timer.count(CodecOp::kRound), 3u);
    double declared = 0;
    for (int call = 0; call < 3; ++call) declared += seconds_on(rounds->round_work(call, n), kCpu);
    EXPECT_DOUBLE_EQ(timer.total(CodecOp::kRound), declared);
    double f = 0;
    for (int call = 0; call < 3; ++call) f += rounds->round_work(call, n).flops;
    flops.push_back(f);
    seconds.push_back(timer.total(CodecOp::kRound));
  }
  // Three products (M Q, M^T P, P Q^T) of 2 rows cols r operations each: going from rank 1
  // to rank 4 adds at least 3 x 2 n (4 - 1), plus the larger Gram-Schmidt.
  EXPECT_GE(flops[0], 3 * 2.0 * n);
  EXPECT_GT(flops[1] - flops[0], 3 * 2.0 * n * 3);
  EXPECT_LT(flops[1], 4.0 * flops[0]);
  EXPECT_GT(seconds[1], seconds[0]);
}

TEST(CodecTimeProfile, SlowerDeviceCostsMore) {
  const std::int64_t n = 100000;
  const CodecDevice slow{kCpu.memory_bandwidth / 2, kCpu.flops_per_s / 2};
  const CodecDevice slow_memory{kCpu.memory_bandwidth / 2, kCpu.flops_per_s};
  for (const char* name : {"topk", "qsgd", "dgc", "natural"}) {
    SCOPED_TRACE(name);
    std::vector<double> seconds;
    for (const CodecDevice& device : {kCpu, slow, slow_memory}) {
      std::unique_ptr<Codec> codec = build(json{{"kind", name}}, context(0, 2, n, {}));
      RecordingTimer timer;
      std::unique_ptr<Codec> timed = time_codec(*codec, timer, profile(device));
      timed->encode(gradient(n, 4));
      seconds.push_back(timer.total(CodecOp::kEncode));
    }
    EXPECT_DOUBLE_EQ(seconds[1], 2 * seconds[0]);  // both rates halved: twice the time
    EXPECT_GT(seconds[2], seconds[0]);
    EXPECT_LT(seconds[2], seconds[1]);
  }
}

/// LGC's steps on 3 workers, every worker's codec in profile timing: the seconds charged to
/// each rank in each step (begin_exchange, every continue_exchange and reduce_round).
std::vector<std::vector<double>> lgc_step_charges(const std::string& kind, int train_iters,
                                                  int steps) {
  constexpr int kWorkers = 3;
  constexpr std::int64_t n = 3000;
  const json object{{"kind", kind},
                    {"ratio", 0.05},
                    {"phase1_steps", 4},
                    {"ae_train_iters", train_iters},
                    {"ae_finetune_every", 3},
                    {"ae_finetune_iters", train_iters / 2}};
  std::vector<std::unique_ptr<Codec>> inner;
  std::vector<std::unique_ptr<Codec>> timed;
  std::vector<RecordingTimer> timers(kWorkers);
  std::vector<MultiRoundCodec*> rounds;
  for (int rank = 0; rank < kWorkers; ++rank) {
    inner.push_back(build(object, context(rank, kWorkers, n, {})));
    timed.push_back(time_codec(*inner.back(), timers[static_cast<std::size_t>(rank)], profile()));
    rounds.push_back(dynamic_cast<MultiRoundCodec*>(timed.back().get()));
  }
  std::vector<std::vector<double>> charged(kWorkers);
  for (int step = 0; step < steps; ++step) {
    std::vector<std::size_t> before;
    for (const RecordingTimer& t : timers) before.push_back(t.charges.size());
    std::vector<torch::Tensor> grads;
    for (int rank = 0; rank < kWorkers; ++rank) grads.push_back(gradient(n, 10 * step + rank));
    testing::run_exchange(rounds, grads);
    for (std::size_t r = 0; r < timers.size(); ++r) {
      double seconds = 0;  // this step's charges alone, summed in order
      for (std::size_t c = before[r]; c < timers[r].charges.size(); ++c) {
        seconds += timers[r].charges[c].seconds;
      }
      charged[r].push_back(seconds);
    }
  }
  return charged;
}

TEST(CodecTimeProfile, LgcAutoencoderTrainingIsChargedToRankZeroAndGrowsWithIterations) {
  // Phase 2 starts at step 4 (the first training, ae_train_iters); fine-tunes at 7 and 10
  // (ae_finetune_iters = half). Without iterations the same steps carry no training.
  constexpr int kSteps = 11;
  for (const char* kind : {"lgc_ring", "lgc_ps"}) {
    SCOPED_TRACE(kind);
    const auto none = lgc_step_charges(kind, 0, kSteps);
    const auto some = lgc_step_charges(kind, 40, kSteps);
    const auto more = lgc_step_charges(kind, 160, kSteps);
    for (int step = 0; step < kSteps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const auto s = static_cast<std::size_t>(step);
      const double extra = some[0][s] - none[0][s];
      const double extra_more = more[0][s] - none[0][s];
      if (step == 4 || step == 7 || step == 10) {
        // Rank 0 trained: charged, and in proportion to the iterations it ran.
        EXPECT_GT(extra, 0.0);
        EXPECT_NEAR(extra_more / extra, 4.0, 1e-6);
        // More than the rest of that worker's codec work in an ordinary phase-2 step.
        EXPECT_GT(extra, none[0][5]);
      } else {
        EXPECT_DOUBLE_EQ(some[0][s], none[0][s]);
        EXPECT_DOUBLE_EQ(more[0][s], none[0][s]);
      }
      // The other ranks only load the weights: no training on their devices.
      for (std::size_t r = 1; r < none.size(); ++r) {
        EXPECT_DOUBLE_EQ(some[r][s], none[r][s]) << "rank " << r;
        EXPECT_DOUBLE_EQ(more[r][s], none[r][s]) << "rank " << r;
      }
    }
    // The fine-tunes run half the iterations of the first training, on fewer rows (the vectors
    // of 3 steps; the first training had 4 steps' worth): each costs less than the first.
    EXPECT_LT(some[0][7] - none[0][7], some[0][4] - none[0][4]);
  }
}

// --- Measured mode ------------------------------------------------------------------------------

/// Dense, but every encode takes at least 20 ms of wall time.
/// An encode that first waits `wait` (asleep, as for a lock or a device) and then computes
/// for `work` of its thread's CPU time.
class SlowCodec : public DenseCodec {
 public:
  explicit SlowCodec(std::chrono::milliseconds work = std::chrono::milliseconds(20),
                     std::chrono::milliseconds wait = std::chrono::milliseconds(0))
      : work_(work), wait_(wait) {}
  Bytes encode(const torch::Tensor& grad) override {
    std::this_thread::sleep_for(wait_);
    const double until = thread_cpu_seconds() + std::chrono::duration<double>(work_).count();
    volatile unsigned sink = 0;
    while (thread_cpu_seconds() < until) sink = sink + 1;
    return DenseCodec::encode(grad);
  }

 private:
  std::chrono::milliseconds work_;
  std::chrono::milliseconds wait_;
};

double measured_encode(double scale, SlowCodec slow = SlowCodec(),
                       MeasuredClock clock = MeasuredClock::kThreadCpu) {
  RecordingTimer timer;
  CodecTiming timing = measured(scale);
  timing.clock = clock;
  std::unique_ptr<Codec> timed = time_codec(slow, timer, timing);
  timed->encode(gradient(100, 1));
  EXPECT_EQ(timer.count(CodecOp::kEncode), 1u);
  return timer.total(CodecOp::kEncode);
}

TEST(CodecTimeMeasured, ChargesTheCallsCpuTimeTimesScale) {
  // Best of three against the machine's load; CPU time is what the encode computed, so the
  // lower bounds are exact and the ordering holds unless a run is slowed by more than 2x.
  double full = 1e9;
  double half = 1e9;
  for (int i = 0; i < 3; ++i) {
    full = std::min(full, measured_encode(1.0));
    half = std::min(half, measured_encode(0.5));
  }
  EXPECT_GE(full, 0.020);
  EXPECT_GE(half, 0.010);
  EXPECT_LT(half, full);
  EXPECT_LT(half, 0.75 * full);
}

TEST(CodecTimeMeasured, AWaitIsNotChargedByDefaultAndIsOnTheWallClock) {
  // 40 ms asleep, then 10 ms of computing: measured codec time charges what the call computed
  // on its thread, as it would on a core of its own, not the time it spent off the CPU (what
  // other programs holding the cores make of a call looks the same to the thread's clock).
  const SlowCodec waits(std::chrono::milliseconds(10), std::chrono::milliseconds(40));
  const double cpu = measured_encode(1.0, waits);
  EXPECT_GE(cpu, 0.010);
  EXPECT_LT(cpu, 0.030);
  // The wall clock (passes on a GPU or on several threads) charges the wait too.
  const double wall = measured_encode(1.0, waits, MeasuredClock::kWall);
  EXPECT_GE(wall, 0.050);
}

}  // namespace
}  // namespace gradwire
