#include "sim/engine/TrainingSetup.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "codecs/MultiRoundCodec.h"
#include "common/ConfigError.h"
#include "netmodels/NetworkFactory.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/LeaderSgd.h"
#include "nodes/schemes/ParameterServer.h"
#include "nodes/schemes/PushSumGossip.h"
#include "nodes/schemes/RingAllReduce.h"
#include "nodes/schemes/SynchronousScheme.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/training/Partition.h"
#include "nodes/training/RunningStatistics.h"
#include "nodes/training/ShardLoader.h"
#include "nodes/transport/TransportConfig.h"
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

/// The first `limit` samples of `d` (all when limit is 0).
void keep_first(Dataset& d, std::int64_t limit) {
  if (limit <= 0 || limit >= d.size()) return;
  d.inputs = d.inputs.slice(0, 0, limit);
  d.labels = d.labels.slice(0, 0, limit);
}

DatasetSplit read_data(const DatasetSpec& spec, std::uint64_t seed) {
  if (spec.kind == "synthetic") return make_synthetic(spec.synthetic, seed);
  try {
    if (spec.kind == "text") {
      DatasetSplit split = load_text(spec.text);
      keep_first(split.train, spec.train_limit);
      keep_first(split.test, spec.test_limit);
      return split;
    }
    if (spec.kind == "cifar10" || spec.kind == "cifar100") {
      return load_cifar(spec.path, spec.kind == "cifar10" ? 10 : 100, spec.train_limit,
                        spec.test_limit);
    }
    return load_fashion_mnist(spec.path, spec.train_limit, spec.test_limit);
  } catch (const DatasetError& e) {
    throw ConfigError("dataset.path", e.what());
  }
}

DatasetSplit load_dataset(const DatasetSpec& spec, std::uint64_t seed) {
  DatasetSplit split = read_data(spec, seed);
  split.train.augment = spec.augment;
  return split;
}

}  // namespace

struct TrainingSetup::Impl {
  const Scenario& sc;
  int n;
  bool with_server;
  torch::Device device{torch::kCPU};
  DatasetSplit data;
  Shards shards;
  std::vector<std::shared_ptr<Model>> models;  // index = rank; null where not built here
  std::shared_ptr<Model> eval_model;
  std::int64_t numel = 0;
  std::int64_t steps_per_epoch = 1;
  std::vector<std::unique_ptr<Codec>> codecs;
  std::unique_ptr<Codec> server_codec;
  std::unique_ptr<Collective> collective;
  std::unique_ptr<TrainingScheme> scheme;
  std::unique_ptr<Evaluator> evaluator;
  WallClockAccount torch_account;

  explicit Impl(const Scenario& scenario) : sc(scenario) {}
};

TrainingSetup::TrainingSetup(const Scenario& scenario, const std::vector<int>& model_ranks)
    : impl_(std::make_unique<Impl>(scenario)) {
  Impl& s = *impl_;
  const Scenario& sc = scenario;
  s.n = sc.training.workers;
  s.with_server = sc.topology.scheme().server_host;
  s.device = pick_device(sc.compute.device);
  s.data = load_dataset(sc.dataset, sc.seed);
  s.shards = sc.dataset.partition == "dirichlet"
                 ? partition_dirichlet(s.data.train.labels, s.data.train.classes, s.n,
                                       sc.dataset.alpha, sc.seed)
                 : partition_iid(s.data.train.size(), s.n, sc.seed);

  // Every model, wherever it is built, starts from the same torch seed: replicas start
  // identical, and the global generator ends in the same state in every process.
  s.models.resize(static_cast<std::size_t>(s.n));
  const ModelInput input{s.data.train.sample_shape, s.data.train.classes, s.data.train.tokens};
  for (int r : model_ranks) {
    torch::manual_seed(sc.seed);
    s.models.at(static_cast<std::size_t>(r)) = make_model(sc.model, input);
  }
  torch::manual_seed(sc.seed);
  s.eval_model = make_model(sc.model, input);

  std::vector<LayerSlice> layers;
  for (const auto& item : s.eval_model->named_parameters()) {
    const auto& p = item.value();
    layers.push_back(LayerSlice{item.key(), s.numel, p.sizes().vec()});
    s.numel += p.numel();
  }
  s.eval_model->to(s.device);
  const std::int64_t shard = static_cast<std::int64_t>(s.shards[0].size());
  s.steps_per_epoch =
      std::max<std::int64_t>(1, (shard + sc.training.batch - 1) / sc.training.batch);
  auto codec_context = [&](int rank) {
    return CodecContext{rank, s.n, sc.seed, s.numel, layers, s.steps_per_epoch};
  };
  const CodecRegistry& registry = CodecRegistry::builtin();
  for (int r = 0; r < s.n; ++r) s.codecs.push_back(registry.create(sc.codec, codec_context(r)));
  s.server_codec = registry.create(sc.codec, codec_context(-1));
  if (!sc.faults.empty()) {
    if (dynamic_cast<MultiRoundCodec*>(s.codecs[0].get())) {
      throw ConfigError("codec.kind", "\"" + s.codecs[0]->name() +
                                          "\" exchanges in several rounds, which cannot be "
                                          "replayed when a worker leaves; faults need a "
                                          "single-round codec");
    }
    if (TransportConfig::of_network(sc.network).udp()) {
      throw ConfigError("network.transport", "faults are simulated over the tcp transport "
                                             "only; remove `faults` or use \"tcp\"");
    }
    if (model_ranks.size() != static_cast<std::size_t>(s.n)) {
      throw ConfigError("faults", "faults are simulated in-process only (gradwire run), not "
                                  "with one process per worker");
    }
  }
  s.evaluator = std::make_unique<Evaluator>(s.data.test, sc.training.eval_samples, s.device);
}

