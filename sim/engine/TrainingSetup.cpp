#include "sim/engine/TrainingSetup.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "common/ConfigError.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "codecs/RecordingCodec.h"
#include "codecs/ReplayCodec.h"
#include "codecs/TimedCodec.h"
#include "nodes/schemes/BucketedCollective.h"
#include "nodes/schemes/ComputeBatch.h"
#include "nodes/schemes/DeviceStreams.h"
#include "nodes/schemes/DeviceTimedEndpoint.h"
#include "nodes/schemes/Participation.h"
#include "nodes/schemes/PhaseLedger.h"
#include "nodes/schemes/SynchronousScheme.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/training/BackwardTimeline.h"
#include "nodes/training/DatasetRegistry.h"
#include "nodes/training/GradientBuckets.h"
#include "nodes/training/Partition.h"
#include "nodes/training/RunningStatistics.h"
#include "nodes/training/ShardLoader.h"
#include "nodes/transport/EndpointChannels.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/Evaluation.h"

namespace gradwire {

namespace {

torch::Device pick_device(const std::string& requested) {
  const bool cuda = torch::cuda::is_available();
  if (requested == "cuda" && !cuda) {
    throw ConfigError("compute.device",
                      "\"cuda\" requested, but the linked LibTorch has no CUDA or no GPU is "
                      "present; use \"auto\" or \"cpu\"");
  }
  if (requested == "cuda" || (requested == "auto" && cuda)) return torch::Device(torch::kCUDA);
  return torch::Device(torch::kCPU);
}

/// The model's tensors as the bucket codecs' last encodes sent them (each bucket's layout is
/// its own run of parameters); empty unless every bucket's codec reported its tensors.
std::vector<TensorSend> tensor_sends(const std::vector<GradientBucket>& buckets,
                                     const std::vector<std::pair<Codec*, double>>& codecs) {
  std::vector<TensorSend> out;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::vector<TensorSend>& sends = codecs[b].first->last_tensor_sends();
    const auto first = static_cast<std::size_t>(buckets[b].first_parameter);
    if (sends.size() != static_cast<std::size_t>(buckets[b].last_parameter) + 1 - first) return {};
    if (out.size() < first + sends.size()) out.resize(first + sends.size());
    std::copy(sends.begin(), sends.end(), out.begin() + static_cast<std::ptrdiff_t>(first));
  }
  return out;
}

}  // namespace

struct TrainingSetup::Impl {
  const Scenario& sc;
  int n;
  bool with_server;
  torch::Device device{torch::kCPU};
  MeasuredClock clock = MeasuredClock::kWall;
  DatasetSplit data;
  bool data_loaded = true;  // false: a replay without the data (only its declared size and shape)
  Shards shards;
  std::vector<std::shared_ptr<Model>> models;  // index = rank; null where not built here
  std::shared_ptr<Model> eval_model;
  std::int64_t numel = 0;
  std::vector<LayerSlice> layers;  ///< the model's parameter tensors in the flat gradient
  std::int64_t steps_per_epoch = 1;
  // Gradient buckets in release order; one bucket (the whole gradient) without bucketing.
  std::vector<GradientBucket> buckets;
  std::vector<double> ready_fractions;  // per parameter; empty: measured with autograd hooks
  // codecs[b][r]: worker r's codec for bucket b (state per bucket, as DDP's hooks keep it).
  std::vector<std::vector<std::unique_ptr<Codec>>> codecs;
  std::vector<std::unique_ptr<Codec>> server_codecs;  // per bucket
  // When the run records or replays a step trace: every codec decorated to log its calls or to
  // replay them ([b][r], then the servers' per bucket); the timing decorators sit on these.
  std::vector<std::vector<std::unique_ptr<Codec>>> logged_codecs;
  std::vector<std::unique_ptr<Codec>> logged_server_codecs;
  // [rank][step] when replaying a trace; null when training.
  const std::vector<std::vector<StepRecord>>* replayed_steps = nullptr;
  // When codec work is timed: each host's device (workers, then the server), the endpoints
  // whose messages wait for it, and the codecs decorated to charge it ([b][r], per bucket).
  std::vector<std::unique_ptr<DeviceStreams>> devices;
  std::vector<std::unique_ptr<DeviceTimedEndpoint>> timed_endpoints;
  std::vector<std::vector<std::unique_ptr<Codec>>> timed_codecs;
  std::vector<std::unique_ptr<Codec>> timed_server_codecs;
  // Per host, with buckets; declared after the endpoints they sit on, so they go first.
  std::vector<std::unique_ptr<EndpointChannels>> channels;
  // Declared before the collective that samples its rounds from it.
  std::unique_ptr<Participation> participation;
  PhaseLedger phases;
  std::unique_ptr<Collective> collective;
  std::unique_ptr<TrainingScheme> scheme;
  std::unique_ptr<Evaluator> evaluator;
  WallClockAccount torch_account;
  // Workers' passes, compute.parallel_workers at a time; null: each in its
  // worker's StartStep. Declared after the account it charges.
  std::unique_ptr<ComputeBatch> batch;

