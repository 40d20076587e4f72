#include "sim/service/ServiceMetrics.h"

#include <nlohmann/json.hpp>

#include "netmodels/Network.h"
#include "netmodels/RadioEnergySummary.h"
#include "nodes/transport/Messenger.h"
#include "sim/engine/MetricsRecorder.h"
#include "sim/engine/Scenario.h"
#include "sim/engine/SimulatedWorld.h"
#include "sim/service/ReportParser.h"

namespace gradwire {

ServiceMetrics::ServiceMetrics(const Scenario& scenario, const HostLayout& layout)
    : scenario_(scenario), layout_(layout) {}

ServiceMetrics::~ServiceMetrics() = default;

void ServiceMetrics::start(std::int64_t parameters, std::ostream* progress,
                           std::chrono::steady_clock::time_point wall_start) {
  wall_start_ = wall_start;
  recorder_ = std::make_unique<MetricsRecorder>(scenario_, parameters, progress, wall_start);
}

std::uint32_t ServiceMetrics::evaluation_host() const {
  return layout_.with_server && scenario_.topology.async()
             ? static_cast<std::uint32_t>(layout_.workers)
             : 0u;
}

std::optional<std::int64_t> ServiceMetrics::record_step(const StepRecord& record) {
  if (!recorder_->record(record, layout_.workers)) return std::nullopt;
  const std::int64_t done = record.step + 1;
  if (done % scenario_.training.eval_every != 0 && done != scenario_.training.steps) {
    return std::nullopt;
  }
  return done;
}

void ServiceMetrics::record_evaluation(std::int64_t step, double sim_time_s,
                                       const ParsedEvaluation& evaluation) {
  EvalResult result;
  result.accuracy = evaluation.accuracy;
  result.top5_accuracy = evaluation.top5_accuracy;
  result.loss = evaluation.loss;
  result.perplexity = evaluation.perplexity;
  result.samples = evaluation.samples;
  recorder_->evaluation(step, sim_time_s, result, evaluation.consensus);
}

void ServiceMetrics::record_staleness(const StalenessEvent& update) {
  staleness_sum_ += static_cast<double>(update.staleness);
  ++staleness_count_;
  recorder_->staleness(update);
}

nlohmann::json ServiceMetrics::summary(const SimulatedWorld& world, double sim_time_s,
                                       double run_wall_s, const std::string& device) const {
  std::uint64_t bytes_on_wire = 0;
  for (const auto& m : world.messengers()) bytes_on_wire += m->bytes_sent();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  nlohmann::json summary =
      recorder_->summary(sim_time_s, bytes_on_wire, wall_s, run_wall_s - client_wait_s_);
  summary["network_description"] = world.network().describe();
  const auto network_events = world.network().event_counts();
  if (!network_events.empty()) summary["network_events"] = network_events;
  add_radio_energy(summary, world.network().radio_joules(),
                   static_cast<std::size_t>(layout_.workers));
  summary["device"] = device.empty() ? nlohmann::json() : nlohmann::json(device);
  summary["mean_staleness"] =
      layout_.with_server && scenario_.topology.async()
          ? nlohmann::json(staleness_count_ ? staleness_sum_ / static_cast<double>(staleness_count_) : 0.0)
          : nlohmann::json();
  summary["service"] = {{"clients", layout_.hosts},
                        {"commands", commands_},
                        {"deliveries", deliveries_},
                        {"dropped_deliveries", dropped_},
                        {"error_replies", error_replies_},
                        {"client_wait_s", client_wait_s_}};
  return summary;
}

const std::string& ServiceMetrics::jsonl() const { return recorder_->jsonl(); }

void ServiceMetrics::print_final(std::ostream& out, const nlohmann::json& summary) const {
  recorder_->print_final(out, summary);
}

}  // namespace gradwire
