// Encode / decode throughput of the sparsifiers ("Speed"), in bytes of fp32 input per
// second, for 1M and 25M elements, beside a memcpy of the same buffer and exact torch::topk
// (k = 0.1%) measured in the same run. Goals on 25M elements, one thread: dgc at 0.1% density
// encodes within 3x one memcpy and at least 20x faster than torch::topk; sdagc and adacomp
// (default parameters) encode within 3x one memcpy, so their simulated codec time is not that
// of a slow implementation. BM_Encode's `x_memcpy` counter is its time per encode over that
// of a memcpy of the same size timed right after its encodes, in the same process (every
// codec, so sdagc's and adacomp's ratios are always reported).
//
// DgcCodec splits its pass over the intra-op threads (at::get_num_threads(); default: one per
// core); BM_DgcEncodeThreads pins the count so the single-thread figure is reported too.
//
//   build/tests/bench/sparsifier_bench --benchmark_filter='n:26214400' --benchmark_repetitions=5
//   build/tests/bench/sparsifier_bench --benchmark_filter='Encode/n:26214400/codec:[34]'  (sdagc, adacomp)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "common/LargeBuffers.h"

namespace gradwire {
namespace {

constexpr std::int64_t k1M = 1 << 20;
constexpr std::int64_t k25M = 25 * (1 << 20);

const torch::Tensor& gradient(std::int64_t n) {
  static std::map<std::int64_t, torch::Tensor> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    torch::manual_seed(1);
    it = cache.emplace(n, torch::randn({n}) * torch::rand({n})).first;
  }
  return it->second;
}

void set_rate(benchmark::State& state, std::int64_t n) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * n * 4);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void BM_Memcpy(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const torch::Tensor& g = gradient(n);
  std::vector<float> dst(static_cast<std::size_t>(n));
  for (auto _ : state) {
    std::memcpy(dst.data(), g.data_ptr<float>(), static_cast<std::size_t>(n) * 4);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, n);
}

void BM_TorchTopk(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const torch::Tensor& g = gradient(n);
  const std::int64_t k = std::max<std::int64_t>(1, n / 1000);
  for (auto _ : state) {
    auto r = torch::topk(g.abs(), k);
    benchmark::DoNotOptimize(std::get<1>(r).data_ptr());
  }
  set_rate(state, n);
}

const char* codec_json(int which) {
  static const char* kCodecs[] = {
      R"({"kind":"dgc","warmup":false})",  // 0.1%, momentum correction on
      R"({"kind":"dgc","warmup":false,"momentum_correction":false})",
      R"({"kind":"gradient_dropping","drop_ratio":0.999})",
      R"({"kind":"sdagc"})",
      R"({"kind":"adacomp"})",
      R"({"kind":"randomk","ratio":0.001})",
      R"({"kind":"topk","ratio":0.001})",
      R"({"kind":"dgc","warmup":false,"zstd":true})",
  };
  return kCodecs[which];
}

std::unique_ptr<Codec> make(int which, std::int64_t n) {
  CodecContext ctx;
  ctx.numel = n;
  return CodecRegistry::builtin().create(nlohmann::json::parse(codec_json(which)), ctx);
}

void BM_Encode(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int which = static_cast<int>(state.range(1));
  auto codec = make(which, n);
  const torch::Tensor& g = gradient(n);
  codec->encode(g);  // first call allocates the state
  std::size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    Bytes p = codec->encode(g);
    bytes = p.size();
    benchmark::DoNotOptimize(p.data());
  }
  const double seconds = seconds_since(start) / static_cast<double>(state.iterations());
  set_rate(state, n);
  // The memcpy of the same size, timed right after the encodes (the machine's load moves
  // between benchmarks): at least as many copies as encodes and 0.2 s, each into a buffer
  // touched before.
  std::vector<float> dst(static_cast<std::size_t>(n));
  std::memcpy(dst.data(), g.data_ptr<float>(), static_cast<std::size_t>(n) * 4);
  std::int64_t copies = 0;
  const auto copy_start = std::chrono::steady_clock::now();
  while (copies < static_cast<std::int64_t>(state.iterations()) || seconds_since(copy_start) < 0.2) {
    std::memcpy(dst.data(), g.data_ptr<float>(), static_cast<std::size_t>(n) * 4);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    ++copies;
  }
  const double copy_seconds = seconds_since(copy_start) / static_cast<double>(copies);
  state.counters["x_memcpy"] = seconds / copy_seconds;
  state.counters["payload_B"] = static_cast<double>(bytes);
  state.counters["density"] = codec->last_density();
  state.SetLabel(codec_json(which));
}

void BM_DgcEncodeThreads(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const int before = at::get_num_threads();
  at::set_num_threads(threads);
  auto codec = make(0, n);
  const torch::Tensor& g = gradient(n);
  codec->encode(g);
  for (auto _ : state) {
    Bytes p = codec->encode(g);
    benchmark::DoNotOptimize(p.data());
  }
  at::set_num_threads(before);
  set_rate(state, n);
  state.counters["density"] = codec->last_density();
  state.SetLabel(std::string(codec_json(0)) + " threads " + std::to_string(threads));
}

void BM_Decode(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const int which = static_cast<int>(state.range(1));
  auto codec = make(which, n);
  const Bytes p = codec->encode(gradient(n));
  for (auto _ : state) {
    torch::Tensor t = codec->decode(ByteSpan(p));
    benchmark::DoNotOptimize(t.data_ptr());
  }
  set_rate(state, n);
  state.SetLabel(codec_json(which));
}

void sizes(benchmark::internal::Benchmark* b) {
  b->ArgName("n")->Arg(k1M)->Arg(k25M)->Unit(benchmark::kMillisecond)->UseRealTime();
}

void codec_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "codec"})->Unit(benchmark::kMillisecond)->UseRealTime();
  for (std::int64_t n : {k1M, k25M}) {
    for (int c = 0; c < 8; ++c) b->Args({n, c});
  }
}

BENCHMARK(BM_Memcpy)->Apply(sizes);
BENCHMARK(BM_TorchTopk)->Apply(sizes);
BENCHMARK(BM_Encode)->Apply(codec_sizes);
BENCHMARK(BM_Decode)->Apply(codec_sizes);
BENCHMARK(BM_DgcEncodeThreads)
    ->ArgNames({"n", "threads"})
    ->Args({k1M, 1})
    ->Args({k25M, 1})
    ->Args({k25M, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace gradwire

// Encode outputs of 25M elements exceed glibc's mmap threshold: without this every iteration
// would time the OS's first-touch page faults (common/LargeBuffers.h), not the codec.
const bool kReuseLargeBuffers = (gradwire::reuse_large_buffers(), true);

BENCHMARK_MAIN();