  explicit Impl(const Scenario& scenario) : sc(scenario) {}
  void time_codecs();
  /// Worker r's codec for bucket b beneath any timing: the logging decorator when there is one.
  Codec& plain_codec(std::size_t b, std::size_t r) const {
    return logged_codecs.empty() ? *codecs[b][r] : *logged_codecs[b][r];
  }
  Codec& plain_server_codec(std::size_t b) const {
    return logged_server_codecs.empty() ? *server_codecs[b] : *logged_server_codecs[b];
  }
  /// Decorates every codec with `decorate(codec, its log, rank)`, logs[b][r] (r = n: the
  /// server's, whose rank is -1).
  template <class Logs, class Decorate>
  void log_codecs(Logs& logs, Decorate decorate);
};

template <class Logs, class Decorate>
void TrainingSetup::Impl::log_codecs(Logs& logs, Decorate decorate) {
  if (!logged_codecs.empty() || !devices.empty()) {
    throw std::logic_error("TrainingSetup: a step trace is recorded or replayed before build_scheme");
  }
  for (std::size_t b = 0; b < codecs.size(); ++b) {
    logged_codecs.emplace_back();
    for (std::size_t r = 0; r < codecs[b].size(); ++r) {
      logged_codecs[b].push_back(decorate(*codecs[b][r], logs[b][r], static_cast<int>(r)));
    }
    logged_server_codecs.push_back(decorate(*server_codecs[b], logs[b][codecs[b].size()], -1));
  }
}

/// Gives every host a device and decorates every codec to charge its work there.
void TrainingSetup::Impl::time_codecs() {
  Impl& s = *this;
  const ComputeSpec& c = s.sc.compute;
  CodecTiming timing;
  if (c.codec_time == "measured") {
    timing.mode = CodecTiming::Mode::kMeasured;
    timing.scale = c.codec_scale;
    timing.clock = s.clock;
  } else {
    timing.mode = CodecTiming::Mode::kProfile;
  }
  // Host h's timing: codec_device for every host when named; otherwise (a list of devices)
  // each worker's own device, and the server's is worker 0's.
  auto timing_of = [&](std::size_t h) {
    CodecTiming t = timing;
    if (t.mode == CodecTiming::Mode::kProfile) {
      const std::string& name = !c.codec_device.empty() ? c.codec_device
                                : h < static_cast<std::size_t>(s.n)
                                    ? c.profile_of(static_cast<int>(h))
                                    : c.profile_of(0);
      const DeviceProfile& device = device_profile(name);
      t.device = CodecDevice{device.memory_bandwidth, device.sustained_flops};
    }
    return t;
  };
  const std::size_t hosts = static_cast<std::size_t>(s.n) + (s.with_server ? 1 : 0);
  for (std::size_t h = 0; h < hosts; ++h) s.devices.push_back(std::make_unique<DeviceStreams>());
  for (std::size_t b = 0; b < s.codecs.size(); ++b) {
    s.timed_codecs.emplace_back();
    for (std::size_t r = 0; r < s.codecs[b].size(); ++r) {
      s.timed_codecs[b].push_back(time_codec(s.plain_codec(b, r), *s.devices[r], timing_of(r)));
    }
    // The server's instance works on the server's device; without a server it is unused.
    const std::size_t server = s.with_server ? hosts - 1 : 0;
    s.timed_server_codecs.push_back(
        time_codec(s.plain_server_codec(b), *s.devices[server], timing_of(server)));
  }
}

