// A worker as an ns-3 Application on its host: real LibTorch forward/backward on its own shard,
// a simulated compute duration, then its gradient goes to the training scheme, which decides
// what crosses the network and when the worker may continue:
//
//   StartStep (event) -> forward/backward now, in wall time (or, with a ComputeBatch, on a
//                        thread pool with the other workers' passes, when first needed); a
//                        worker the scheme leaves out of this round (partial participation)
//                        computes nothing and waits for the round's result (on_sit_out)
//     -> ComputeDone scheduled at now + compute time (measured x scale, fixed, or profile)
//     -> scheme.on_gradient(gradient)     (e.g. a collective; codecs encode real bytes, ns-3
//                                          carries them)
//        or, with gradient buckets, scheme.on_bucket(b, slice) for each bucket at the instant
//        backward completes it, while the rest of backward goes on in simulated time
//     -> the scheme applies an update (ApplyGradient / SetParameters) when bytes arrive
//     -> FinishStep -> next StartStep at that simulated instant
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Generator.h>
#include <ns3/application.h>
#include <torch/types.h>

#include "codecs/TensorSend.h"
#include "common/WorkStopwatch.h"
#include "nodes/training/FlatGradient.h"
#include "nodes/training/GradientBuckets.h"
#include "nodes/training/LearningRateSchedule.h"

namespace torch::optim {
class SGD;
}

namespace gradwire {

class ComputeBatch;
class DeviceStreams;
class Endpoint;
class Model;
class ShardLoader;
class TrainingScheme;
class WallClockAccount;

/// What one worker did in one step, in simulated seconds.
struct StepRecord {
  int rank = 0;
  std::int64_t step = 0;
  double start_s = 0;    ///< compute began
  double compute_s = 0;  ///< simulated compute duration
  double comm_s = 0;     ///< exposed: step time beyond compute_s (communication, codec and
                         ///< optimizer work that backward did not hide)
  double codec_s = 0;    ///< simulated codec work on this worker's device in the step
  double optimizer_s = 0;  ///< simulated optimizer step on this worker's device
  double end_s = 0;
  std::uint64_t bytes_sent = 0;  ///< application bytes this worker's host sent in the step
  std::uint64_t payload_bytes = 0;  ///< size of the encoded gradient (before forwarding)
  double density = 1.0;             ///< fraction of gradient elements the codec sent
  /// Per parameter tensor of the model (in its order), what the codecs sent of it: empty
  /// unless they select per tensor (adacomp, dgc, sdagc).
  std::vector<TensorSend> tensors;
  double loss = 0;
  double compute_wall_s = 0;  ///< wall seconds the real forward/backward took
  double compute_cpu_s = 0;   ///< CPU seconds of the thread that ran it, in that time
  /// False when the worker sat the step out (partial participation: not sampled for the
  /// round); it then computed nothing and only waited for the round's result.
  bool participated = true;
  /// With gradient buckets: simulated seconds after the step began at which backward released
  /// each bucket (empty without buckets).
  std::vector<double> release_s;
};

struct WorkerOptions {
  int rank = 0;
  std::int64_t steps = 1;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;
  /// Gradient buckets in the order backward completes them, used when the scheme takes more
  /// than one (TrainingScheme::gradient_buckets).
  std::vector<GradientBucket> buckets;
  /// Per parameter in forward order: the fraction of the step's compute time at which its
  /// gradient is complete (nodes/training/BackwardTimeline.h). Empty: measured each step with
  /// autograd hooks.
  std::vector<double> ready_fractions;
  /// The host's device when codec work costs simulated time (nodes/schemes/DeviceStreams.h);
  /// null: codec work is free. Must outlive the worker.
  DeviceStreams* device = nullptr;
  /// Simulated seconds of one optimizer step, given the wall seconds it took here; empty: the
  /// step's compute time covers it.
  std::function<double(double measured_seconds)> optimizer_time;
  /// The clock measured compute reads: the pass's, the optimizer step's and the bucket
  /// release instants' (common/WorkStopwatch.h). The thread's CPU time charges what the work
  /// costs on a core of its own; wall time is for passes on a GPU or on several threads.
  MeasuredClock clock = MeasuredClock::kWall;
  /// Seed of the worker's own generator, from which its steps draw dropout masks
  /// (nodes/training/StepRandomness.h).
  std::uint64_t dropout_seed = 0;
  /// When set, forward/backward runs with the other workers' passes when its result is first
  /// needed (nodes/schemes/ComputeBatch.h). Only with compute time that does not depend on
  /// the pass's wall time, and with fixed bucket release fractions. Must outlive the worker.
  ComputeBatch* batch = nullptr;
  /// Replays a recorded training instead of computing (sim/engine/StepTrace.h): per step, its
  /// record's loss, compute time, bucket release instants and optimizer time; the gradient
  /// handed to the scheme is zeros of the model's size and no optimizer step runs. Null:
  /// train. Must outlive the worker.
  const std::vector<StepRecord>* replay = nullptr;
};


/// Simulated seconds for `step`, given the seconds the real computation took on the worker's
/// measured clock (WorkerOptions::clock).
using ComputeTimeModel = std::function<double(double measured_seconds, std::int64_t step)>;

class Worker : public ns3::Application {
 public:
  static ns3::TypeId GetTypeId();
  Worker();
  ~Worker() override;

