#include "sim/engine/MetricsRecorder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "nodes/schemes/Participation.h"
#include "nodes/schemes/PhaseLedger.h"
#include "nodes/transport/LossLedger.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/LayerCompression.h"
#include "sim/engine/Scenario.h"
#include "sim/engine/TrainingDiverged.h"

namespace gradwire {

MetricsRecorder::MetricsRecorder(const Scenario& scenario, std::int64_t parameters,
                                 std::ostream* progress,
                                 std::chrono::steady_clock::time_point wall_start)
    : scenario_(scenario), parameters_(parameters), progress_(progress), wall_start_(wall_start) {
  const int n = scenario.training.workers;
  for (int r = 0; r < n; ++r) devices_.push_back(worker_device(scenario.compute, r));
  if (std::find(devices_.begin(), devices_.end(), nullptr) != devices_.end()) devices_.clear();
  busy_s_.assign(devices_.size(), 0.0);
  worker_compute_s_.assign(devices_.size(), 0.0);
  worker_steps_.assign(devices_.size(), 0);
}

double MetricsRecorder::energy_at(double sim_time_s) const {
  double joules = 0;
  for (std::size_t r = 0; r < devices_.size(); ++r) {
    // A device's two streams can overlap codec work with compute: busy seconds count the work,
    // so they can exceed the time passed, and the idle rest is then none.
    joules += busy_s_[r] * devices_[r]->busy_watts +
              std::max(0.0, sim_time_s - busy_s_[r]) * devices_[r]->idle_watts;
  }
  if (radio_meter_) joules += radio_meter_();
  return joules;
}

double MetricsRecorder::wall_now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
}

bool MetricsRecorder::complete(std::int64_t step, int workers) {
  const auto it = pending_.find(step);
  if (it == pending_.end() || it->second.empty()) return false;
  if (member_from_.empty()) return static_cast<int>(it->second.size()) >= workers;
  for (int r = 0; r < workers; ++r) {
    if (member_from_[r] > step) continue;  // not taking part in this step
    if (std::none_of(it->second.begin(), it->second.end(),
                     [r](const StepRecord& x) { return x.rank == r; })) {
      return false;
    }
  }
  return true;
}

bool MetricsRecorder::record(const StepRecord& record, int workers) {
  if (load_check_ && record.participated) load_check_->add(record.compute_wall_s, record.compute_cpu_s);
  pending_[record.step].push_back(record);
  if (!complete(record.step, workers)) return false;
  write_step(record.step, workers);
  return true;
}

std::vector<std::int64_t> MetricsRecorder::leave(int rank, int workers) {
  if (member_from_.empty()) member_from_.assign(static_cast<std::size_t>(workers), 0);
  member_from_[rank] = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> done;
  while (!pending_.empty() && complete(pending_.begin()->first, workers)) {
    const std::int64_t step = pending_.begin()->first;
    write_step(step, workers);
    done.push_back(step);
  }
  return done;
}

void MetricsRecorder::resume(int rank, std::int64_t step) { member_from_.at(rank) = step; }

void MetricsRecorder::set_layers(const std::vector<LayerSlice>& layers) {
  layers_ = std::make_shared<LayerCompression>(layers);
}

void MetricsRecorder::event(const FaultEvent& e) {
  const nlohmann::json line = {{"type", "event"}, {"event", e.kind},
                               {"rank", e.rank},  {"step", e.step},
                               {"sim_time_s", e.sim_time_s}};
  lines_ += line.dump() + "\n";
  ++event_counts_[e.kind];
}