TrainingSetup::TrainingSetup(const Scenario& scenario, const std::vector<int>& model_ranks,
                             bool replaying)
    : impl_(std::make_unique<Impl>(scenario)) {
  Impl& s = *impl_;
  const Scenario& sc = scenario;
  s.n = sc.training.workers;
  s.with_server = sc.topology.with_server();
  s.device = pick_device(sc.compute.device);
  s.clock = s.device.is_cuda() || at::get_num_threads() > 1 ? MeasuredClock::kWall
                                                            : MeasuredClock::kThreadCpu;
  // A replay computes nothing: an iid partition needs only the training set's size, and the
  // models only the samples' shape, both declared without reading the data (a text's
  // vocabulary is known only once read, and a Dirichlet partition needs the labels).
  s.data_loaded = !(replaying && sc.dataset.partition != "dirichlet" && sc.dataset.kind != "text");
  ModelInput input;
  if (s.data_loaded) {
    s.data = load_dataset(sc.dataset, sc.seed);
    s.shards = sc.dataset.partition == "dirichlet"
                   ? partition_dirichlet(s.data.train.labels, s.data.train.classes, s.n,
                                         sc.dataset.alpha, sc.seed)
                   : partition_iid(s.data.train.size(), s.n, sc.seed);
    input = ModelInput{s.data.train.sample_shape, s.data.train.classes, s.data.train.tokens};
  } else {
    const DatasetInfo& dataset = DatasetRegistry::builtin().at(sc.dataset.kind);
    input = dataset.input(sc.dataset);
    s.shards = partition_iid(dataset.train_size(sc.dataset), s.n, sc.seed);
  }

  // Every model, wherever it is built, starts from the same torch seed: replicas start
  // identical, and the global generator ends in the same state in every process.
  s.models.resize(static_cast<std::size_t>(s.n));
  for (int r : model_ranks) {
    torch::manual_seed(sc.seed);
    s.models.at(static_cast<std::size_t>(r)) = make_model(sc.model, input);
  }
  torch::manual_seed(sc.seed);
  s.eval_model = make_model(sc.model, input);

  std::vector<LayerSlice>& layers = s.layers;
  std::vector<std::int64_t> numels;
  for (const auto& item : s.eval_model->named_parameters()) {
    const auto& p = item.value();
    layers.push_back(LayerSlice{item.key(), s.numel, p.sizes().vec()});
    numels.push_back(p.numel());
    s.numel += p.numel();
  }
  const BucketCaps caps{static_cast<std::int64_t>(sc.training.first_bucket_mb * (1 << 20)),
                        static_cast<std::int64_t>(sc.training.bucket_mb * (1 << 20))};
  const SchemeInfo& scheme = sc.topology.scheme();
  // A scheme that exchanges parts of the model gets codecs per part, as buckets have them.
  s.buckets = scheme.model_parts       ? scheme.model_parts(sc.topology.settings, numels)
              : sc.training.buckets ? plan_buckets(numels, caps)
                                    : single_bucket(numels);
  if (sc.compute.mode != "measured") s.ready_fractions = gradient_ready_fractions(*s.eval_model);
  s.eval_model->to(s.device);
  const std::int64_t shard = static_cast<std::int64_t>(s.shards[0].size());
  s.steps_per_epoch =
      std::max<std::int64_t>(1, (shard + sc.training.batch - 1) / sc.training.batch);
  const CodecRegistry& registry = CodecRegistry::builtin();
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    const GradientBucket& bucket = s.buckets[b];
    // A bucket's codec sees its own slice: its layers, rebased, and a seed of its own (one
    // bucket keeps the scenario's seed, so an unbucketed run is what it always was).
    std::vector<LayerSlice> own;
    for (int p = bucket.first_parameter; p <= bucket.last_parameter; ++p) {
      LayerSlice l = layers[static_cast<std::size_t>(p)];
      l.offset -= bucket.offset;
      own.push_back(std::move(l));
    }
    const std::uint64_t seed = sc.seed + 0x9E3779B97F4A7C15ull * b;
    auto context = [&](int rank) {
      return CodecContext{rank, s.n, seed, bucket.numel, own, s.steps_per_epoch};
    };
    s.codecs.emplace_back();
    for (int r = 0; r < s.n; ++r) s.codecs.back().push_back(registry.create(sc.codec, context(r)));
    s.server_codecs.push_back(registry.create(sc.codec, context(-1)));
  }
  // The other rules on faults are the scenario's (ScenarioRules); this one is the run's.
  if (!sc.faults.empty()) {
    if (model_ranks.size() != static_cast<std::size_t>(s.n)) {
      throw ConfigError("faults", "faults are simulated in-process only (gradwire run), not "
                                  "with one process per worker");
    }
  }
  if (sc.participation.enabled) {
    // Every process would sample its own rounds at its own instants: in-process only.
    if (model_ranks.size() != static_cast<std::size_t>(s.n)) {
      throw ConfigError("participation", "participation is simulated in-process only (gradwire "
                                         "run), not with one process per worker");
    }
    const ParticipationSpec& p = sc.participation;
    Availability availability =
        p.availability == "on_off"  ? Availability::on_off(s.n, p.mean_on_s, p.mean_off_s, sc.seed)
        : p.availability == "trace" ? Availability::from_intervals(p.trace_intervals)
                                    : Availability::always(s.n);
    s.participation = std::make_unique<Participation>(
        ParticipationOptions{p.clients_per_round, p.deadline_s, sc.seed}, std::move(availability));
  }
  if (s.data_loaded) {
    s.evaluator = std::make_unique<Evaluator>(s.data.test, sc.training.eval_samples, s.device);
  }
  // A worker process plays one rank: nothing to compute beside it.
  if (sc.compute.parallel_workers > 1 && model_ranks.size() > 1) {
    s.batch = std::make_unique<ComputeBatch>(sc.compute.parallel_workers, &s.torch_account);
  }
}

