#include "sim/engine/Engine.h"

#include <chrono>
#include <filesystem>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <thread>

#include <ns3/core-module.h>
#include <torch/torch.h>

#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/RadioEnergySummary.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Faults.h"
#include "nodes/schemes/TrainingScheme.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/schemes/Worker.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/Evaluation.h"
#include "sim/engine/MetricsRecorder.h"
#include "sim/engine/ReplaySafety.h"
#include "sim/engine/StepTrace.h"
#include "sim/engine/StepTraceFile.h"
#include "sim/engine/SimulatedWorld.h"
#include "sim/engine/TrainingSetup.h"

namespace gradwire {

namespace {

/// The recorded evaluation after `step` steps.
const RecordedEvaluation& recorded_evaluation(const StepTrace& trace, std::int64_t step) {
  for (const RecordedEvaluation& e : trace.evaluations) {
    if (e.step == step) return e;
  }
  throw std::runtime_error("replay: the run evaluates after step " + std::to_string(step) +
                           ", the trace holds no evaluation there");
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

Engine::Engine(Scenario scenario, TraceOptions trace)
    : scenario_(std::move(scenario)), trace_(std::move(trace)) {}

RunResult Engine::run(const std::string& out_dir, std::ostream* progress) {
  const Scenario& sc = scenario_;
  const auto wall_start = Clock::now();
  const int n = sc.training.workers;

  torch::set_num_threads(sc.compute.intra_op_threads());

  // Everything that can fail on bad input happens before any output exists.
  const StepTrace* replay = trace_.replay.get();
  if (trace_.record || replay) {
    if (auto refusal = replay_refusal(sc)) throw *refusal;
  }
  if (replay) {
    check_trace_matches(sc, replay->scenario, trace_.replay_source);
    check_codec_time_replayable(sc, *replay, trace_.replay_source);
  }
  std::vector<int> all_ranks;
  for (int r = 0; r < n; ++r) all_ranks.push_back(r);
  TrainingSetup setup(sc, all_ranks, replay != nullptr);
  std::shared_ptr<StepTrace> recorded;
  if (trace_.record) {
    recorded = std::make_shared<StepTrace>();
    recorded->scenario = sc.resolved;
    recorded->parameters = setup.parameters();
    recorded->steps.resize(static_cast<std::size_t>(n));
    setup.record_codecs(recorded->codecs);
  }
  if (replay) {
    if (replay->parameters != setup.parameters()) {
      throw ConfigError("--replay", trace_.replay_source + " records a model of " +
                                        std::to_string(replay->parameters) +
                                        " parameters, this run's has " +
                                        std::to_string(setup.parameters()));
    }
    setup.replay(replay->codecs, replay->steps);
  }

  std::unique_ptr<RunDirectory> dir;
  if (!out_dir.empty()) dir = std::make_unique<RunDirectory>(out_dir, sc.name);

  // ns-3: a fresh simulation seeded from the scenario, torn down on every exit path.
  const SimulatedWorld world(sc, setup.hosts());
  Network& network = world.network();
  const std::vector<ns3::Ptr<Messenger>>& messengers = world.messengers();

  WallClockAccount eval_account;
  std::vector<Endpoint*> worker_messengers;
  for (int r = 0; r < n; ++r) worker_messengers.push_back(ns3::PeekPointer(messengers[r]));
  Endpoint* server_messenger = setup.with_server() ? ns3::PeekPointer(messengers[n]) : nullptr;
  MetricsRecorder recorder(sc, setup.parameters(), progress, wall_start);
  if (sc.compute.mode == "measured" && !setup.on_gpu()) {
    recorder.check_measured_load(setup.measured_clock(), at::get_num_threads());
  }
  // The workers' radios (hosts 0..n-1) count in the energy of every line and to the target.
  recorder.set_radio_meter([&network, n] {
    double joules = 0;
    for (const auto& [host, j] : network.radio_joules()) {
      if (host < static_cast<std::size_t>(n)) joules += j;
    }
    return joules;
  });
  recorder.set_loss_ledger(world.loss_ledger());
  recorder.set_phase_ledger(&setup.phases());
  recorder.set_layers(setup.layers());

  setup.build_scheme(worker_messengers, server_messenger,
                     [&recorder](const StalenessEvent& e) { recorder.staleness(e); });
  recorder.set_participation(setup.participation());

  std::vector<ns3::Ptr<Worker>> workers;
  int finished = 0;
  int departed = 0;  // workers that left and have not resumed: nobody waits for them to finish
  const auto check_done = [&] {
    if (finished + departed == n) ns3::Simulator::Stop();
  };
  const auto evaluates_after = [&](std::int64_t done) {
    return done % sc.training.eval_every == 0 || done == sc.training.steps;
  };
  const auto evaluate_now = [&](std::int64_t done) {
    setup.await_compute();  // LibTorch's account, not the evaluation's
    WallClockAccount::Charge charge(&eval_account);
    const EvalResult result = setup.evaluate();
    return RecordedEvaluation{done, result, setup.consensus_distance()};
  };
  // Replicas of a synchronous collective are evaluated on rank 0's model as it ended the step:
  // once it has begun its next step, that step's forward pass has moved its batch-norm
  // statistics, and whether it has by the time the slowest worker ends the step depends on the
  // network.
  const bool replicas = sc.topology.scheme().collective_in(sc.topology.mode);
  std::map<std::int64_t, RecordedEvaluation> ended_on_rank0;
  // A step is complete when every worker taking part reported it (for sync schemes the
  // replicas then agree): evaluate at the configured interval.
  const auto step_complete = [&](std::int64_t step) {
    const std::int64_t done = step + 1;
    if (!evaluates_after(done)) return;
    const double now = ns3::Simulator::Now().GetSeconds();
    if (replay) {
      const RecordedEvaluation& e = recorded_evaluation(*replay, done);
      recorder.evaluation(done, now, e.result, e.consensus_distance);
      return;
    }
    const auto early = ended_on_rank0.find(done);
    const RecordedEvaluation e = early != ended_on_rank0.end() ? early->second : evaluate_now(done);
    if (early != ended_on_rank0.end()) ended_on_rank0.erase(early);
    if (recorded) recorded->evaluations.push_back(e);
    recorder.evaluation(done, now, e.result, e.consensus_distance);
  };
  for (int r = 0; r < n; ++r) {
    auto w = setup.make_worker(
        r, worker_messengers[r],
        [&](const StepRecord& record) {
          if (recorded) recorded->steps[static_cast<std::size_t>(record.rank)].push_back(record);
          if (replicas && !replay && record.rank == 0 && evaluates_after(record.step + 1)) {
            ended_on_rank0.emplace(record.step + 1, evaluate_now(record.step + 1));
          }
          if (recorder.record(record, n)) step_complete(record.step);
        },
        [&](int) {
          ++finished;
          check_done();
        });
    w->SetStartTime(ns3::Seconds(network.ready_time_s()));
    network.host(static_cast<std::size_t>(r))->AddApplication(w);
    workers.push_back(w);
  }

  // Faults: each listed worker leaves at its time (unless it already finished) and may rejoin.
  if (!sc.faults.empty()) {
    FaultTolerant* faults = setup.scheme().faults();
    if (!faults) throw std::logic_error("scheme " + sc.topology.name() + " has no fault handling");
    faults->enable_faults(sc.topology.timeout_s,
                          [&recorder](const FaultEvent& e) { recorder.event(e); });
    for (const FaultSpec& f : sc.faults) {
      Worker* w = ns3::PeekPointer(workers[static_cast<std::size_t>(f.rank)]);
      const int rank = f.rank;
      ns3::Simulator::Schedule(ns3::Seconds(f.leave_at_s), [&, w, rank, faults] {
        if (w->finished() || !w->alive()) return;
        recorder.event(FaultEvent{"leave", rank, ns3::Simulator::Now().GetSeconds(),
                                  w->steps_done()});
        w->Leave();
        faults->leave(rank);
        ++departed;
        for (std::int64_t step : recorder.leave(rank, n)) step_complete(step);
        check_done();
      });
      if (f.rejoin_at_s < 0) continue;
      ns3::Simulator::Schedule(ns3::Seconds(f.rejoin_at_s), [&, w, rank, faults] {
        if (w->alive() || w->finished()) return;  // never left (it had finished)
        recorder.event(FaultEvent{"rejoin", rank, ns3::Simulator::Now().GetSeconds(), -1});
        faults->rejoin(rank, [&, w, rank](std::int64_t step, const at::Tensor& parameters) {
          recorder.event(FaultEvent{"resume", rank, ns3::Simulator::Now().GetSeconds(), step});
          recorder.resume(rank, step);
          --departed;
          w->Resume(step, parameters);
        });
      });
    }
  }

  if (progress) {
    *progress << "[" << sc.name << "] " << n << " workers, " << sc.model.kind << " ("
              << setup.parameters() << " parameters), codec "
              << sc.codec.at("kind").get<std::string>() << ", " << sc.topology.name() << ", "
              << network.describe() << ", device " << setup.device_name() << "\n";
  }

  const auto run_start = Clock::now();
  ns3::Simulator::Run();
  const double run_wall = seconds_since(run_start);
  const double sim_end = ns3::Simulator::Now().GetSeconds();
  const auto radio_joules = network.radio_joules();  // integrates up to now: before Destroy
  recorder.set_radio_meter(nullptr);

  std::uint64_t bytes_on_wire = 0;
  for (const auto& m : messengers) bytes_on_wire += m->bytes_sent();
  const bool complete = finished + departed == n;
  std::vector<float> final_parameters;
  if (complete && !replay) final_parameters = setup.model_parameters();
  ns3::Simulator::Destroy();
  if (!complete) {
    throw std::runtime_error("simulation ended before every worker finished (" +
                             std::to_string(finished) + " of " + std::to_string(n) +
                             (departed ? ", " + std::to_string(departed) + " departed" : "") +
                             ")");
  }

  RunResult result;
  result.summary =
      recorder.summary(sim_end, bytes_on_wire, seconds_since(wall_start),
                       run_wall - setup.torch_account().seconds() - eval_account.seconds());
  result.summary["network_description"] = network.describe();
  const auto network_events = network.event_counts();
  if (!network_events.empty()) result.summary["network_events"] = network_events;
  add_radio_energy(result.summary, radio_joules, n);
  result.summary["device"] = setup.device_name();
  const double staleness = setup.mean_staleness();
  result.summary["mean_staleness"] = std::isnan(staleness) ? nlohmann::json() : nlohmann::json(staleness);
  if (setup.parallel_batches() > 0) {
    result.summary["parallel_compute"] = {{"passes", setup.parallel_passes()},
                                          {"batches", setup.parallel_batches()}};
  }
  if (replay) result.summary["replayed_from"] = trace_.replay_source;
  result.metrics_jsonl = recorder.jsonl();
  result.final_parameters = std::move(final_parameters);
  result.trace = recorded;
  if (dir) {
    write_file_atomically(dir->staging() + "/scenario.json", sc.resolved.dump(2) + "\n");
    if (recorded) {
      std::filesystem::create_directories(dir->staging() + "/trace");
      write_step_trace(*recorded, dir->staging() + "/" + kStepTraceFile);
    }
    write_file_atomically(dir->staging() + "/metrics.jsonl", result.metrics_jsonl);
    write_file_atomically(dir->staging() + "/summary.json", result.summary.dump(2) + "\n");
    dir->commit();
    result.directory = dir->final_path();
  }
  if (progress) recorder.print_final(*progress, result.summary);
  // Warnings are not progress: they are printed even when the run is quiet.
  for (const auto& warning : result.summary.value("warnings", nlohmann::json::array())) {
    std::cerr << "[" << sc.name << "] warning: " << warning.get<std::string>() << "\n";
  }
  return result;
}

}  // namespace gradwire