  /// Everything must outlive the simulation run. `on_step` is called after each update;
  /// `on_finished` after the last.
  void Setup(const WorkerOptions& options, std::shared_ptr<Model> model,
             std::unique_ptr<ShardLoader> loader, TrainingScheme* scheme, Endpoint* messenger,
             ComputeTimeModel compute_time, torch::Device device, WallClockAccount* account,
             std::function<void(const StepRecord&)> on_step, std::function<void(int)> on_finished);

  Model& model() {
    AwaitCompute();
    return *model_;
  }
  int rank() const { return options_.rank; }
  /// Steps completed; also the index of the step in progress.
  std::int64_t steps_done() const { return step_; }
  bool finished() const { return step_ >= options_.steps; }
  std::int64_t total_steps() const { return options_.steps; }
  /// Training loss of the step in progress (the latest forward pass).
  double last_loss() const {
    AwaitCompute();
    return current_.loss;
  }
  Endpoint& messenger() { return *messenger_; }

  // --- for training schemes ---
  /// Applies `update` (flat, same layout as the gradient) with the worker's optimizer
  /// (momentum, weight decay, the learning rate of the current step).
  void ApplyGradient(const at::Tensor& update);
  /// The model's parameters as one flat float32 CPU tensor (a copy).
  at::Tensor Parameters() const;
  /// Overwrites the model's parameters from a flat tensor (optimizer state is kept).
  void SetParameters(const at::Tensor& flat);
  /// Learning rate of the step in progress.
  double learning_rate() const;
  /// Ends the step in progress: records it and starts the next one (or finishes).
  void FinishStep();
  /// Ends a step the worker sat out with nothing to apply or wait for (partial participation
  /// with local steps): no optimizer time; the next step starts in an event of its own.
  void FinishIdleStep();

  // --- faults (nodes/schemes/Faults.h) ---
  /// The host goes down now: the step in progress is abandoned and no further step starts.
  void Leave();
  /// The host is back and has the group's parameters: it resumes at `step` with fresh
  /// optimizer state (what it had was lost when it left).
  void Resume(std::int64_t step, const at::Tensor& parameters);
  bool alive() const { return alive_; }
 private:
  void StartApplication() override;
  void StopApplication() override;
  void DoDispose() override;

  void StartStep();
  /// The step's real forward/backward: fills in the loss, the wall time and step_gradient_.
  void Compute();
  /// Waits for this worker's forward/backward when it is still in the batch: whatever reads
  /// or changes its model, loss or gradient calls this first.
  void AwaitCompute() const;
  void ComputeDone(std::uint64_t generation);
  void BucketReady(std::uint64_t generation, int bucket);
  /// Release instants of the buckets as fractions of the step's compute time.
  std::vector<double> BucketReleaseFractions(double pass_start, double backward_end) const;
  void InstallReadyHooks();
  /// Now on the measured clock (WorkerOptions::clock), in seconds.
  double MeasuredNow() const;
  void MakeOptimizer();
  /// Simulated seconds from now until `seconds` of compute have run on the device.
  double ComputeDelay(double seconds);
  void CompleteStep(std::uint64_t generation);
  /// Schedules the step's gradient (or its first bucket) once compute_s (or the first release)
  /// has run on the device.
  void ScheduleRelease();
  /// Starts the step from the recorded training (WorkerOptions::replay).
  void ReplayStep();

  WorkerOptions options_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<ShardLoader> loader_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  TrainingScheme* scheme_ = nullptr;
  Endpoint* messenger_ = nullptr;
  ComputeTimeModel compute_time_;
  torch::Device device_{torch::kCPU};
  WallClockAccount* account_ = nullptr;
  std::function<void(const StepRecord&)> on_step_;
  std::function<void(int)> on_finished_;

  std::int64_t step_ = 0;
  bool alive_ = true;
  std::uint64_t generation_ = 0;  // bumped on Leave: a pending ComputeDone is then void
  StepRecord current_;
  at::Generator generator_;  // dropout masks (nodes/training/StepRandomness.h)
  bool computing_ = false;   // the step's forward/backward waits in the batch
  // Instants on the measured clock (WorkerOptions::clock), in seconds, the pass began and
  // backward ended.
  double pass_started_ = 0;
  double backward_end_ = 0;
  bool bucketed_ = false;
  at::Tensor step_gradient_;             // the step's flat gradient (released bucket by bucket)
  FlatGradient gradient_;                 // the parameters' gradients, as one flat vector
  std::vector<double> bucket_fractions_;  // per bucket: release as a fraction of compute (fixed)
  std::vector<double> release_s_;        // per bucket: simulated seconds after the step began
  std::vector<double> ready_at_;         // per parameter: the instant its gradient was done
  double optimizer_measured_s_ = 0;      // measured seconds of this step's optimizer step
  double codec_at_start_ = 0;            // the device's codec seconds when the step began
  std::uint64_t bytes_at_step_start_ = 0;
  std::int64_t replay_numel_ = 0;  // the gradient's length, when replaying
};

}  // namespace gradwire