void MetricsRecorder::write_step(std::int64_t step, int workers) {
  auto& records = pending_[step];
  const StepRecord record = records.front();
  std::sort(records.begin(), records.end(),
            [](const StepRecord& a, const StepRecord& b) { return a.rank < b.rank; });
  double loss = 0, compute = 0, comm = 0, codec = 0, comm_max = 0, end = 0;
  nlohmann::json bytes = nlohmann::json::array();
  nlohmann::json payload = nlohmann::json::array();
  double density = 0;
  nlohmann::json busy = nlohmann::json::array();
  for (std::size_t r = 0; r < devices_.size(); ++r) busy.push_back(0.0);
  const bool gaps = static_cast<int>(records.size()) != workers;
  if (gaps) {
    for (int r = 0; r < workers; ++r) {
      bytes.push_back(0);
      payload.push_back(0);
    }
  }
  // With participation, the means are over the workers that computed in the round.
  const auto counted = [this](const StepRecord& r) {
    return participation_ == nullptr || r.participated;
  };
  int computed = 0;
  for (const auto& r : records) {
    if (gaps) {
      payload[static_cast<std::size_t>(r.rank)] = r.payload_bytes;
      bytes[static_cast<std::size_t>(r.rank)] = r.bytes_sent;
    } else {
      payload.push_back(r.payload_bytes);
    }
    payload_bytes_ += r.payload_bytes;
    end = std::max(end, r.end_s);
    if (!gaps) bytes.push_back(r.bytes_sent);
    if (!devices_.empty()) {
      // What the device did, whether or not the round applied its update.
      const auto rank = static_cast<std::size_t>(r.rank);
      const double work = r.compute_s + r.codec_s + r.optimizer_s;
      busy[rank] = work;
      busy_s_[rank] += work;
      worker_compute_s_[rank] += r.compute_s;
      ++worker_steps_[rank];
    }
    if (!counted(r)) continue;
    ++computed;
    if (layers_) layers_->add(r.tensors);
    if (r.payload_bytes > 0) ++sent_updates_;
    density += r.density;
    loss += r.loss;
    compute += r.compute_s;
    comm += r.comm_s;
    codec += r.codec_s;
    comm_max = std::max(comm_max, r.comm_s);
  }
  const double w = static_cast<double>(std::max(computed, 1));
  if (!std::isfinite(loss)) {
    std::ostringstream m;
    m << "training diverged at step " << record.step + 1 << ": the training loss is not finite (";
    for (const auto& r : records) m << (&r == &records.front() ? "worker " : ", ") << r.rank << ": " << r.loss;
    m << "); ";
    if (steps_recorded_ > 0) {
      m << "the last finite mean was " << last_loss_ << " at step " << record.step;
    } else {
      m << "no finite loss was recorded";
    }
    m << ", at lr " << scenario_.training.lr.at(record.step)
      << "; a lower training.optimizer.lr or a warm-up (training.optimizer.warmup_steps) may keep "
         "it finite";
    throw TrainingDiverged(m.str());
  }
  nlohmann::json line = {{"type", "step"},
                         {"step", record.step + 1},
                         {"sim_time_s", end},
                         {"loss", computed > 0 ? nlohmann::json(loss / w) : nlohmann::json()},
                         {"compute_s", compute / w},
                         {"comm_s", comm / w},
                         {"comm_s_max", comm_max},
                         {"bytes_sent", bytes},
                         {"payload_bytes", payload},
                         {"density", density / w},
                         {"lr", scenario_.training.lr.at(record.step)},
                         {"wall_time_s", wall_now()}};
  // Only when codec work is timed: a "free" run's lines stay what they always were.
  if (scenario_.compute.codec_time != "free") line["codec_s"] = codec / w;
  if (layers_) {
    nlohmann::json by_type = layers_->end_step();
    if (!by_type.is_null()) line["density_by_layer_type"] = std::move(by_type);
  }
  if (!devices_.empty()) {
    line["worker_busy_s"] = busy;
    line["energy_j"] = energy_at(end);
  }
  if (participation_ != nullptr) {
    // A round spans round_steps() steps (1 but for local-update training); its outcome is
    // known from its last step on.
    const std::int64_t round = participation_->round_of_step(record.step);
    const bool multi_step = participation_->round_steps() > 1;
    if (multi_step) line["round"] = round;
    line["sampled"] = participation_->clients(round);
    if (participation_->ends_round(record.step)) {
      const std::vector<int>* applied = participation_->applied(round);
      if (applied == nullptr) {
        throw std::logic_error("metrics: round " + std::to_string(round) +
                               " was reported before it closed");
      }
      line["participants"] = *applied;
      applied_updates_ += static_cast<std::int64_t>(applied->size());
      sampled_clients_ += static_cast<std::int64_t>(participation_->clients(round).size());
      if (applied->empty()) ++empty_rounds_;
      ++rounds_;
    }
  }
  if (const PhaseLedger::Phases* p = phases_ ? phases_->find(record.step) : nullptr) {
    line["push_s"] = p->push_s;
    line["pull_s"] = p->pull_s;
    sum_push_ += p->push_s;
    sum_pull_ += p->pull_s;
    ++phased_steps_;
  }
  if (ledger_ != nullptr) {
    const LossLedger::Entry lost = ledger_->at(static_cast<std::uint64_t>(record.step));
    line["lost_bytes"] = lost.lost_bytes;
    line["loss_fraction"] = lost.loss_fraction();
  }
  lines_ += line.dump() + "\n";
  if (computed > 0) last_loss_ = loss / w;
  sum_compute_ += compute / w;
  sum_comm_ += comm / w;
  sum_codec_ += codec / w;
  ++steps_recorded_;
  pending_.erase(record.step);
  progress_line(record.step + 1, end, false);
}

