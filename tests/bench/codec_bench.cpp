// Encode / decode throughput of the built-in codecs at gradient sizes gradwire trains:
// 61,706 (the LeNet-5-like cnn), 1M and 10M elements. Bytes processed are the dense float32
// bytes of the gradient (4 per element) for both directions, so MB/s compare across codecs.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>

#include <torch/types.h>
#include <torch/utils.h>

#include "codecs/Codec.h"
#include "codecs/DenseCodec.h"
#include "codecs/sparsify/TopKCodec.h"
#include "common/LargeBuffers.h"

namespace {

using gradwire::Bytes;
using gradwire::Codec;

// Ratio 0 selects the dense codec; range(1) is the top-k ratio scaled by 1e4.
std::unique_ptr<Codec> make_codec(std::int64_t ratio_e4) {
  if (ratio_e4 == 0) return std::make_unique<gradwire::DenseCodec>();
  return std::make_unique<gradwire::TopKCodec>(static_cast<double>(ratio_e4) / 1e4);
}

torch::Tensor gradient(std::int64_t n) {
  at::manual_seed(1);
  return torch::randn({n}, torch::kFloat);
}

void set_counters(benchmark::State& state, std::int64_t n, std::size_t payload_size) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4);
  state.counters["payload_bytes"] = static_cast<double>(payload_size);
  state.counters["compression"] = static_cast<double>(n * 4) / static_cast<double>(payload_size);
}

void BM_Encode(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto codec = make_codec(state.range(1));
  const auto g = gradient(n);
  std::size_t size = 0;
  for (auto _ : state) {
    Bytes payload = codec->encode(g);
    size = payload.size();
    benchmark::DoNotOptimize(payload.data());
  }
  set_counters(state, n, size);
  state.SetLabel(codec->name());
}

void BM_Decode(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  auto codec = make_codec(state.range(1));
  const Bytes payload = codec->encode(gradient(n));
  for (auto _ : state) {
    auto out = codec->decode(payload);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  set_counters(state, n, payload.size());
  state.SetLabel(codec->name());
}

void sizes_and_codecs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "ratio_e4"});
  for (std::int64_t n : {61706, 1000000, 10000000}) {
    for (std::int64_t ratio_e4 : {0, 100, 10}) b->Args({n, ratio_e4});  // none, topk 0.01, 0.001
  }
  b->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Encode)->Apply(sizes_and_codecs);
BENCHMARK(BM_Decode)->Apply(sizes_and_codecs);

}  // namespace

// Encode outputs of 25M elements exceed glibc's mmap threshold: without this every iteration
// would time the OS's first-touch page faults (common/LargeBuffers.h), not the codec.
const bool kReuseLargeBuffers = (gradwire::reuse_large_buffers(), true);

BENCHMARK_MAIN();
