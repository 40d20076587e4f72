// One training step of each built-in model as a worker takes it (batch 32 by default: forward,
// loss, backward, gradients flattened into the one float32 vector codecs read), timed on this
// machine's CPU or GPU. tests/bench/step-vs-pytorch runs it beside the same step in PyTorch
// eager (step_bench.py) with the same thread count and device and prints the table
// docs/models.md (CPU) and docs/performance.md (GPU) carry.
//
//   step_bench [--threads N] [--steps N] [--models resnet20,lstm_lm,...] [--batch N]
//              [--device cpu|cuda]
// prints one JSON object per model: {"model", "parameters", "flops_per_sample", "step_ms"}
// (step_ms: the median of N timed steps after 3 warm-up steps; on a GPU each step ends when
// its kernels have run, as a worker's measured compute does).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "common/LargeBuffers.h"
#include "nodes/training/Loss.h"
#include "nodes/training/Model.h"

namespace {

using gradwire::ModelConfig;
using gradwire::ModelInput;

constexpr std::int64_t kVocab = 10000;
constexpr std::int64_t kBptt = 35;

struct Case {
  std::string name;
  ModelInput input;
};

std::vector<Case> all_cases() {
  const ModelInput cifar{{3, 32, 32}, 10, false};
  const ModelInput text{{kBptt}, kVocab, true};
  return {{"resnet20", cifar}, {"resnet56", cifar},  {"resnet18", cifar},
          {"vgg16", cifar},    {"mobilenetv2", cifar}, {"lstm_lm", text},
          {"transformer", text}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

nlohmann::json time_step(const Case& c, int steps, std::int64_t batch, const torch::Device& device) {
  torch::manual_seed(1);
  ModelConfig config;
  config.kind = c.name;
  auto model = gradwire::make_model(config, c.input);
  model->to(device);
  model->train();
  std::int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  std::vector<std::int64_t> shape{batch};
  shape.insert(shape.end(), c.input.sample_shape.begin(), c.input.sample_shape.end());
  const torch::Tensor x = (c.input.tokens ? torch::randint(kVocab, shape, torch::kLong)
                                          : torch::randn(shape)).to(device);
  const torch::Tensor y = (c.input.tokens ? torch::randint(kVocab, shape, torch::kLong)
                                          : torch::randint(c.input.classes, {batch}, torch::kLong))
                              .to(device);
  std::vector<double> ms;
  for (int i = 0; i < steps + 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model->zero_grad(/*set_to_none=*/true);
    const torch::Tensor loss = gradwire::softmax_cross_entropy(model->forward(x), y);
    loss.backward();
    std::vector<torch::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().reshape({-1}));
    const torch::Tensor flat = torch::cat(grads);
    if (device.is_cuda()) torch::cuda::synchronize();
    (void)flat.data_ptr<float>();
    const double elapsed =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= 3) ms.push_back(elapsed);
  }
  return {{"model", c.name},
          {"parameters", parameters},
          {"flops_per_sample", model->forward_flops_per_sample()},
          {"step_ms", median(ms)}};
}

}  // namespace

int main(int argc, char** argv) {
  gradwire::reuse_large_buffers();
  int threads = 1;
  int steps = 10;
  std::int64_t batch = 32;
  std::string device_name = "cpu";
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--models")) only = "," + std::string(argv[i + 1]) + ",";
    else if (!std::strcmp(argv[i], "--batch")) batch = std::stoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--device")) device_name = argv[i + 1];
    else {
      std::cerr << "usage: step_bench [--threads N] [--steps N] [--models a,b] [--batch N] "
                   "[--device cpu|cuda]\n";
      return 2;
    }
  }
  if (device_name != "cpu" && device_name != "cuda") {
    std::cerr << "step_bench: --device is cpu or cuda, not " << device_name << "\n";
    return 2;
  }
  if (device_name == "cuda" && !torch::cuda::is_available()) {
    std::cerr << "step_bench: --device cuda, but this LibTorch has no CUDA or no GPU is visible\n";
    return 2;
  }
  const torch::Device device(device_name == "cuda" ? torch::kCUDA : torch::kCPU);
  torch::set_num_threads(threads);
  for (const Case& c : all_cases()) {
    if (!only.empty() && only.find("," + c.name + ",") == std::string::npos) continue;
    std::cout << time_step(c, steps, batch, device).dump() << std::endl;
  }
  return 0;
}
