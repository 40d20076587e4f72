#include "netmodels/RadioEnergySummary.h"

namespace gradwire {

void add_radio_energy(nlohmann::json& summary, const std::map<std::size_t, double>& radio_joules,
                      std::size_t workers) {
  if (radio_joules.empty()) return;
  nlohmann::json& energy = summary["energy"];
  if (!energy.is_object()) energy = nlohmann::json::object();
  nlohmann::json& entries = energy["workers"];
  if (!entries.is_array()) {
    entries = nlohmann::json::array();
    for (std::size_t w = 0; w < workers; ++w) entries.push_back({{"worker", w}});
  }
  double total = 0;
  for (const auto& [host, joules] : radio_joules) total += joules;
  for (nlohmann::json& entry : entries) {
    const auto w = entry.at("worker").get<std::size_t>();
    const auto it = radio_joules.find(w);
    entry["radio_j"] = it == radio_joules.end() ? nlohmann::json() : nlohmann::json(it->second);
  }
  const auto server = radio_joules.find(workers);
  if (server != radio_joules.end()) energy["server"]["radio_j"] = server->second;
  energy["radio_total_j"] = total;
  // With the workers' compute energy already there, the workers' totals take their radios in
  // (the server's radio is reported, but like its compute not counted in the workers' total).
  if (!energy.contains("compute_j")) return;
  double workers_radio = 0;
  nlohmann::json* profiles = energy.contains("profiles") ? &energy["profiles"] : nullptr;
  for (nlohmann::json& entry : entries) {
    if (entry["radio_j"].is_null() || !entry.contains("compute_j")) continue;
    const double radio = entry["radio_j"].get<double>();
    workers_radio += radio;
    entry["total_j"] = entry["compute_j"].get<double>() + radio;
    if (profiles && entry.contains("profile")) {
      nlohmann::json& p = (*profiles)[entry["profile"].get<std::string>()];
      p["radio_j"] = (p["radio_j"].is_null() ? 0.0 : p["radio_j"].get<double>()) + radio;
      p["total_j"] = p["total_j"].get<double>() + radio;
    }
  }
  energy["radio_j"] = workers_radio;
  energy["total_j"] = energy["compute_j"].get<double>() + workers_radio;
  if (summary.contains("energy_j")) summary["energy_j"] = energy["total_j"];
}

}  // namespace gradwire