void MetricsRecorder::staleness(const StalenessEvent& e) {
  const nlohmann::json line = {{"type", "update"},     {"rank", e.rank},
                               {"version", e.version}, {"staleness", e.staleness},
                               {"sim_time_s", e.sim_time_s}};
  lines_ += line.dump() + "\n";
}

void MetricsRecorder::evaluation(std::int64_t step, double sim_time_s, const EvalResult& result,
                                 double consensus) {
  nlohmann::json line = {{"type", "eval"},
                         {"step", step},
                         {"sim_time_s", sim_time_s},
                         {"accuracy", result.accuracy},
                         {"test_loss", result.loss},
                         {"samples", result.samples},
                         {"consensus_distance", consensus},
                         {"wall_time_s", wall_now()}};
  if (result.top5_accuracy >= 0) line["top5_accuracy"] = result.top5_accuracy;
  if (result.perplexity >= 0) line["perplexity"] = result.perplexity;
  if (!devices_.empty()) line["energy_j"] = energy_at(sim_time_s);
  lines_ += line.dump() + "\n";
  last_accuracy_ = result.accuracy;
  last_top5_accuracy_ = result.top5_accuracy;
  last_perplexity_ = result.perplexity;
  last_test_loss_ = result.loss;
  const auto& t = scenario_.training;
  const bool reached = (t.target_accuracy > 0 && result.accuracy >= t.target_accuracy) ||
                       (t.target_perplexity > 0 && result.perplexity >= 0 &&
                        result.perplexity <= t.target_perplexity);
  if (reached && !time_to_target_) {
    time_to_target_ = sim_time_s;
    steps_to_target_ = step;
    if (!devices_.empty()) energy_to_target_ = energy_at(sim_time_s);
  }
  progress_line(step, sim_time_s, true);
}

void MetricsRecorder::progress_line(std::int64_t step, double sim_time, bool force) {
  if (!progress_) return;
  const double now = wall_now();
  if (!force && now - last_progress_wall_ < 2.0) return;
  last_progress_wall_ = now;
  const long long total = static_cast<long long>(scenario_.training.steps);
  std::string line;
  auto append = [&line](const char* format, auto... values) {
    char piece[320];
    std::snprintf(piece, sizeof piece, format, values...);
    line += piece;
  };
  append("[%s] step %lld/%lld  sim %.4f s  loss %.4f", scenario_.name.c_str(),
         static_cast<long long>(step), total, sim_time, last_loss_);
  if (last_perplexity_ >= 0) {
    append("  ppl %.2f", last_perplexity_);
  } else if (last_accuracy_ >= 0) {
    append("  acc %.4f", last_accuracy_);
  }
  append("  wall %.1f s", now);
  // The time left at the pace so far, so a long run says when it will be done.
  if (step > 0 && step < total) {
    append("  ETA %.0f s", now / static_cast<double>(step) * static_cast<double>(total - step));
  }
  *progress_ << line << "\n" << std::flush;
}

