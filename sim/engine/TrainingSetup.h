// Everything a run needs besides the network: the dataset and its shards, the device, the
// models, every rank's codec, the training scheme and the evaluation model. Built the same way
// by an in-process run (Engine: all ranks, endpoints are Messengers) and by a worker process
// (`gradwire worker`: one rank's model, its endpoint a RemoteEndpoint, the other ranks'
// endpoints inert), so both train bit for bit alike. LibTorch stays behind the Impl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ns3/ptr.h>

#include "codecs/CodecCallLog.h"
#include "common/WorkStopwatch.h"
#include "sim/engine/Scenario.h"

namespace gradwire {

class Endpoint;
struct LayerSlice;
class Participation;
class PhaseLedger;
class TrainingScheme;
class WallClockAccount;
class Worker;
struct EvalResult;
struct StalenessEvent;
struct StepRecord;

class TrainingSetup {
 public:
  /// Loads and partitions the dataset, picks the device, and builds the models of
  /// `model_ranks` (each from the scenario seed, so replicas agree wherever they are built),
  /// the evaluation model and every rank's codec. ConfigError for problems that depend on this
  /// machine (missing dataset, CUDA unavailable). `scenario` must outlive the setup.
  /// `replaying`: the setup is for a replay of a step trace (replay() follows), which computes
  /// nothing: the data is not read where its declared size and shape suffice (an iid
  /// partition of a dataset other than text), and evaluate() must not be called.
  TrainingSetup(const Scenario& scenario, const std::vector<int>& model_ranks,
                bool replaying = false);
  ~TrainingSetup();
  TrainingSetup(const TrainingSetup&) = delete;
  TrainingSetup& operator=(const TrainingSetup&) = delete;

  int workers() const;
  /// True when the topology has a server host (index workers()).
  bool with_server() const;
  /// Hosts of the scenario's network: the workers, then the server if there is one.
  std::size_t hosts() const;
  std::int64_t parameters() const;
  /// The model's parameter tensors, in the flat gradient's order.
  const std::vector<LayerSlice>& layers() const;
  std::string device_name() const;
  /// True when the passes run on a GPU (compute.device).
  bool on_gpu() const;
  /// The clock measured compute and codec time read (common/WorkStopwatch.h): the calling
  /// thread's CPU time for passes on the CPU with one LibTorch intra-op thread, wall time on
  /// a GPU (kernels are not CPU time) or with several threads (their parallel speed-up is
  /// part of what is measured). Decided from LibTorch's thread count when the setup is made.
  MeasuredClock measured_clock() const;

  /// A step trace's codec logs (codecs/CodecCallLog.h): [bucket][rank], rank workers() being
  /// the server's instance.
  using CodecLogs = std::vector<std::vector<CodecCallLog>>;
  /// Empty logs laid out for this run.
  CodecLogs empty_codec_logs() const;
  /// Logs every codec's calls into `logs` (laid out here when it is not), which must outlive
  /// the setup. Before build_scheme.
  void record_codecs(CodecLogs& logs);
  /// The run replays a recorded training: every codec replays its log from `logs`, every
  /// worker its steps from `steps` ([rank][step]), and nothing is computed. Both must outlive
  /// the setup and be laid out for this run, else std::invalid_argument. Before build_scheme.
  void replay(const CodecLogs& logs, const std::vector<std::vector<StepRecord>>& steps);
  /// Builds the training scheme over `workers` (one endpoint per rank) and `server` (null
  /// without a server host). Endpoints must outlive the setup. `on_update` receives the
  /// asynchronous parameter server's applied updates.
  void build_scheme(std::vector<Endpoint*> workers, Endpoint* server,
                    std::function<void(const StalenessEvent&)> on_update);
  TrainingScheme& scheme();
  /// Who takes part in each round (the scenario's `participation`); null without it.
  const Participation* participation() const;
  /// Each step's push and pull times, for collectives that time their phases (the
  /// synchronous parameter server).
  const PhaseLedger& phases() const;
  /// Wall time spent in LibTorch and codec work inside the event loop.
  WallClockAccount& torch_account();

  /// A Worker application for `rank` (whose model was built) sending through `endpoint`.
  /// `on_step` gets each completed step's record with the codec's figures filled in.
  ns3::Ptr<Worker> make_worker(int rank, Endpoint* endpoint,
                               std::function<void(const StepRecord&)> on_step,
                               std::function<void(int)> on_finished);

  /// Finishes the forward/backward passes waiting in the compute batch (workers whose step has
  /// started, with compute.parallel_workers > 1); evaluate() does so too.
  void await_compute();
  /// With compute.parallel_workers > 1: forward/backward passes run so far, and the batches
  /// they ran in (their ratio is how many ran together on average); 0 and 0 otherwise.
  std::size_t parallel_passes() const;
  std::size_t parallel_batches() const;
  /// Evaluates the parameters the scheme names, or rank 0's model when the scheme names none
  /// (std::logic_error if rank 0's model was not built here).
  EvalResult evaluate();
  /// The parameters evaluate() evaluates, flat (forward order).
  std::vector<float> model_parameters();
  double consensus_distance() const;
  double mean_staleness() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gradwire
