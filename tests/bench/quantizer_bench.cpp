// Encode / decode throughput of the quantisation codecs at 1M and 25M elements, beside a
// memcpy of the same float32 gradient in the same run (the goal: every quantiser's
// encode within 4x the time of one memcpy of its input). Bytes processed are the dense
// float32 bytes (4 per element) in both directions, so GB/s compare across codecs and with
// memcpy. The error-feedback methods (onebit, efsignsgd, topk_natural) are measured without
// their ErrorFeedback wrapper, which adds two tensor passes (compensate, residual) that any
// codec pays alike.
//
//   build/tests/bench/quantizer_bench --benchmark_filter='25000000'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/ErrorFeedback.h"
#include "common/LargeBuffers.h"

namespace {

using gradwire::Bytes;
using gradwire::Codec;
using nlohmann::json;

const std::vector<std::pair<std::string, json>>& codecs() {
  static const std::vector<std::pair<std::string, json>> list = {
      {"qsgd", {{"kind", "qsgd"}}},
      {"natural_dithering", {{"kind", "natural_dithering"}}},
      {"natural", {{"kind", "natural"}}},
      {"terngrad", {{"kind", "terngrad"}}},
      {"terngrad_shared", {{"kind", "terngrad"}, {"scaler_sharing", true}, {"shared_scale", 2.0}}},
      {"onebit", {{"kind", "onebit"}}},
      {"signsgd", {{"kind", "signsgd"}}},
      {"signum", {{"kind", "signum"}}},
      {"efsignsgd", {{"kind", "efsignsgd"}}},
      {"fp16", {{"kind", "fp16"}}},
      {"bf16", {{"kind", "bf16"}}},
      {"topk_natural", {{"kind", "topk_natural"}}},
  };
  return list;
}

std::unique_ptr<Codec> make_codec(std::size_t which, std::int64_t n) {
  gradwire::CodecContext ctx;
  ctx.numel = n;
  return gradwire::CodecRegistry::builtin().create(codecs()[which].second, ctx);
}

torch::Tensor gradient(std::int64_t n) {
  at::manual_seed(1);
  return torch::randn({n}, torch::kFloat) * 0.01;
}

void set_counters(benchmark::State& state, std::int64_t n, std::size_t payload) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4);
  state.counters["payload_bytes"] = static_cast<double>(payload);
  if (payload > 0) state.counters["compression"] = static_cast<double>(n * 4) / static_cast<double>(payload);
}

void BM_Memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto g = gradient(n);
  std::vector<float> dst(static_cast<std::size_t>(n));
  for (auto _ : state) {
    std::memcpy(dst.data(), g.data_ptr<float>(), static_cast<std::size_t>(n) * 4);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, static_cast<std::size_t>(n) * 4);
  state.SetLabel("memcpy");
}

/// The codec to measure: ErrorFeedback wrappers are peeled so the method itself is timed.
Codec& method(std::unique_ptr<Codec>& codec) {
  if (auto* ef = dynamic_cast<gradwire::ErrorFeedback*>(codec.get())) {
    return const_cast<Codec&>(ef->inner());
  }
  return *codec;
}

void BM_Encode(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto which = static_cast<std::size_t>(state.range(1));
  auto owner = make_codec(which, n);
  Codec& codec = method(owner);
  const auto g = gradient(n);
  std::size_t size = 0;
  for (auto _ : state) {
    Bytes payload = codec.encode(g);
    size = payload.size();
    benchmark::DoNotOptimize(payload.data());
  }
  set_counters(state, n, size);
  state.SetLabel(codecs()[which].first);
}

void BM_Decode(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const auto which = static_cast<std::size_t>(state.range(1));
  auto owner = make_codec(which, n);
  Codec& codec = method(owner);
  const Bytes payload = codec.encode(gradient(n));
  for (auto _ : state) {
    auto out = codec.decode(payload);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  set_counters(state, n, payload.size());
  state.SetLabel(codecs()[which].first);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n"});
  for (std::int64_t n : {1000000, 25000000}) b->Args({n});
  b->Unit(benchmark::kMillisecond);
}

void sizes_and_codecs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "codec"});
  for (std::int64_t n : {1000000, 25000000}) {
    for (std::size_t c = 0; c < codecs().size(); ++c) b->Args({n, static_cast<std::int64_t>(c)});
  }
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Memcpy)->Apply(sizes);
BENCHMARK(BM_Encode)->Apply(sizes_and_codecs);
BENCHMARK(BM_Decode)->Apply(sizes_and_codecs);

}  // namespace

// Encode outputs of 25M elements exceed glibc's mmap threshold: without this every iteration
// would time the OS's first-touch page faults (common/LargeBuffers.h), not the codec.
const bool kReuseLargeBuffers = (gradwire::reuse_large_buffers(), true);

BENCHMARK_MAIN();
