#include "nodes/schemes/Worker.h"

#include <chrono>

#include <ns3/simulator.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include "nodes/schemes/TrainingScheme.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/training/Loss.h"
#include "nodes/training/Model.h"
#include "nodes/training/ShardLoader.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

ns3::TypeId Worker::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::Worker")
                               .SetParent<ns3::Application>()
                               .SetGroupName("gradwire")
                               .AddConstructor<Worker>();
  return tid;
}

Worker::Worker() = default;
Worker::~Worker() = default;

void Worker::Setup(const WorkerOptions& options, std::shared_ptr<Model> model,
                   std::unique_ptr<ShardLoader> loader, TrainingScheme* scheme,
                   Endpoint* messenger, ComputeTimeModel compute_time, torch::Device device,
                   WallClockAccount* account, std::function<void(const StepRecord&)> on_step,
                   std::function<void(int)> on_finished) {
  options_ = options;
  model_ = std::move(model);
  loader_ = std::move(loader);
  scheme_ = scheme;
  messenger_ = messenger;
  compute_time_ = std::move(compute_time);
  device_ = device;
  account_ = account;
  on_step_ = std::move(on_step);
  on_finished_ = std::move(on_finished);
  model_->to(device_);
  MakeOptimizer();
}

void Worker::MakeOptimizer() {
  optimizer_ = std::make_unique<torch::optim::SGD>(
      model_->parameters(), torch::optim::SGDOptions(options_.lr.at(0))
                                .momentum(options_.momentum)
                                .weight_decay(options_.weight_decay)
                                .nesterov(options_.nesterov));
}

void Worker::StartApplication() {
  scheme_->on_start(*this);
  if (options_.steps <= 0) {
    if (on_finished_) on_finished_(options_.rank);
    return;
  }
  StartStep();
}

void Worker::StopApplication() {}

void Worker::DoDispose() {
  on_step_ = nullptr;
  on_finished_ = nullptr;
  ns3::Application::DoDispose();
}

void Worker::StartStep() {
  current_ = StepRecord{};
  current_.rank = options_.rank;
  current_.step = step_;
  current_.start_s = ns3::Simulator::Now().GetSeconds();
  bytes_at_step_start_ = messenger_->bytes_sent();

  at::Tensor flat;
  const auto wall_start = std::chrono::steady_clock::now();
  {
    WallClockAccount::Charge charge(account_);
    model_->train();
    auto [inputs, labels] = loader_->next();
    inputs = inputs.to(device_);
    labels = labels.to(device_);
    optimizer_->zero_grad();
    at::Tensor loss = softmax_cross_entropy(model_->forward(inputs), labels);
    loss.backward();
    current_.loss = loss.item<double>();
    // One flat float32 CPU vector: the unit codecs and collectives work on.
    std::vector<at::Tensor> grads;
    for (const auto& p : model_->parameters()) grads.push_back(p.grad().reshape({-1}));
    flat = at::cat(grads).to(at::kCPU).contiguous();
  }
  current_.compute_wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  current_.compute_s = compute_time_(current_.compute_wall_s, step_);
  ns3::Simulator::Schedule(ns3::Seconds(current_.compute_s), &Worker::ComputeDone, this,
                           generation_, flat);
}

void Worker::ComputeDone(std::uint64_t generation, at::Tensor gradient) {
  if (generation != generation_ || !alive_) return;  // the worker left while computing
  scheme_->on_gradient(*this, gradient);
}

void Worker::Leave() {
  alive_ = false;
  ++generation_;
}

void Worker::Resume(std::int64_t step, const at::Tensor& parameters) {
  SetParameters(parameters);
  MakeOptimizer();
  alive_ = true;
  step_ = step;
  if (step_ < options_.steps) {
    StartStep();
  } else if (on_finished_) {
    on_finished_(options_.rank);
  }
}

double Worker::learning_rate() const { return options_.lr.at(step_); }

void Worker::ApplyGradient(const at::Tensor& update) {
  WallClockAccount::Charge charge(account_);
  at::Tensor on_device = update.to(device_);
  std::int64_t offset = 0;
  for (auto& p : model_->parameters()) {
    const std::int64_t n = p.numel();
    p.mutable_grad().copy_(on_device.slice(0, offset, offset + n).view_as(p));
    offset += n;
  }
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(learning_rate());
  }
  optimizer_->step();
}

at::Tensor Worker::Parameters() const {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> flat;
  for (const auto& p : model_->parameters()) flat.push_back(p.detach().reshape({-1}));
  return at::cat(flat).to(at::kCPU).contiguous();
}

void Worker::SetParameters(const at::Tensor& flat) {
  WallClockAccount::Charge charge(account_);
  torch::NoGradGuard no_grad;
  at::Tensor on_device = flat.to(device_);
  std::int64_t offset = 0;
  for (auto& p : model_->parameters()) {
    const std::int64_t n = p.numel();
    p.copy_(on_device.slice(0, offset, offset + n).view_as(p));
    offset += n;
  }
}

void Worker::FinishStep() {
  if (!alive_) return;  // schemes drop a departed worker's callbacks; be safe
  const double now = ns3::Simulator::Now().GetSeconds();
  current_.end_s = now;
  current_.comm_s = now - current_.start_s - current_.compute_s;
  current_.bytes_sent = messenger_->bytes_sent() - bytes_at_step_start_;
  ++step_;
  if (on_step_) on_step_(current_);
  if (step_ < options_.steps) {
    StartStep();
  } else if (on_finished_) {
    on_finished_(options_.rank);
  }
}

}  // namespace gradwire
