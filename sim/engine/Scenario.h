// A validated scenario: the typed view the engine uses, plus the resolved JSON (every default
// filled in) that is written to runs/<name>/scenario.json so a run documents itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "netmodels/NetworkSettings.h"
#include "nodes/schemes/Availability.h"
#include "nodes/schemes/TopologyConfig.h"
#include "nodes/training/DatasetSpec.h"
#include "nodes/training/LearningRateSchedule.h"
#include "nodes/training/Model.h"

namespace gradwire {

struct TrainingSpec {
  int workers = 4;
  std::int64_t steps = 0;   ///< resolved from `epochs` when that is given
  double epochs = 0;        ///< 0 when `steps` is given
  std::int64_t batch = 32;  ///< per worker
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
  LearningRateSchedule lr;
  std::int64_t eval_every = 100;
  std::int64_t eval_samples = 0;  ///< 0: the whole test set
  double target_accuracy = 0;     ///< 0: no target
  double target_perplexity = 0;   ///< language models: time to target at this perplexity
  /// Gradient buckets released while backward runs (PyTorch DDP's caps); false: "none", the
  /// whole gradient after backward.
  bool buckets = false;
  double bucket_mb = 25;       ///< MiB per bucket
  double first_bucket_mb = 1;  ///< MiB of the first bucket (the last layers' gradients)
};

struct ComputeSpec {
  std::string mode = "measured";  ///< "measured" | "fixed" | "profile"
  double scale = 1.0;             ///< measured: simulated = wall x scale
  double seconds = 0.01;          ///< fixed: seconds per step
  std::string profile;            ///< profile: a named device (see ComputeTime.h)
  /// Per rank device names when `compute.profile` is a list (empty: every worker runs on
  /// `profile`). Resolved against training.workers and the hybrid groups when loaded.
  std::vector<std::string> worker_profiles;
  /// `compute.profile` list entries as written (name; count, or hybrid group, or -1): kept
  /// until the network is read, which a group entry needs.
  struct ProfileEntry {
    std::string name;
    std::int64_t count = -1;
    std::int64_t group = -1;
  };
  std::vector<ProfileEntry> profile_entries;
  /// measured: the device this machine's measured steps stand for; each worker's step is
  /// scaled by this device's sustained FLOP/s over its own (empty: no per-device scaling).
  std::string measured_on;
  double seconds_per_sample = 0;  ///< profile: explicit cost instead of a named device
  std::int64_t flops_per_sample = 0;  ///< profile: forward FLOPs per sample (0: the model's count)
  std::string device = "auto";    ///< "auto" | "cpu" | "cuda"
  int threads = 0;                ///< LibTorch intra-op threads; 0: see intra_op_threads()
  /// Workers' forward/backward passes that overlap in simulated time run this many at a time, each
  /// with `threads` intra-op threads (nodes/schemes/ComputeBatch.h); 1: one after another.
  int parallel_workers = 1;
  std::vector<double> worker_scale;  ///< per rank compute multiplier (1 when absent)
  double straggler_probability = 0;  ///< chance per worker and step of a slowdown
  double straggler_slowdown = 1;     ///< compute multiplier of a straggling step
  /// Codec work in simulated time: "free" (none), "measured" (wall time x codec_scale) or
  /// "profile" (each codec's declared work on codec_device).
  std::string codec_time = "free";
  double codec_scale = 1.0;
  std::string codec_device;  ///< a device profile name (profile codec time)

  /// LibTorch intra-op threads of a pass: `threads` when set; else 1 with measured compute
  /// (one thread's CPU time is what a measured pass charges, docs/scenarios.md) and one per
  /// core otherwise.
  int intra_op_threads() const {
    if (threads > 0) return threads;
    if (mode == "measured") return 1;
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }

  /// Worker `rank`'s device name (empty when compute names none).
  const std::string& profile_of(int rank) const {
    const auto r = static_cast<std::size_t>(rank);
    return r < worker_profiles.size() ? worker_profiles[r] : profile;
  }
};

/// One worker leaving (and optionally rejoining) at a simulated time (`faults` in the JSON).
struct FaultSpec {
  int rank = 0;
  double leave_at_s = 0;
  double rejoin_at_s = -1;  ///< < 0: never rejoins
};

/// `participation`: which workers take part in each synchronous round, when they are
/// available, and how long a round waits (nodes/schemes/Participation.h).
struct ParticipationSpec {
  bool enabled = false;       ///< the scenario has a `participation` section
  int clients_per_round = 0;  ///< resolved: training.workers when not given
  double deadline_s = 0;      ///< 0: none (a round waits for every sampled client)
  std::string availability = "always";  ///< "always" | "on_off" | "trace"
  double mean_on_s = 0;       ///< on_off: mean available period
  double mean_off_s = 0;      ///< on_off: mean unavailable period
  std::string trace;          ///< trace: the file's path as written
  /// trace: per rank, the available intervals read from the file.
  std::vector<std::vector<AvailableInterval>> trace_intervals;
};

struct Scenario {
  std::string name;
  std::uint64_t seed = 1;
  ModelConfig model;
  DatasetSpec dataset;
  TrainingSpec training;
  ComputeSpec compute;
  nlohmann::json codec;    ///< resolved codec object (CodecRegistry)
  TopologyConfig topology;
  NetworkSettings network;  ///< resolved network (netmodels/NetworkSettings.h)
  std::vector<FaultSpec> faults;  ///< empty: no worker ever leaves
  ParticipationSpec participation;
  std::string output_dir = "runs";

  nlohmann::json resolved;  ///< the whole scenario with defaults filled in
};

}  // namespace gradwire
