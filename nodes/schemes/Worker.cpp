#include "nodes/schemes/Worker.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <ns3/simulator.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include "nodes/schemes/ComputeBatch.h"
#include "nodes/schemes/DeviceStreams.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/training/FlatGradient.h"
#include "nodes/training/Loss.h"
#include "nodes/training/Model.h"
#include "nodes/training/ShardLoader.h"
#include "nodes/training/StepRandomness.h"
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
  generator_ = at::detail::createCPUGenerator(options_.dropout_seed);
  MakeOptimizer();
  bucketed_ = scheme_->gradient_buckets() > 1;
  if (bucketed_) {
    if (static_cast<int>(options_.buckets.size()) != scheme_->gradient_buckets()) {
      throw std::logic_error("Worker: the scheme takes " +
                             std::to_string(scheme_->gradient_buckets()) +
                             " buckets, the worker was given " +
                             std::to_string(options_.buckets.size()));
    }
    if (options_.ready_fractions.empty()) {
      if (options_.batch) {
        throw std::logic_error("Worker: measured bucket release cannot wait in a compute batch");
      }
      InstallReadyHooks();
    } else {
      bucket_fractions_ = BucketReleaseFractions(0, 0);  // the same every step
    }
  }
}

double Worker::MeasuredNow() const {
  if (options_.clock == MeasuredClock::kThreadCpu) return thread_cpu_seconds();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Worker::InstallReadyHooks() {
  // The instant autograd computes each parameter's gradient: the real order and spacing of
  // gradient completion in this machine's backward pass. On the CPU, autograd runs backward
  // on the thread that called it, so the thread's CPU clock orders the hooks too.
  const auto params = model_->parameters();
  ready_at_.assign(params.size(), 0.0);
  for (std::size_t i = 0; i < params.size(); ++i) {
    params[i].register_hook([this, i](const at::Tensor&) {
      // On a GPU the hook runs when the kernels are queued; the gradient is ready once they
      // have run.
      if (device_.is_cuda()) torch::cuda::synchronize();
      ready_at_[i] = MeasuredNow();
    });
  }
}

std::vector<double> Worker::BucketReleaseFractions(double pass_start, double backward_end) const {
  std::vector<double> per_parameter = options_.ready_fractions;
  if (per_parameter.empty()) {
    const double span = backward_end - pass_start;
    for (double t : ready_at_) {
      // A parameter without a gradient this step (unused) is ready when backward ends.
      per_parameter.push_back(t >= pass_start && span > 0 ? std::min(1.0, (t - pass_start) / span)
                                                          : 1.0);
    }
  }
  std::vector<double> out;
  double previous = 0;
  for (const GradientBucket& b : options_.buckets) {
    double f = 0;
    for (int p = b.first_parameter; p <= b.last_parameter; ++p) {
      f = std::max(f, per_parameter.at(static_cast<std::size_t>(p)));
    }
    // Buckets are released in order (DDP launches them in order too).
    previous = std::max(previous, f);
    out.push_back(previous);
  }
  out.back() = 1.0;  // the last bucket closes the backward pass
  return out;
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
  optimizer_measured_s_ = 0;
  codec_at_start_ = options_.device ? options_.device->codec_seconds() : 0;
  if (!scheme_->computes(*this)) {
    // Not taking part in this round: no pass, no gradient; the scheme ends the step.
    current_.participated = false;
    scheme_->on_sit_out(*this);
    return;
  }

  if (options_.replay) {
    ReplayStep();
    return;
  }
  if (options_.batch) {
    // The pass runs with the other workers' when its result is first needed (ComputeBatch.h);
    // the compute time does not depend on its wall time here.
    computing_ = true;
    options_.batch->submit([this] { Compute(); }, model_->draws_from_global_generator());
  } else {
    WallClockAccount::Charge charge(account_);
    Compute();
  }
  current_.compute_s = compute_time_(options_.clock == MeasuredClock::kThreadCpu
                                         ? current_.compute_cpu_s
                                         : current_.compute_wall_s,
                                     step_);
  if (!bucketed_) {
    ScheduleRelease();
    return;
  }
  release_s_ = options_.ready_fractions.empty()
                   ? BucketReleaseFractions(pass_started_, backward_end_)
                   : bucket_fractions_;
  for (double& t : release_s_) t *= current_.compute_s;
  current_.release_s = release_s_;
  ScheduleRelease();
}

void Worker::ScheduleRelease() {
  if (!bucketed_) {
    ns3::Simulator::Schedule(ns3::Seconds(ComputeDelay(current_.compute_s)), &Worker::ComputeDone,
                             this, generation_);
    return;
  }
  ns3::Simulator::Schedule(ns3::Seconds(ComputeDelay(release_s_.front())), &Worker::BucketReady,
                           this, generation_, 0);
}

void Worker::ReplayStep() {
  const auto& steps = *options_.replay;
  if (step_ >= static_cast<std::int64_t>(steps.size()) ||
      !steps[static_cast<std::size_t>(step_)].participated) {
    throw std::runtime_error("replay: worker " + std::to_string(options_.rank) + " computes step " +
                             std::to_string(step_) + ", which the trace does not hold");
  }
  const StepRecord& recorded = steps[static_cast<std::size_t>(step_)];
  current_.loss = recorded.loss;
  current_.compute_s = recorded.compute_s;
  // What the scheme does with the gradient's values does not reach the network in a replayable
  // run (sim/engine/ReplaySafety.h): only its length matters.
  if (replay_numel_ == 0) {
    for (const auto& p : model_->parameters()) replay_numel_ += p.numel();
  }
  step_gradient_ = at::zeros({replay_numel_}, at::kFloat);
  if (bucketed_) {
    if (recorded.release_s.size() != options_.buckets.size()) {
      throw std::runtime_error("replay: the trace's step " + std::to_string(step_) + " releases " +
                               std::to_string(recorded.release_s.size()) + " buckets, the run has " +
                               std::to_string(options_.buckets.size()));
    }
    release_s_ = recorded.release_s;
    current_.release_s = release_s_;
  }
  ScheduleRelease();
}

void Worker::Compute() {
  const WorkStopwatch stopwatch;
  pass_started_ = MeasuredNow();
  {
    const StepRandomness::Scope randomness(generator_);
    model_->train();
    auto [inputs, labels] = loader_->next();
    inputs = inputs.to(device_);
    labels = labels.to(device_);
    const std::vector<at::Tensor> parameters = model_->parameters();
    gradient_.bind(parameters);
    at::Tensor loss = softmax_cross_entropy(model_->forward(inputs), labels);
    loss.backward();
    // Kernel time, not launch time: on a GPU, backward returns once its kernels are queued.
    if (device_.is_cuda()) torch::cuda::synchronize();
    backward_end_ = MeasuredNow();
    current_.loss = loss.item<double>();
    // One flat vector: the unit codecs and collectives work on. It stays on the GPU where
    // the scheme hands it to codecs that encode there.
    step_gradient_ = gradient_.take(parameters, device_.is_cuda() && scheme_->takes_device_gradients());
  }
  const WorkTime took = stopwatch.elapsed();
  current_.compute_wall_s = took.wall_s;
  current_.compute_cpu_s = took.cpu_s;
  computing_ = false;
}

void Worker::AwaitCompute() const {
  if (computing_) options_.batch->run();
}

double Worker::ComputeDelay(double seconds) {
  if (!options_.device) return seconds;
  return options_.device->run_compute(seconds) - ns3::Simulator::Now().GetSeconds();
}

void Worker::BucketReady(std::uint64_t generation, int bucket) {
  if (generation != generation_ || !alive_) return;  // the worker left while computing
  AwaitCompute();
  const auto b = static_cast<std::size_t>(bucket);
  const GradientBucket& g = options_.buckets[b];
  const bool last = b + 1 == options_.buckets.size();
  at::Tensor slice = step_gradient_.slice(0, g.offset, g.offset + g.numel);
  if (last) step_gradient_ = at::Tensor();
  // The scheme encodes the bucket now (on the compute stream, when codec work is timed); the
  // rest of backward runs after it. Only the last bucket can end the step inside on_bucket.
  scheme_->on_bucket(*this, bucket, slice);
  if (!last) {
    ns3::Simulator::Schedule(ns3::Seconds(ComputeDelay(release_s_[b + 1] - release_s_[b])),
                             &Worker::BucketReady, this, generation_, bucket + 1);
  }
}

void Worker::ComputeDone(std::uint64_t generation) {
  if (generation != generation_ || !alive_) return;  // the worker left while computing
  AwaitCompute();
  const at::Tensor gradient = std::move(step_gradient_);
  step_gradient_ = at::Tensor();
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
  if (options_.replay) return;  // the recorded run's parameters are not replayed
  AwaitCompute();
  WallClockAccount::Charge charge(account_);
  const std::vector<at::Tensor> parameters = model_->parameters();
  FlatGradient::point_at(parameters, update.to(device_));
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(learning_rate());
  }
  const WorkStopwatch stopwatch;
  optimizer_->step();
  optimizer_measured_s_ += stopwatch.elapsed().on(options_.clock);
  FlatGradient::release(parameters);
}

