// How workers cooperate, as seen by a Worker: after computing a gradient, the worker hands it
// to its scheme, which decides what happens (all-reduce and apply the mean; push to a server
// and wait for fresh parameters; a local step then push-sum gossip; ...) and calls
// Worker::FinishStep when the worker may start its next step. The regime is thus a scenario
// switch, not a rewrite of the worker (cf. TF-Replicator).
#pragma once

#include <cstdint>
#include <string>

#include <ATen/core/Tensor.h>

namespace gradwire {

class Worker;
class WallClockAccount;
class FaultTolerant;

class TrainingScheme {
 public:
  virtual ~TrainingScheme() = default;

  /// Worker `worker` has the gradient of its step `worker.steps_done()` (flat 1-D float32 on
  /// the CPU, or on the worker's accelerator where takes_device_gradients(); read during the
  /// call), at the current simulated instant. The scheme must eventually call
  /// worker.FinishStep() exactly once for this step.
  virtual void on_gradient(Worker& worker, const at::Tensor& gradient) = 0;

  /// True when the scheme accepts gradients on an accelerator: it hands them to codecs through
  /// codec_input (codecs/GradientChecks.h), so a codec that encodes on the device reads them
  /// there and only payloads cross to the host. False: the worker copies them to the CPU.
  virtual bool takes_device_gradients() const { return false; }

  /// Gradient buckets the scheme takes one by one while backward runs (1: the whole gradient,
  /// through on_gradient, when backward is over).
  virtual int gradient_buckets() const { return 1; }

  /// Bucket `bucket` of worker `worker`'s gradient of its current step (a contiguous slice of
  /// the flat gradient, read during the call), at the instant backward completed it. Only
  /// called when gradient_buckets() > 1; the scheme must call worker.FinishStep() once all
  /// buckets of the step are through.
  virtual void on_bucket(Worker& worker, int bucket, const at::Tensor& slice);

  /// Whether `worker` computes in its step `worker.steps_done()`. With partial participation
  /// (nodes/schemes/Participation.h) a worker that is not sampled computes nothing: the Worker
  /// then calls on_sit_out instead of computing, and the scheme must still call
  /// worker.FinishStep() exactly once for the step.
  virtual bool computes(Worker& /*worker*/) { return true; }
  virtual void on_sit_out(Worker& worker);

  /// Called once per worker before its first step (e.g. to register it).
  virtual void on_start(Worker& worker) {}

  /// The parameters an evaluation should use: the replicas' common model (sync), the server's
  /// model (async PS), the average of the workers' de-biased models (gossip, leader).
  /// Returns an undefined tensor when worker 0's own model is the model.
  virtual at::Tensor evaluation_parameters() const;

  /// Mean squared distance of the workers' models to their average (0 for replicas that
  /// agree by construction). NaN when not applicable.
  virtual double consensus_distance() const;

  /// Per-update staleness statistics (async schemes): mean over updates so far; NaN otherwise.
  virtual double mean_staleness() const;

  /// Fault handling (workers leaving and rejoining, nodes/schemes/Faults.h), or null when the scheme
  /// has none.
  virtual FaultTolerant* faults() { return nullptr; }

  void set_wall_account(WallClockAccount* account) { account_ = account; }

 protected:
  WallClockAccount* account_ = nullptr;
};

}  // namespace gradwire
