// What a run hands a scheme's declaration to build it from (SchemeRegistry): the hosts'
// endpoints, each bucket's codecs, the gradient buckets and the optimizer's settings. The
// parts outlive what is built from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "nodes/training/GradientBuckets.h"
#include "nodes/training/LearningRateSchedule.h"

namespace gradwire {

class Codec;
class DeviceStreams;
class Endpoint;
class Participation;
class PhaseLedger;
struct StalenessEvent;

/// One collective's share of a run: the workers' endpoints (or channels of them), the server's
/// (schemes with a server host; else nullptr) and one bucket's codecs.
struct CollectiveParts {
  std::vector<Endpoint*> workers;
  Endpoint* server = nullptr;
  std::vector<Codec*> codecs;   ///< one per worker
  Codec* server_codec = nullptr;
  /// Who takes part in each round and the round's deadline (the scenario's `participation`);
  /// null: every worker, every round.
  Participation* participation = nullptr;
  /// Where a collective that times its phases adds them (nodes/schemes/PhaseLedger.h); may be
  /// null.
  PhaseLedger* phases = nullptr;
  /// The workers' devices, one per worker, when codec work costs simulated time (so a
  /// collective can pipeline encoding with sending); empty when codec work is free.
  std::vector<DeviceStreams*> devices;
};

/// The optimizer every replica runs, for schemes that apply updates themselves.
struct OptimizerSettings {
  double momentum = 0.0;  ///< 0 when the codec keeps momentum itself
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;
};

struct SchemeParts {
  std::vector<Endpoint*> workers;
  Endpoint* server = nullptr;
  std::vector<GradientBucket> buckets;  ///< at least one
  std::function<std::vector<Codec*>(std::size_t bucket)> codecs;
  std::function<Codec*(std::size_t bucket)> server_codec;
  OptimizerSettings optimizer;
  std::vector<std::int64_t> samples;  ///< per worker: its shard's training samples
  /// Asynchronous schemes report each applied update (staleness metrics).
  std::function<void(const StalenessEvent&)> on_update;
  /// Who takes part in each round (the scenario's `participation`); null: every worker.
  Participation* participation = nullptr;
};

}  // namespace gradwire
