#include "sim/Engine.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include <ns3/core-module.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "codecs/ConfigError.h"
#include "netmodels/NetworkFactory.h"
#include "nodes/AsyncParameterServer.h"
#include "nodes/LeaderSgd.h"
#include "nodes/Messenger.h"
#include "nodes/ParameterServer.h"
#include "nodes/Partition.h"
#include "nodes/PushSumGossip.h"
#include "nodes/RingAllReduce.h"
#include "nodes/ShardLoader.h"
#include "nodes/SynchronousScheme.h"
#include "nodes/Worker.h"
#include "sim/AtomicOutput.h"
#include "sim/ComputeTime.h"
#include "sim/Evaluation.h"
#include "sim/MetricsRecorder.h"

namespace gradwire {

namespace {

constexpr std::uint16_t kMessengerPort = 9000;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

DatasetSplit load_dataset(const DatasetSpec& spec, std::uint64_t seed) {
  if (spec.kind == "synthetic") return make_synthetic(spec.synthetic, seed);
  try {
    return load_fashion_mnist(spec.path, spec.train_limit, spec.test_limit);
  } catch (const DatasetError& e) {
    throw ConfigError("dataset.path", e.what());
  }
}

}  // namespace

Engine::Engine(Scenario scenario) : scenario_(std::move(scenario)) {}

RunResult Engine::run(const std::string& out_dir, std::ostream* progress) {
  const Scenario& sc = scenario_;
  const auto wall_start = Clock::now();
  const int n = sc.training.workers;
  const bool with_server = sc.topology.kind == "ps";

  torch::set_num_threads(sc.compute.threads > 0
                             ? sc.compute.threads
                             : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  const torch::Device device = pick_device(sc.compute.device);

  // Everything that can fail on bad input happens before any output exists.
  const DatasetSplit data = load_dataset(sc.dataset, sc.seed);
  const Shards shards =
      sc.dataset.partition == "dirichlet"
          ? partition_dirichlet(data.train.labels, data.train.classes, n, sc.dataset.alpha, sc.seed)
          : partition_iid(data.train.size(), n, sc.seed);

  std::unique_ptr<RunDirectory> dir;
  if (!out_dir.empty()) dir = std::make_unique<RunDirectory>(out_dir, sc.name);

  // ns-3: a fresh simulation, seeded from the scenario (RngRun fixed: the seed carries it).
  // The guard tears it down on every exit path, so a failed run leaves no half-built world.
  ns3::Simulator::Destroy();
  struct SimulatorGuard {
    ~SimulatorGuard() { ns3::Simulator::Destroy(); }
  } simulator_guard;
  ns3::RngSeedManager::SetSeed(static_cast<std::uint32_t>(sc.seed % 4294967295u) + 1);
  ns3::RngSeedManager::SetRun(1);
  const std::size_t hosts = static_cast<std::size_t>(n) + (with_server ? 1 : 0);
  std::unique_ptr<Network> network = build_network(sc.network, hosts);

  const std::vector<ns3::Ptr<Messenger>> messengers =
      Messenger::InstallOnHosts(*network, kMessengerPort);

  // Replicas start identical: the same torch seed before each model is built.
  std::vector<std::shared_ptr<Model>> models;
  for (int r = 0; r < n; ++r) {
    torch::manual_seed(sc.seed);
    models.push_back(make_model(sc.model, data.train.sample_shape, data.train.classes));
  }
  std::int64_t numel = 0;
  std::vector<LayerSlice> layers;
  for (const auto& item : models[0]->named_parameters()) {
    const auto& p = item.value();
    layers.push_back(LayerSlice{item.key(), numel, p.sizes().vec()});
    numel += p.numel();
  }
  const std::int64_t shard = static_cast<std::int64_t>(shards[0].size());
  const std::int64_t steps_per_epoch =
      std::max<std::int64_t>(1, (shard + sc.training.batch - 1) / sc.training.batch);
  auto codec_context = [&](int rank) {
    return CodecContext{rank, n, sc.seed, numel, layers, steps_per_epoch};
  };

  const CodecRegistry& registry = CodecRegistry::builtin();
  std::vector<std::unique_ptr<Codec>> codecs;
  std::vector<Codec*> codec_ptrs;
  for (int r = 0; r < n; ++r) {
    codecs.push_back(registry.create(sc.codec, codec_context(r)));
    codec_ptrs.push_back(codecs.back().get());
  }
  std::unique_ptr<Codec> server_codec = registry.create(sc.codec, codec_context(-1));

  WallClockAccount torch_account;  // LibTorch training and codec work inside the event loop
  WallClockAccount eval_account;
  std::vector<Endpoint*> worker_messengers;
  for (int r = 0; r < n; ++r) worker_messengers.push_back(ns3::PeekPointer(messengers[r]));
  Endpoint* server_messenger = with_server ? ns3::PeekPointer(messengers[n]) : nullptr;
  MetricsRecorder recorder(sc, numel, progress, wall_start);

  // The training scheme: a synchronous collective, or a scheme with its own protocol.
  std::unique_ptr<Collective> collective;
  std::unique_ptr<TrainingScheme> scheme;
  const auto& topo = sc.topology;
  if (topo.kind == "ring") {
    collective = std::make_unique<RingAllReduce>(worker_messengers, codec_ptrs);
  } else if (topo.kind == "ps" && topo.mode == "sync") {
    collective = std::make_unique<ParameterServer>(worker_messengers, server_messenger, codec_ptrs,
                                                   server_codec.get());
  } else if (topo.kind == "ps") {
    AsyncServerOptions o;
    o.momentum = codecs[0]->applies_momentum() ? 0.0 : sc.training.momentum;
    o.weight_decay = sc.training.weight_decay;
    o.nesterov = sc.training.nesterov;
    o.lr = sc.training.lr;
    o.max_staleness = topo.max_staleness;
    scheme = std::make_unique<AsyncParameterServer>(
        worker_messengers, server_messenger, codec_ptrs, server_codec.get(), o,
        [&recorder](const StalenessEvent& e) { recorder.staleness(e); });
  } else if (topo.kind == "gossip") {
    PushSumOptions o;
    o.peers = topo.peers;
    o.momentum = sc.training.momentum;
    o.weight_decay = sc.training.weight_decay;
    o.nesterov = sc.training.nesterov;
    o.lr = sc.training.lr;
    scheme = std::make_unique<PushSumGossip>(worker_messengers, o);
  } else if (topo.kind == "leader") {
    LeaderOptions o;
    o.l_comm = topo.l_comm;
    o.g_comm = topo.g_comm;
    o.c1 = topo.c1;
    o.c2 = topo.c2;
    o.group_size = topo.group_size;
    scheme = std::make_unique<LeaderSgd>(worker_messengers, o);
  } else {
    throw std::logic_error("unknown topology " + topo.kind);
  }
  if (collective) {
    collective->set_wall_account(&torch_account);
    scheme = std::make_unique<SynchronousScheme>(collective.get());
  }
  scheme->set_wall_account(&torch_account);

  Evaluator evaluator(data.test, sc.training.eval_samples, device);
  // Schemes whose workers disagree (gossip, leader) or whose model lives on a server (async
  // PS) are evaluated on the parameters the scheme names, loaded into a model of our own.
  torch::manual_seed(sc.seed);
  std::shared_ptr<Model> eval_model =
      make_model(sc.model, data.train.sample_shape, data.train.classes);
  eval_model->to(device);
  auto evaluate = [&]() {
    const at::Tensor params = scheme->evaluation_parameters();
    if (!params.defined()) return evaluator.evaluate(*models[0]);
    torch::NoGradGuard no_grad;
    const at::Tensor on_device = params.to(device);
    std::int64_t offset = 0;
    for (auto& p : eval_model->parameters()) {
      p.copy_(on_device.slice(0, offset, offset + p.numel()).view_as(p));
      offset += p.numel();
    }
    return evaluator.evaluate(*eval_model);
  };

  std::vector<ns3::Ptr<Worker>> workers;
  int finished = 0;
  for (int r = 0; r < n; ++r) {
    const ComputeTimeModel compute_time = make_compute_time_model(
        sc.compute, models[0]->forward_flops_per_sample(), sc.training.batch, r, sc.seed);
    WorkerOptions options;
    options.rank = r;
    options.steps = sc.training.steps;
    // A codec that keeps momentum itself (DGC's momentum correction) must not see it twice.
    options.momentum = codecs[r]->applies_momentum() ? 0.0 : sc.training.momentum;
    options.weight_decay = sc.training.weight_decay;
    options.nesterov = sc.training.nesterov;
    options.lr = sc.training.lr;
    auto loader = std::make_unique<ShardLoader>(data.train, shards[r], sc.training.batch,
                                                sc.seed * 7919 + static_cast<std::uint64_t>(r));
    auto w = ns3::CreateObject<Worker>();
    w->Setup(
        options, models[r], std::move(loader), scheme.get(), worker_messengers[r],
        compute_time, device, &torch_account,
        [&, r](StepRecord record) {
          // Collectives know the encoded size; other schemes send what their host sent.
          record.payload_bytes = collective ? collective->last_payload_bytes(r) : record.bytes_sent;
          record.density = codecs[r]->last_density();
          if (!recorder.record(record, n)) return;
          // Every worker has completed this step (for sync schemes the replicas then agree).
          const std::int64_t done = record.step + 1;
          if (done % sc.training.eval_every == 0 || done == sc.training.steps) {
            WallClockAccount::Charge charge(&eval_account);
            recorder.evaluation(done, ns3::Simulator::Now().GetSeconds(), evaluate(),
                                scheme->consensus_distance());
          }
        },
        [&](int) {
          if (++finished == n) ns3::Simulator::Stop();
        });
    w->SetStartTime(ns3::Seconds(network->ready_time_s()));
    network->host(static_cast<std::size_t>(r))->AddApplication(w);
    workers.push_back(w);
  }

  if (progress) {
    *progress << "[" << sc.name << "] " << n << " workers, " << sc.model.kind << " (" << numel
              << " parameters), codec " << sc.codec.at("kind").get<std::string>() << ", "
              << sc.topology.kind << ", " << network->describe() << ", device " << device.str()
              << "\n";
  }

  const auto run_start = Clock::now();
  ns3::Simulator::Run();
  const double run_wall = seconds_since(run_start);
  const double sim_end = ns3::Simulator::Now().GetSeconds();

  std::uint64_t bytes_on_wire = 0;
  for (const auto& m : messengers) bytes_on_wire += m->bytes_sent();
  const bool complete = finished == n;
  ns3::Simulator::Destroy();
  if (!complete) {
    throw std::runtime_error("simulation ended before every worker finished (" +
                             std::to_string(finished) + " of " + std::to_string(n) + ")");
  }

  RunResult result;
  result.summary = recorder.summary(sim_end, bytes_on_wire, seconds_since(wall_start),
                                    run_wall - torch_account.seconds() - eval_account.seconds());
  result.summary["network_description"] = network->describe();
  result.summary["device"] = device.str();
  const double staleness = scheme->mean_staleness();
  result.summary["mean_staleness"] = std::isnan(staleness) ? nlohmann::json() : nlohmann::json(staleness);
  result.metrics_jsonl = recorder.jsonl();
  if (dir) {
    write_file_atomically(dir->staging() + "/scenario.json", sc.resolved.dump(2) + "\n");
    write_file_atomically(dir->staging() + "/metrics.jsonl", result.metrics_jsonl);
    write_file_atomically(dir->staging() + "/summary.json", result.summary.dump(2) + "\n");
    dir->commit();
    result.directory = dir->final_path();
  }
  if (progress) recorder.print_final(*progress, result.summary);
  return result;
}

}  // namespace gradwire
