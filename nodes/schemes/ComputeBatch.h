// Workers' forward/backward passes that overlap in simulated time, run together on a pool of
// threads. A worker's StartStep submits its pass and goes on scheduling its simulated events
// exactly where it would after computing (with fixed or profile compute the step's compute
// time does not depend on the pass). The pass's results are needed only from the moment
// something reads them: the worker's ComputeDone (or first bucket), a scheme reading its model
// or loss, an evaluation (Worker::AwaitCompute, TrainingSetup::await_compute). The first such
// read runs every pass submitted so far, at once, and waits for them. In a synchronous step
// every worker starts its pass before the first one's compute time has passed, so the batch
// holds them all even when they start at slightly different instants. The batch itself has no
// simulated side effects: ns-3 still runs one event at a time, and the run's events happen in
// the same order, with the same numbers, as when every worker computes inside its StartStep.
//
// Passes are independent: each worker owns its model, optimizer, shard loader and dropout
// generator (nodes/training/StepRandomness.h). A pass whose model draws from LibTorch's global
// generator (a TorchScript module) runs on the calling thread, in submission order with the
// other such passes; nothing else draws from the global generator while a run runs (codecs
// have generators of their own), so it sees the same sequence of draws as without the pool.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace gradwire {

class WallClockAccount;

class ComputeBatch {
 public:
  /// Runs up to `parallel` jobs at once (the event loop's thread and parallel - 1 pool
  /// threads; parallel >= 1). Each job uses LibTorch's intra-op thread count
  /// (torch::set_num_threads, i.e. compute.threads). `account` (may be null) is charged with
  /// each batch's wall time.
  ComputeBatch(int parallel, WallClockAccount* account);
  ~ComputeBatch();
  ComputeBatch(const ComputeBatch&) = delete;
  ComputeBatch& operator=(const ComputeBatch&) = delete;

  /// Adds a job to the batch. `in_order`: it must run on the calling thread, in submission
  /// order with the other such jobs.
  void submit(std::function<void()> job, bool in_order);
  /// Runs every submitted job not yet run and returns when all are done. A job's exception is
  /// rethrown here (the first in submission order) once every job has finished.
  void run();
  int parallel() const;
  /// Jobs submitted and not yet run.
  std::size_t pending() const;
  /// Jobs run so far, and the batches (calls of run() that found jobs) they ran in.
  std::size_t jobs_run() const { return jobs_run_; }
  std::size_t batches_run() const { return batches_run_; }

 private:
  struct Pool;
  std::unique_ptr<Pool> pool_;
  WallClockAccount* account_;
  std::size_t jobs_run_ = 0;
  std::size_t batches_run_ = 0;
};

}  // namespace gradwire