TrainingSetup::~TrainingSetup() = default;

TrainingSetup::CodecLogs TrainingSetup::empty_codec_logs() const {
  const Impl& s = *impl_;
  return CodecLogs(s.codecs.size(), std::vector<CodecCallLog>(static_cast<std::size_t>(s.n) + 1));
}

void TrainingSetup::record_codecs(CodecLogs& logs) {
  if (logs.size() != impl_->codecs.size()) logs = empty_codec_logs();
  impl_->log_codecs(logs, [](Codec& codec, CodecCallLog& log, int /*rank*/) {
    return record_codec(codec, log);
  });
}

void TrainingSetup::replay(const CodecLogs& logs, const std::vector<std::vector<StepRecord>>& steps) {
  Impl& s = *impl_;
  if (steps.size() != static_cast<std::size_t>(s.n)) {
    throw std::invalid_argument("replay: the trace holds " + std::to_string(steps.size()) +
                                " workers' steps, the run has " + std::to_string(s.n) + " workers");
  }
  for (const auto& rank : steps) {
    if (static_cast<std::int64_t>(rank.size()) != s.sc.training.steps) {
      throw std::invalid_argument("replay: the trace holds " + std::to_string(rank.size()) +
                                  " steps of a worker, the run has " +
                                  std::to_string(s.sc.training.steps));
    }
  }
  s.replayed_steps = &steps;
  const CodecLogs expected = empty_codec_logs();
  bool fits = logs.size() == expected.size();
  for (std::size_t b = 0; fits && b < logs.size(); ++b) fits = logs[b].size() == expected[b].size();
  if (!fits) {
    throw std::invalid_argument("replay: the trace's codec logs are not laid out for this run's " +
                                std::to_string(expected.size()) + " bucket(s) and " +
                                std::to_string(s.n) + " workers");
  }
  s.log_codecs(logs, [](Codec& codec, const CodecCallLog& log, int rank) {
    return replay_codec(codec, log, rank == 0);
  });
  s.batch.reset();  // nothing is computed
}