TrainingSetup::~TrainingSetup() = default;

int TrainingSetup::workers() const { return impl_->n; }
bool TrainingSetup::with_server() const { return impl_->with_server; }
std::size_t TrainingSetup::hosts() const {
  return static_cast<std::size_t>(impl_->n) + (impl_->with_server ? 1 : 0);
}
std::int64_t TrainingSetup::parameters() const { return impl_->numel; }
std::string TrainingSetup::device_name() const { return impl_->device.str(); }
TrainingScheme& TrainingSetup::scheme() { return *impl_->scheme; }
WallClockAccount& TrainingSetup::torch_account() { return impl_->torch_account; }

void TrainingSetup::build_scheme(std::vector<Endpoint*> workers, Endpoint* server,
                                 std::function<void(const StalenessEvent&)> on_update) {
  Impl& s = *impl_;
  const Scenario& sc = s.sc;
  std::vector<Codec*> codec_ptrs;
  for (const auto& c : s.codecs) codec_ptrs.push_back(c.get());
  const auto& topo = sc.topology;
  switch (topo.kind) {
    case SchemeKind::kRing:
      s.collective = std::make_unique<RingAllReduce>(workers, codec_ptrs);
      break;
    case SchemeKind::kParameterServer: {
      if (!topo.async()) {
        s.collective =
            std::make_unique<ParameterServer>(workers, server, codec_ptrs, s.server_codec.get());
      } else {
        AsyncServerOptions o;
        o.momentum = s.codecs[0]->applies_momentum() ? 0.0 : sc.training.momentum;
        o.weight_decay = sc.training.weight_decay;
        o.nesterov = sc.training.nesterov;
        o.lr = sc.training.lr;
        o.max_staleness = topo.max_staleness;
        s.scheme = std::make_unique<AsyncParameterServer>(workers, server, codec_ptrs,
                                                          s.server_codec.get(), o,
                                                          std::move(on_update));
      }
      break;
    }
    case SchemeKind::kGossip: {
      PushSumOptions o;
      o.peers = topo.peers;
      o.overlap = topo.overlap;
      o.momentum = sc.training.momentum;
      o.weight_decay = sc.training.weight_decay;
      o.nesterov = sc.training.nesterov;
      o.lr = sc.training.lr;
      s.scheme = std::make_unique<PushSumGossip>(workers, o);
      break;
    }
    case SchemeKind::kLeader: {
      LeaderOptions o;
      o.l_comm = topo.l_comm;
      o.g_comm = topo.g_comm;
      o.c1 = topo.c1;
      o.c2 = topo.c2;
      o.group_size = topo.group_size;
      s.scheme = std::make_unique<LeaderSgd>(workers, o);
      break;
    }
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
  options.momentum = s.codecs[r]->applies_momentum() ? 0.0 : sc.training.momentum;
  options.weight_decay = sc.training.weight_decay;
  options.nesterov = sc.training.nesterov;
  options.lr = sc.training.lr;
  auto loader = std::make_unique<ShardLoader>(s.data.train, s.shards[r], sc.training.batch,
                                              sc.seed * 7919 + static_cast<std::uint64_t>(r));
  auto w = ns3::CreateObject<Worker>();
  Collective* collective = s.collective.get();
  Codec* codec = s.codecs[r].get();
  w->Setup(
      options, model, std::move(loader), s.scheme.get(), endpoint, compute_time, s.device,
      &s.torch_account,
      [collective, codec, r, on_step = std::move(on_step)](StepRecord record) {
        // Collectives know the encoded size; other schemes send what their host sent.
        record.payload_bytes = collective ? collective->last_payload_bytes(r) : record.bytes_sent;
        record.density = codec->last_density();
        on_step(record);
      },
      std::move(on_finished));
  return w;
}

EvalResult TrainingSetup::evaluate() {
  Impl& s = *impl_;
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

double TrainingSetup::consensus_distance() const { return impl_->scheme->consensus_distance(); }
double TrainingSetup::mean_staleness() const { return impl_->scheme->mean_staleness(); }

}  // namespace gradwire
