// A data-parallel worker as an ns-3 Application on its host: real LibTorch forward/backward on
// its own shard, a simulated compute duration, then its gradient goes to the collective; the
// averaged gradient is applied when the collective delivers it, and the next step starts at
// that simulated instant.
//
//   StartStep (event) -> forward/backward now, in wall time
//     -> ComputeDone scheduled at now + compute time (measured x scale, fixed, or profile)
//     -> collective.contribute(gradient)         (codec encodes real bytes, ns-3 carries them)
//     -> Apply(mean) when the aggregate arrives  -> next StartStep
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <ns3/application.h>
#include <torch/types.h>

#include "nodes/LearningRateSchedule.h"

namespace torch::optim {
class SGD;
}

namespace gradwire {

class Collective;
class Messenger;
class Model;
class ShardLoader;
class WallClockAccount;

struct WorkerOptions {
  int rank = 0;
  std::int64_t steps = 1;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;
};

/// What one worker did in one step, in simulated seconds.
struct StepRecord {
  int rank = 0;
  std::int64_t step = 0;
  double start_s = 0;    ///< compute began
  double compute_s = 0;  ///< simulated compute duration
  double comm_s = 0;     ///< from gradient ready to aggregate applied
  double end_s = 0;
  std::uint64_t bytes_sent = 0;  ///< application bytes this worker's host sent in the step
  double loss = 0;
  double compute_wall_s = 0;  ///< wall seconds the real forward/backward took
};

/// Simulated seconds for a step, given the wall seconds the real computation took.
using ComputeTimeModel = std::function<double(double wall_seconds)>;

class Worker : public ns3::Application {
 public:
  static ns3::TypeId GetTypeId();
  Worker();
  ~Worker() override;

  /// Everything must outlive the simulation run. `on_step` is called after each update;
  /// `on_finished` after the last.
  void Setup(const WorkerOptions& options, std::shared_ptr<Model> model,
             std::unique_ptr<ShardLoader> loader, Collective* collective, Messenger* messenger,
             ComputeTimeModel compute_time, torch::Device device, WallClockAccount* account,
             std::function<void(const StepRecord&)> on_step, std::function<void(int)> on_finished);

  Model& model() { return *model_; }
  std::int64_t steps_done() const { return step_; }

 private:
  void StartApplication() override;
  void StopApplication() override;
  void DoDispose() override;

  void StartStep();
  void ComputeDone(at::Tensor gradient);
  void Apply(const at::Tensor& mean);

  WorkerOptions options_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<ShardLoader> loader_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  Collective* collective_ = nullptr;
  Messenger* messenger_ = nullptr;
  ComputeTimeModel compute_time_;
  torch::Device device_{torch::kCPU};
  WallClockAccount* account_ = nullptr;
  std::function<void(const StepRecord&)> on_step_;
  std::function<void(int)> on_finished_;

  std::int64_t step_ = 0;
  StepRecord current_;
  std::uint64_t bytes_at_step_start_ = 0;
};

}  // namespace gradwire