int TrainingSetup::workers() const { return impl_->n; }
bool TrainingSetup::with_server() const { return impl_->with_server; }
std::size_t TrainingSetup::hosts() const {
  return static_cast<std::size_t>(impl_->n) + (impl_->with_server ? 1 : 0);
}
std::int64_t TrainingSetup::parameters() const { return impl_->numel; }

const std::vector<LayerSlice>& TrainingSetup::layers() const { return impl_->layers; }
std::string TrainingSetup::device_name() const { return impl_->device.str(); }

bool TrainingSetup::on_gpu() const { return impl_->device.is_cuda(); }

MeasuredClock TrainingSetup::measured_clock() const { return impl_->clock; }
TrainingScheme& TrainingSetup::scheme() { return *impl_->scheme; }
const Participation* TrainingSetup::participation() const { return impl_->participation.get(); }

const PhaseLedger& TrainingSetup::phases() const { return impl_->phases; }
WallClockAccount& TrainingSetup::torch_account() { return impl_->torch_account; }

void TrainingSetup::build_scheme(std::vector<Endpoint*> workers, Endpoint* server,
                                 std::function<void(const StalenessEvent&)> on_update) {
  Impl& s = *impl_;
  const Scenario& sc = s.sc;
  if (sc.compute.codec_time != "free") s.time_codecs();
  const bool timed = !s.devices.empty();
  auto codecs_of = [&](std::size_t b) {
    std::vector<Codec*> out;
    for (std::size_t r = 0; r < s.codecs[b].size(); ++r) {
      out.push_back(timed ? s.timed_codecs[b][r].get() : &s.plain_codec(b, r));
    }
    return out;
  };
  auto server_codec_of = [&](std::size_t b) {
    return timed ? s.timed_server_codecs[b].get() : &s.plain_server_codec(b);
  };
  if (timed) {
    // Messages leave when the codec work that made them is done on their host's device.
    for (std::size_t r = 0; r < workers.size(); ++r) {
      s.timed_endpoints.push_back(std::make_unique<DeviceTimedEndpoint>(*workers[r], *s.devices[r]));
      workers[r] = s.timed_endpoints.back().get();
    }
    if (server) {
      s.timed_endpoints.push_back(std::make_unique<DeviceTimedEndpoint>(*server, *s.devices.back()));
      server = s.timed_endpoints.back().get();
    }
  }
  const TopologyConfig& topo = sc.topology;
  const SchemeInfo& info = topo.scheme();
  if (info.collective_in(topo.mode)) {
    // One bucket's collective over `ends` and `server_end`, with bucket b's codecs.
    // The workers' devices (the server's, last, is not a worker's): empty with free codec time.
    std::vector<DeviceStreams*> worker_devices;
    for (std::size_t r = 0; timed && r < static_cast<std::size_t>(s.n); ++r) {
      worker_devices.push_back(s.devices[r].get());
    }
    auto collective = [&](std::vector<Endpoint*> ends, Endpoint* server_end, std::size_t b) {
      return info.collective(CollectiveParts{std::move(ends), server_end, codecs_of(b),
                                             server_codec_of(b), s.participation.get(), &s.phases,
                                             worker_devices},
                             topo.settings);
    };
    if (s.buckets.size() > 1) {
      // One collective per bucket, each on its own channel of every host's endpoint.
      const int count = static_cast<int>(s.buckets.size());
      for (Endpoint* e : workers) s.channels.push_back(std::make_unique<EndpointChannels>(*e, count));
      if (server) s.channels.push_back(std::make_unique<EndpointChannels>(*server, count));
      std::vector<std::unique_ptr<Collective>> inner;
      for (int b = 0; b < count; ++b) {
        std::vector<Endpoint*> ends;
        for (int r = 0; r < s.n; ++r) ends.push_back(&s.channels[static_cast<std::size_t>(r)]->channel(b));
        inner.push_back(collective(ends, server ? &s.channels.back()->channel(b) : nullptr,
                                   static_cast<std::size_t>(b)));
      }
      s.collective = std::make_unique<BucketedCollective>(s.buckets, std::move(inner), s.numel);
    } else {
      s.collective = collective(workers, server, 0);
    }
  } else {
    SchemeParts parts;
    parts.workers = workers;
    parts.server = server;
    parts.buckets = s.buckets;
    parts.codecs = codecs_of;
    parts.server_codec = server_codec_of;
    // A codec that keeps momentum itself (DGC's momentum correction) must not see it twice.
    parts.optimizer.momentum = s.codecs[0][0]->traits().applies_momentum ? 0.0 : sc.training.momentum;
    parts.optimizer.weight_decay = sc.training.weight_decay;
    parts.optimizer.nesterov = sc.training.nesterov;
    parts.optimizer.lr = sc.training.lr;
    parts.on_update = std::move(on_update);
    for (const auto& shard : s.shards) parts.samples.push_back(static_cast<std::int64_t>(shard.size()));
    parts.participation = s.participation.get();
    s.scheme = info.scheme(parts, topo.settings);
  }
  if (s.collective) {
    s.collective->set_wall_account(&s.torch_account);
    s.scheme = std::make_unique<SynchronousScheme>(s.collective.get());
  }
  s.scheme->set_wall_account(&s.torch_account);
}