nlohmann::json MetricsRecorder::summary(double sim_time_s, std::uint64_t bytes_on_wire,
                                        double wall_time_s, double ns3_wall_time_s) const {
  const std::uint64_t payload_bytes = payload_bytes_;
  const auto& t = scenario_.training;
  // Dense equivalent: every worker's gradient as fp32, every step; with participation, every
  // update a client sent (the others sent nothing, compressed or not).
  const double updates = participation_ != nullptr
                             ? static_cast<double>(sent_updates_)
                             : static_cast<double>(t.workers) * static_cast<double>(steps_recorded_);
  const double dense = 4.0 * static_cast<double>(parameters_) * updates;
  const double steps = std::max<double>(1.0, static_cast<double>(steps_recorded_));
  nlohmann::json s = {
      {"name", scenario_.name},
      {"steps", steps_recorded_},
      {"workers", t.workers},
      {"parameters", parameters_},
      {"codec", scenario_.codec.at("kind")},
      {"topology", scenario_.topology.name()},
      {"network", scenario_.network.family()},
      {"final_accuracy", last_accuracy_ >= 0 ? nlohmann::json(last_accuracy_) : nlohmann::json()},
      {"final_top5_accuracy",
       last_top5_accuracy_ >= 0 ? nlohmann::json(last_top5_accuracy_) : nlohmann::json()},
      {"final_perplexity",
       last_perplexity_ >= 0 ? nlohmann::json(last_perplexity_) : nlohmann::json()},
      {"final_test_loss", last_test_loss_},
      {"final_train_loss", last_loss_},
      {"target_accuracy", t.target_accuracy > 0 ? nlohmann::json(t.target_accuracy) : nlohmann::json()},
      {"target_perplexity",
       t.target_perplexity > 0 ? nlohmann::json(t.target_perplexity) : nlohmann::json()},
      {"time_to_target_s", time_to_target_ ? nlohmann::json(*time_to_target_) : nlohmann::json()},
      {"steps_to_target", steps_to_target_ ? nlohmann::json(*steps_to_target_) : nlohmann::json()},
      {"sim_time_s", sim_time_s},
      {"mean_step_compute_s", sum_compute_ / steps},
      {"mean_step_comm_s", sum_comm_ / steps},
      {"mean_step_codec_s", sum_codec_ / steps},
      {"bytes_on_wire", bytes_on_wire},
      {"payload_bytes", payload_bytes},
      {"dense_bytes", dense},
      {"compression_ratio", payload_bytes ? dense / static_cast<double>(payload_bytes) : 0.0},
      {"wall_time_s", wall_time_s},
      {"ns3_wall_time_s", std::max(0.0, ns3_wall_time_s)},
  };
  if (!devices_.empty()) {
    s["energy"] = energy_json(sim_time_s);
    // Flat copies for results.csv and the reports' tables.
    s["energy_j"] = s["energy"]["total_j"];
    s["energy_to_target_j"] = s["energy"]["energy_to_target_j"];
  }
  if (!scenario_.faults.empty()) {
    nlohmann::json counts = {{"leave", 0}, {"detected", 0}, {"rejoin", 0}, {"resume", 0}};
    for (const auto& [kind, count] : event_counts_) counts[kind] = count;
    s["fault_events"] = counts;
  }
  if (participation_ != nullptr) {
    const double rounds = static_cast<double>(std::max<std::int64_t>(1, rounds_));
    s["participation"] = {
        {"clients_per_round", participation_->options().clients_per_round},
        {"rounds", rounds_},
        {"mean_sampled", static_cast<double>(sampled_clients_) / rounds},
        {"mean_participants", static_cast<double>(applied_updates_) / rounds},
        {"dropped_updates", sampled_clients_ - applied_updates_},
        {"empty_rounds", empty_rounds_}};
  }
  if (phased_steps_ > 0) {
    s["mean_step_push_s"] = sum_push_ / static_cast<double>(phased_steps_);
    s["mean_step_pull_s"] = sum_pull_ / static_cast<double>(phased_steps_);
  }
  if (ledger_ != nullptr) {
    const LossLedger::Entry& t = ledger_->total();
    s["udp"] = {{"lost_bytes", t.lost_bytes},
                {"loss_tolerant_bytes", t.lossy_bytes},
                {"loss_fraction", t.loss_fraction()},
                {"messages_with_loss", t.damaged},
                {"loss_tolerant_messages", t.messages}};
    // Flat copy for results.csv and reports (one column beside the times it bought).
    s["lost_gradient_fraction"] = t.loss_fraction();
  }
  if (load_check_) {
    s["measured_compute"] = load_check_->to_json();
    if (load_check_->contended()) s["warnings"].push_back(load_check_->warning());
  }
  if (layers_) {
    nlohmann::json layers = layers_->summary();
    if (!layers.is_null()) s["layer_compression"] = std::move(layers);
  }
  return s;
}