at::Tensor Worker::Parameters() const {
  AwaitCompute();
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> flat;
  for (const auto& p : model_->parameters()) flat.push_back(p.detach().reshape({-1}));
  return at::cat(flat).to(at::kCPU).contiguous();
}

void Worker::SetParameters(const at::Tensor& flat) {
  AwaitCompute();
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
  // The optimizer step runs once the device has done its codec work, then takes its own time.
  double delay = 0;
  if (options_.device) delay = options_.device->idle_at() - ns3::Simulator::Now().GetSeconds();
  if (options_.replay) {
    current_.optimizer_s = options_.replay->at(static_cast<std::size_t>(step_)).optimizer_s;
    delay += current_.optimizer_s;
  } else if (options_.optimizer_time) {
    current_.optimizer_s = options_.optimizer_time(optimizer_measured_s_);
    delay += current_.optimizer_s;
  }
  if (delay > 0) {
    ns3::Simulator::Schedule(ns3::Seconds(delay), &Worker::CompleteStep, this, generation_);
    return;
  }
  CompleteStep(generation_);
}

void Worker::FinishIdleStep() {
  if (!alive_) return;
  ns3::Simulator::ScheduleNow(&Worker::CompleteStep, this, generation_);
}

void Worker::CompleteStep(std::uint64_t generation) {
  if (generation != generation_ || !alive_) return;  // the worker left meanwhile
  AwaitCompute();
  const double now = ns3::Simulator::Now().GetSeconds();
  if (options_.device) current_.codec_s = options_.device->codec_seconds() - codec_at_start_;
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
