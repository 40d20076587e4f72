// Workers' forward/backward passes that fall at one simulated instant, run together on a pool
// of threads. A worker's StartStep submits its pass and goes on scheduling its simulated events
// exactly where it would after computing (the step's compute time does not depend on the pass
// with fixed or profile compute). The first submission of an instant schedules the batch's run
// as an ns-3 event at that instant: it runs after every event already queued for the instant,
// so every worker starting then has joined, and before any event the workers scheduled after
// submitting, so every result is in place when it is read. Anything that reads a worker's
// model or loss earlier runs the batch first (Worker::AwaitCompute). The batch itself has no
// simulated side effects: ns-3 still runs one event at a time, and the run's events happen in
// the same order as when every worker computes inside its own StartStep.
//
// Jobs are independent: each worker owns its model, optimizer, shard loader and dropout
// generator (nodes/training/StepRandomness.h). A job whose model draws from LibTorch's global
// generator (a TorchScript module) runs on the event loop's thread, in submission order, so
// the global generator sees the same sequence of draws as without the pool.
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

  /// Adds a job to the current instant's batch. `in_order`: it must run on the event loop's
  /// thread, in submission order with the other such jobs. Call only from inside an ns-3 event.
  void submit(std::function<void()> job, bool in_order);
  /// Runs every submitted job not yet run and returns when all are done. A job's exception is
  /// rethrown here (the first in submission order) once every job has finished.
  void run();
  int parallel() const;
  /// Jobs submitted and not yet run.
  std::size_t pending() const;

 private:
  void run_scheduled();

  struct Pool;
  std::unique_ptr<Pool> pool_;
  WallClockAccount* account_;
  bool event_scheduled_ = false;
};

}  // namespace gradwire
