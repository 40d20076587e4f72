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
}

}  // namespace gradwire
