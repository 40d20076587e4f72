// Collects per-worker step records and evaluations into metrics.jsonl lines, prints progress,
// and computes summary.json. Lines (one JSON object each):
//   {"type":"step","step":k,"sim_time_s":..,"loss":..,"compute_s":..,"comm_s":..,
//    "comm_s_max":..,"bytes_sent":[per worker],"payload_bytes":[per worker],"density":..,
//    "lr":..,"wall_time_s":..}
// bytes_sent: application bytes the worker's host sent (including forwarded ring chunks);
// payload_bytes: size of the gradient its codec produced; density: mean fraction of gradient
// elements the codecs carried.
//   {"type":"eval","step":k,"sim_time_s":..,"accuracy":..,"test_loss":..,
//    "consensus_distance":..,"wall_time_s":..}   plus "top5_accuracy" (10 classes or more)
//    and "perplexity" (language models); accuracy is then next-token accuracy.
//   {"type":"update","rank":r,"version":v,"staleness":s,"sim_time_s":..}   (async PS only)
//   {"type":"event","event":"leave"|"detected"|"rejoin"|"resume","rank":r,"step":k,
//    "sim_time_s":..}                                                       (faults only)
// With faults, a step line is written when every worker taking part in that step reported
// (a departed worker is not waited for); means are over the reporting workers, and the
// per-worker arrays hold 0 for workers that did not take part.
// With `participation`, a step is a round: step lines also carry "sampled" (the ranks sampled
// for the round) and "participants" (the ranks whose updates the round applied); loss,
// compute_s, comm_s and density are means over the sampled workers that computed ("loss" is
// null in a round where none did), and summary.json gets a "participation" object. With
// topology local a round is H steps: every step line carries "round" and "sampled" (its
// round's clients), and only the round's last step line carries "participants" (what the
// round applied); the summary's counts are per round.
// With network.transport "udp", step lines also carry "lost_bytes" (gradient bytes that never
// arrived and were read as zeros, over every host) and "loss_fraction" (of the loss-tolerant
// bytes delivered in that step), and summary.json a "udp" object with the run's totals.
// When every worker runs on a named device (compute.profile, or measured_on), step lines also
// carry "worker_busy_s" (per worker: the device's compute, codec and optimizer seconds in the
// step) and step and eval lines "energy_j" (every worker's joules from time 0 to the line's
// sim_time_s: busy seconds at the device's busy watts, the rest at its idle watts), and
// summary.json an "energy" object (docs/outputs.md).
// With compute.mode "measured" on the CPU, summary.json carries "measured_compute" (the clock
// charged and the passes' wall and CPU totals) and, when those disagree by more than 20 %,
// "warnings" (a list of sentences; absent when there is nothing to warn about).
// `step` counts completed steps (1-based). Fields ending in "wall_time_s" are wall-clock and
// differ between runs; everything else is deterministic for fixed/profile compute.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codecs/CodecRegistry.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/Faults.h"
#include "nodes/schemes/Worker.h"
#include "sim/engine/Evaluation.h"
#include "sim/engine/MeasuredLoadCheck.h"

namespace gradwire {

class LayerCompression;
class LossLedger;
class PhaseLedger;
struct DeviceProfile;
class Participation;
struct Scenario;

class MetricsRecorder {
 public:
  MetricsRecorder(const Scenario& scenario, std::int64_t parameters, std::ostream* progress,
                  std::chrono::steady_clock::time_point wall_start);

  /// Adds one worker's record; returns true when all `workers` have reported this step (the
  /// step line has then been written).
  bool record(const StepRecord& record, int workers);

  /// `consensus` is the spread between workers' models (0 when they agree by construction).
  void evaluation(std::int64_t step, double sim_time_s, const EvalResult& result,
                  double consensus);

  /// One applied asynchronous update.
  void staleness(const StalenessEvent& event);

