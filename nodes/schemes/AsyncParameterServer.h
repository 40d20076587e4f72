// Asynchronous parameter server (Dean et al. 2012 "Downpour"; Li et al. OSDI 2014): each worker
// pushes the encoded gradient of the parameters it last pulled; the server applies it the moment
// its bytes arrive, with SGD (momentum kept at the server, learning rate / n so that n
// asynchronous updates move the model as far as one synchronous update of their mean), and
// answers with its current parameters, from which the worker computes its next gradient.
// Network timing thus decides staleness = server version at apply time - version the gradient
// was computed from; it is reported per update.
//
// Bounded staleness (stale-synchronous parallel, Ho et al. 2013): with max_staleness = s >= 0 a
// worker that has completed more than s steps beyond the slowest worker gets its parameters only
// once the slowest catches up.
//
// With gradient buckets (nodes/training/GradientBuckets.h), a worker pushes each bucket as
// backward completes it, encoded with that bucket's codec; the server applies each bucket to
// its slice of the parameters as it arrives, and once all of a push's buckets are in, that is
// one update (one version) and the worker gets the fresh parameters.
//
// Replies leave at the end of the current simulated instant, so gradients that arrive at the
// same instant are all applied before anyone pulls. With max_staleness = 0, identical workers
// and no momentum this reduces exactly to synchronous SGD (tests/nodes/schemes/schemes_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "codecs/Codec.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/training/GradientBuckets.h"
#include "nodes/training/LearningRateSchedule.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint;

struct AsyncServerOptions {
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;  ///< indexed by server updates / workers (one "step" of n updates)
  int max_staleness = -1;   ///< < 0: unbounded
};

/// One applied update: who, when (simulated s), and how stale.
struct StalenessEvent {
  int rank = 0;
  std::uint64_t version = 0;  ///< server version after applying
  std::uint64_t staleness = 0;
  double sim_time_s = 0;
};

class AsyncParameterServer : public TrainingScheme {
 public:
  /// Hosts: `workers[r]` for rank r, `server` for the server. `codecs[b][r]` encodes bucket b
  /// of worker r's gradients; `server_codecs[b]` decodes it. `buckets` covers the flat
  /// gradient (one bucket: the whole gradient after backward). All must outlive the scheme.
  /// `on_update` (may be empty) is called for every applied update.
  AsyncParameterServer(std::vector<Endpoint*> workers, Endpoint* server,
                       std::vector<GradientBucket> buckets,
                       std::vector<std::vector<Codec*>> codecs, std::vector<Codec*> server_codecs,
                       AsyncServerOptions options,
                       std::function<void(const StalenessEvent&)> on_update);
  ~AsyncParameterServer() override;

  void on_start(Worker& worker) override;
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  int gradient_buckets() const override { return static_cast<int>(buckets_.size()); }
  void on_bucket(Worker& worker, int bucket, const at::Tensor& slice) override;
  at::Tensor evaluation_parameters() const override;
  double mean_staleness() const override;

  std::uint64_t version() const { return version_; }

 private:
  struct State;
  void on_push(Message&& message);
  /// All buckets of `rank`'s push are applied: one more version, and a reply due.
  void complete_update(int rank, std::uint64_t computed_on);
  void on_pull(int rank, Message&& message);
  void release_replies();

  std::vector<Endpoint*> workers_;
  Endpoint* server_;
  std::vector<GradientBucket> buckets_;
  std::vector<std::vector<Codec*>> codecs_;
  std::vector<Codec*> server_codecs_;
  AsyncServerOptions options_;
  std::function<void(const StalenessEvent&)> on_update_;
  std::unique_ptr<State> state_;
  std::uint64_t version_ = 0;
};

}  // namespace gradwire