nlohmann::json MetricsRecorder::energy_json(double sim_time_s) const {
  // radio_j stays null until the network reports the radios' energy; totals count what is known.
  nlohmann::json workers = nlohmann::json::array();
  nlohmann::json profiles = nlohmann::json::object();
  double compute_j = 0;
  for (std::size_t r = 0; r < devices_.size(); ++r) {
    const DeviceProfile& d = *devices_[r];
    const double idle = std::max(0.0, sim_time_s - busy_s_[r]);
    const double joules = busy_s_[r] * d.busy_watts + idle * d.idle_watts;
    compute_j += joules;
    workers.push_back({{"worker", r},
                       {"profile", d.name},
                       {"busy_s", busy_s_[r]},
                       {"idle_s", idle},
                       {"busy_w", d.busy_watts},
                       {"idle_w", d.idle_watts},
                       {"compute_j", joules},
                       {"radio_j", nullptr},
                       {"total_j", joules}});
    nlohmann::json& p = profiles[d.name];
    if (p.is_null()) {
      p = {{"workers", 0}, {"busy_s", 0.0}, {"compute_s", 0.0}, {"steps", 0},
           {"compute_j", 0.0}, {"radio_j", nullptr}, {"total_j", 0.0}};
    }
    p["workers"] = p["workers"].get<int>() + 1;
    p["busy_s"] = p["busy_s"].get<double>() + busy_s_[r];
    p["compute_s"] = p["compute_s"].get<double>() + worker_compute_s_[r];
    p["steps"] = p["steps"].get<std::int64_t>() + worker_steps_[r];
    p["compute_j"] = p["compute_j"].get<double>() + joules;
    p["total_j"] = p["total_j"].get<double>() + joules;
  }
  for (auto& [name, p] : profiles.items()) {
    const auto steps = p["steps"].get<std::int64_t>();
    p["mean_step_compute_s"] = steps > 0 ? p["compute_s"].get<double>() / static_cast<double>(steps) : 0.0;
  }
  return {{"over_s", sim_time_s},
          {"workers", workers},
          {"profiles", profiles},
          {"compute_j", compute_j},
          {"radio_j", nullptr},
          {"total_j", compute_j},
          {"energy_to_target_j",
           energy_to_target_ ? nlohmann::json(*energy_to_target_) : nlohmann::json()}};
}

void MetricsRecorder::print_final(std::ostream& out, const nlohmann::json& s) const {
  char buf[512];
  const std::string acc =
      !s["final_perplexity"].is_null()
          ? std::to_string(s["final_accuracy"].get<double>()) + ", perplexity " +
                std::to_string(s["final_perplexity"].get<double>())
      : s["final_accuracy"].is_null() ? "n/a"
                                      : std::to_string(s["final_accuracy"].get<double>());
  const std::string ttt = s["time_to_target_s"].is_null()
                              ? "not reached"
                              : std::to_string(s["time_to_target_s"].get<double>()) + " s";
  std::snprintf(buf, sizeof buf,
                "[%s] done: accuracy %s, simulated %.4f s (compute %.5f s + comm %.5f s per "
                "step), time to target %s, compression %.1fx, wall %.1f s (ns-3 %.1f s)\n",
                scenario_.name.c_str(), acc.c_str(), s["sim_time_s"].get<double>(),
                s["mean_step_compute_s"].get<double>(), s["mean_step_comm_s"].get<double>(),
                ttt.c_str(), s["compression_ratio"].get<double>(), s["wall_time_s"].get<double>(),
                s["ns3_wall_time_s"].get<double>());
  out << buf;
  if (!s.contains("energy")) return;
  const nlohmann::json& e = s["energy"];
  std::string line = "[" + scenario_.name + "] energy: ";
  char piece[160];
  if (!e.contains("total_j")) {
    // Radios only: the workers have no named devices, so their compute has no watts.
    if (!e.contains("radio_total_j")) return;
    std::snprintf(piece, sizeof piece, "%.4g J in the radios over the run (no compute: the "
                  "workers name no device profile)", e["radio_total_j"].get<double>());
    out << line << piece << "\n";
    return;
  }
  std::snprintf(piece, sizeof piece, "%.4g J over the run", e["total_j"].get<double>());
  line += piece;
  if (!e["energy_to_target_j"].is_null()) {
    std::snprintf(piece, sizeof piece, ", %.4g J to target", e["energy_to_target_j"].get<double>());
    line += piece;
  }
  std::string per_device;
  for (const auto& [name, p] : e["profiles"].items()) {
    std::snprintf(piece, sizeof piece, "%s%d x %s %.4g J (%.4g ms compute per step)",
                  per_device.empty() ? "" : ", ", p["workers"].get<int>(), name.c_str(),
                  p["total_j"].get<double>(), 1e3 * p["mean_step_compute_s"].get<double>());
    per_device += piece;
  }
  out << line << "; " << per_device << "\n";
}

}  // namespace gradwire