  /// Where the UDP transport records lost gradient bytes (null: TCP, nothing is lost).
  void set_loss_ledger(const LossLedger* ledger) { ledger_ = ledger; }
  /// Where a collective that times its phases records each step's push and pull (null: none).
  void set_phase_ledger(const PhaseLedger* phases) { phases_ = phases; }
  /// The model's parameter tensors, in order: step records' per-tensor sends (codecs that
  /// select per tensor) then give step lines "density_by_layer_type" and summary.json
  /// "layer_compression" (sim/engine/LayerCompression.h). Unset: neither is written.
  void set_layers(const std::vector<LayerSlice>& layers);
  /// Who took part in each round (null: every worker, every step).
  void set_participation(const Participation* participation) { participation_ = participation; }

  /// Measured compute on the CPU: add up each pass's wall and CPU time, and give summary.json
  /// a "measured_compute" object and, when they disagree, a warning (MeasuredLoadCheck.h).
  void check_measured_load(MeasuredClock charged, int threads) { load_check_.emplace(charged, threads); }

  /// A fault event (an "event" line; counted in summary.json's fault_events).
  void event(const FaultEvent& event);
  /// Worker `rank` left: later steps do not wait for it. Returns the steps (0-based) whose
  /// lines this completed, in order.
  std::vector<std::int64_t> leave(int rank, int workers);
  /// Worker `rank` takes part again from `step`.
  void resume(int rank, std::int64_t step);

  nlohmann::json summary(double sim_time_s, std::uint64_t bytes_on_wire, double wall_time_s,
                         double ns3_wall_time_s) const;

  const std::string& jsonl() const { return lines_; }
  /// The workers' radio joules from time 0 to now (the network's radio energy models), added
  /// to the energy of step and eval lines and to energy to target. Unset (null) before the
  /// network is destroyed.
  void set_radio_meter(std::function<double()> meter) { radio_meter_ = std::move(meter); }
  void print_final(std::ostream& out, const nlohmann::json& summary) const;

 private:
  double wall_now() const;
  void progress_line(std::int64_t step, double sim_time, bool force);
  bool complete(std::int64_t step, int workers);
  void write_step(std::int64_t step, int workers);
  /// Joules of every worker from time 0 to `sim_time_s` with the busy seconds so far, and the
  /// workers' radios' joules so far where a radio meter is set.
  double energy_at(double sim_time_s) const;
  nlohmann::json energy_json(double sim_time_s) const;

  const Scenario& scenario_;
  std::int64_t parameters_;
  std::ostream* progress_;
  std::chrono::steady_clock::time_point wall_start_;
  double last_progress_wall_ = -1e9;

  std::map<std::int64_t, std::vector<StepRecord>> pending_;
  std::string lines_;
  double last_loss_ = 0;
  double last_accuracy_ = -1;
  double last_top5_accuracy_ = -1;
  double last_perplexity_ = -1;
  double last_test_loss_ = 0;
  std::optional<double> time_to_target_;
  std::optional<std::int64_t> steps_to_target_;
  double sum_compute_ = 0, sum_comm_ = 0, sum_codec_ = 0;
  std::uint64_t payload_bytes_ = 0;
  std::int64_t steps_recorded_ = 0;
  std::vector<std::int64_t> member_from_;  // per rank: first step it reports (faults)
  std::map<std::string, int> event_counts_;
  const LossLedger* ledger_ = nullptr;
  std::shared_ptr<LayerCompression> layers_;  ///< shared_ptr: the type stays incomplete here
  const PhaseLedger* phases_ = nullptr;
  double sum_push_ = 0, sum_pull_ = 0;
  std::int64_t phased_steps_ = 0;
  std::optional<MeasuredLoadCheck> load_check_;
  // Energy: each worker's device (empty when some worker has none), busy and compute seconds
  // and steps it reported.
  std::vector<const DeviceProfile*> devices_;
  std::vector<double> busy_s_, worker_compute_s_;
  std::vector<std::int64_t> worker_steps_;
  std::optional<double> energy_to_target_;
  std::function<double()> radio_meter_;
  const Participation* participation_ = nullptr;
  // Participation totals: applied updates, sampled clients, rounds that applied none.
  std::int64_t applied_updates_ = 0;
  std::int64_t sampled_clients_ = 0;
  std::int64_t empty_rounds_ = 0;
  std::int64_t rounds_ = 0;  // rounds closed by the steps recorded
  std::int64_t sent_updates_ = 0;  // updates the clients sent (payload > 0)
};

}  // namespace gradwire
