// What a served run records: the workers' step records, evaluations and asynchronous updates
// (metrics.jsonl, through the engine's MetricsRecorder, as an in-process run writes them), and
// the service's own counts (commands, deliveries, error replies, time spent waiting for
// clients) that summary.json reports under "service".
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/service/HostLayout.h"

namespace gradwire {

class MetricsRecorder;
class SimulatedWorld;
struct ParsedEvaluation;
struct Scenario;
struct StalenessEvent;
struct StepRecord;

class ServiceMetrics {
 public:
  /// `scenario` must outlive the metrics.
  ServiceMetrics(const Scenario& scenario, const HostLayout& layout);
  ~ServiceMetrics();
  ServiceMetrics(const ServiceMetrics&) = delete;
  ServiceMetrics& operator=(const ServiceMetrics&) = delete;

  /// Starts recording once every host has registered (the workers said how large the model is).
  void start(std::int64_t parameters, std::ostream* progress,
             std::chrono::steady_clock::time_point wall_start);
  bool started() const { return recorder_ != nullptr; }

  /// The host that evaluates: the one holding the model the scheme names, i.e. the server for
  /// the asynchronous parameter server and worker 0 otherwise (its replica is the common model).
  std::uint32_t evaluation_host() const;

  /// Adds one worker's step record. When that completes a step that is to be evaluated
  /// (`training.eval_every`, the last step), returns the number of completed steps.
  std::optional<std::int64_t> record_step(const StepRecord& record);
  void record_evaluation(std::int64_t step, double sim_time_s, const ParsedEvaluation& evaluation);
  void record_staleness(const StalenessEvent& update);

  void count_command() { ++commands_; }
  void count_delivery() { ++deliveries_; }
  void count_dropped() { ++dropped_; }
  void count_error_reply() { ++error_replies_; }
  /// Wall time spent waiting for clients inside the event loop (not ns-3's own time).
  void add_client_wait(double seconds) { client_wait_s_ += seconds; }

  /// summary.json of the run: the recorder's summary plus the network, `device`, staleness and
  /// the service's counts. `run_wall_s` is the wall time of the event loop, client waits
  /// included. Only after start().
  nlohmann::json summary(const SimulatedWorld& world, double sim_time_s, double run_wall_s,
                         const std::string& device) const;
  const std::string& jsonl() const;
  void print_final(std::ostream& out, const nlohmann::json& summary) const;

 private:
  const Scenario& scenario_;
  HostLayout layout_;
  std::unique_ptr<MetricsRecorder> recorder_;
  std::chrono::steady_clock::time_point wall_start_;
  double staleness_sum_ = 0;
  std::uint64_t staleness_count_ = 0;
  std::uint64_t commands_ = 0, deliveries_ = 0, dropped_ = 0, error_replies_ = 0;
  double client_wait_s_ = 0;
};

}  // namespace gradwire