ns3::Ptr<Worker> TrainingSetup::make_worker(int r, Endpoint* endpoint,
                                            std::function<void(const StepRecord&)> on_step,
                                            std::function<void(int)> on_finished) {
  Impl& s = *impl_;
  const Scenario& sc = s.sc;
  const std::shared_ptr<Model>& model = s.models.at(static_cast<std::size_t>(r));
  if (!model) throw std::logic_error("TrainingSetup: rank " + std::to_string(r) + " has no model");
  if (!s.scheme) throw std::logic_error("TrainingSetup: build_scheme() first");
  const ComputeTimeModel compute_time = make_compute_time_model(
      sc.compute, model->forward_flops_per_sample(), sc.training.batch, r, sc.seed);
  WorkerOptions options;
  options.rank = r;
  options.steps = sc.training.steps;
  // A codec that keeps momentum itself (DGC's momentum correction) must not see it twice.
  options.momentum = s.codecs[0][static_cast<std::size_t>(r)]->traits().applies_momentum ? 0.0 : sc.training.momentum;
  options.weight_decay = sc.training.weight_decay;
  options.nesterov = sc.training.nesterov;
  options.lr = sc.training.lr;
  options.buckets = s.buckets;
  options.ready_fractions = s.ready_fractions;
  if (!s.devices.empty()) options.device = s.devices[static_cast<std::size_t>(r)].get();
  options.optimizer_time = optimizer_time_model(sc.compute, s.numel, options.momentum > 0, r);
  options.dropout_seed = sc.seed * 0xBF58476D1CE4E5B9ull + static_cast<std::uint64_t>(r) + 1;
  options.batch = s.batch.get();
  options.clock = s.clock;
  if (s.replayed_steps) options.replay = &(*s.replayed_steps)[static_cast<std::size_t>(r)];
  auto loader = !s.data_loaded ? nullptr : std::make_unique<ShardLoader>(s.data.train, s.shards[r], sc.training.batch,
                                              sc.seed * 7919 + static_cast<std::uint64_t>(r));
  auto w = ns3::CreateObject<Worker>();
  Collective* collective = s.collective.get();
  std::vector<std::pair<Codec*, double>> codecs;  // each bucket's codec and share of elements
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    codecs.emplace_back(&s.plain_codec(b, static_cast<std::size_t>(r)),
                        static_cast<double>(s.buckets[b].numel) / static_cast<double>(s.numel));
  }
  std::vector<GradientBucket> buckets = s.buckets;
  w->Setup(
      options, model, std::move(loader), s.scheme.get(), endpoint, compute_time, s.device,
      &s.torch_account,
      [collective, codecs, buckets = std::move(buckets), r, on_step = std::move(on_step)](StepRecord record) {
        // Collectives know the encoded size; other schemes send what their host sent.
        record.payload_bytes = collective ? collective->last_payload_bytes(r) : record.bytes_sent;
        record.density = 0;  // one bucket: its share is exactly 1
        for (const auto& [codec, share] : codecs) record.density += share * codec->last_density();
        record.tensors = tensor_sends(buckets, codecs);
        on_step(record);
      },
      std::move(on_finished));
  return w;
}

void TrainingSetup::await_compute() {
  if (impl_->batch) impl_->batch->run();
}

std::size_t TrainingSetup::parallel_passes() const {
  return impl_->batch ? impl_->batch->jobs_run() : 0;
}

std::size_t TrainingSetup::parallel_batches() const {
  return impl_->batch ? impl_->batch->batches_run() : 0;
}

EvalResult TrainingSetup::evaluate() {
  Impl& s = *impl_;
  if (!s.evaluator) throw std::logic_error("TrainingSetup: a replay's setup has no test data to evaluate");
  // The models as they stand at this instant, with every pass started before it done.
  await_compute();
  const at::Tensor params = s.scheme->evaluation_parameters();
  if (!params.defined()) {
    if (!s.models[0]) throw std::logic_error("TrainingSetup: rank 0's model is not built here");
    return s.evaluator->evaluate(*s.models[0]);
  }
  // Schemes whose workers disagree (gossip, leader) or whose model lives on a server (async
  // PS) are evaluated on the parameters the scheme names, loaded into a model of our own.
  torch::NoGradGuard no_grad;
  const at::Tensor on_device = params.to(s.device);
  std::int64_t offset = 0;
  for (auto& p : s.eval_model->parameters()) {
    p.copy_(on_device.slice(0, offset, offset + p.numel()).view_as(p));
    offset += p.numel();
  }
  // Running statistics (batch normalisation) are no scheme's to send: see RunningStatistics.h.
  load_mean_buffers(*s.eval_model, s.models);
  return s.evaluator->evaluate(*s.eval_model);
}

std::vector<float> TrainingSetup::model_parameters() {
  Impl& s = *impl_;
  await_compute();
  at::Tensor params = s.scheme->evaluation_parameters();
  if (!params.defined()) {
    if (!s.models[0]) throw std::logic_error("TrainingSetup: rank 0's model is not built here");
    std::vector<at::Tensor> flat;
    for (const auto& p : s.models[0]->parameters()) flat.push_back(p.detach().reshape(-1).cpu());
    params = at::cat(flat);
  }
  params = params.to(torch::kFloat32).contiguous();
  return std::vector<float>(params.data_ptr<float>(), params.data_ptr<float>() + params.numel());
}

double TrainingSetup::consensus_distance() const {
  if (impl_->batch) impl_->batch->run();
  return impl_->scheme->consensus_distance();
}
double TrainingSetup::mean_staleness() const { return impl_->scheme->mean_staleness(); }

}  // namespace gradwire
