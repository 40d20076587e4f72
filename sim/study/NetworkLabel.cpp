#include "sim/study/NetworkLabel.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

#include "common/Units.h"

namespace gradwire {

namespace {

using nlohmann::json;

// A number as %g writes it: "15", "2.5", "0.1" (Python's "%g" gives the same text).
std::string number_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

double number_at(const json& object, const char* key, double fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string string_at(const json& object, const char* key, const std::string& fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string count_text(std::int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "1 Gbit/s", "100 Mbit/s", "2.5 Gbit/s": the rate in the largest unit it reaches.
std::string rate_text(const json& rate) {
  double bps = 0;
  if (!rate.is_string() || !parse_data_rate(rate.get<std::string>(), bps)) {
    return rate.is_string() ? rate.get<std::string>() : rate.dump();
  }
  static const std::pair<double, const char*> kUnits[] = {
      {1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}};
  for (const auto& [scale, unit] : kUnits) {
    if (bps >= scale) return number_text(bps / scale) + " " + unit;
  }
  return number_text(bps) + " bit/s";
}

// Where the stations or UEs stand: " at 5 m", " at 80-400 m", " within 15 m", " on a 2 m grid".
std::string placement_text(const json& placement) {
  if (!placement.is_object()) return "";
  const std::string kind = string_at(placement, "kind", "");
  if (kind == "distance") return " at " + number_text(number_at(placement, "distance_m", 0)) + " m";
  if (kind == "disc") return " within " + number_text(number_at(placement, "radius_m", 0)) + " m";
  if (kind == "grid") return " on a " + number_text(number_at(placement, "spacing_m", 0)) + " m grid";
  if (kind == "distances") {
    const auto it = placement.find("distances_m");
    std::vector<double> d;
    if (it != placement.end() && it->is_array()) {
      for (const auto& v : *it) {
        if (v.is_number()) d.push_back(v.get<double>());
      }
    }
    if (d.empty()) return "";
    const auto [lo, hi] = std::minmax_element(d.begin(), d.end());
    return " at " + number_text(*lo) + (*lo == *hi ? "" : "-" + number_text(*hi)) + " m";
  }
  return "";
}

std::string wifi_label(const json& n, std::int64_t workers) {
  std::string out = "802.11" + string_at(n, "standard", "?");
  std::string band = string_at(n, "band", "5GHz");
  if (band != "5GHz") {
    const auto ghz = band.find("GHz");
    if (ghz != std::string::npos) band.insert(ghz, " ");
    out += " " + band;
  }
  out += " " + number_text(number_at(n, "width_mhz", 0)) + " MHz";
  const auto streams = static_cast<std::int64_t>(number_at(n, "spatial_streams", 1));
  if (streams > 1) out += " " + std::to_string(streams) + "x" + std::to_string(streams);
  if (string_at(n, "rate_control", "ideal") == "constant") {
    out += " MCS " + number_text(number_at(n, "mcs", 0));
  }
  const auto placement = n.find("placement");
  return out + ", " + count_text(workers, "station", "stations") +
         placement_text(placement == n.end() ? json() : *placement);
}

// LTE resource blocks to channel width, MHz (3GPP TS 36.101, table 5.6-1).
std::string lte_width(double blocks) {
  static const std::pair<double, const char*> kWidths[] = {
      {6, "1.4"}, {15, "3"}, {25, "5"}, {50, "10"}, {75, "15"}, {100, "20"}};
  for (const auto& [rb, mhz] : kWidths) {
    if (blocks == rb) return std::string(mhz) + " MHz";
  }
  return number_text(blocks) + " RBs";
}

std::string lte_label(const json& n, std::int64_t workers) {
  const double ul = number_at(n, "ul_bandwidth", 100), dl = number_at(n, "dl_bandwidth", 100);
  std::string out = ul == dl ? "LTE " + lte_width(ul)
                             : "LTE UL " + lte_width(ul) + " / DL " + lte_width(dl);
  const auto enbs = static_cast<std::int64_t>(number_at(n, "enbs", 1));
  if (enbs > 1) out += ", " + std::to_string(enbs) + " cells";
  const auto placement = n.find("placement");
  return out + ", " + count_text(workers, "UE", "UEs") +
         placement_text(placement == n.end() ? json() : *placement);
}

std::string family_name(const std::string& family) {
  if (family == "wifi") return "Wi-Fi";
  if (family == "lte") return "LTE";
  if (family == "ethernet") return "Ethernet";
  return family;
}

std::string hybrid_label(const json& n) {
  std::string out;
  const auto groups = n.find("groups");
  if (groups != n.end() && groups->is_array()) {
    for (const auto& g : *groups) {
      if (!g.is_object()) continue;
      out += (out.empty() ? "" : " + ") +
             number_text(number_at(g, "workers", 0)) + " " +
             family_name(string_at(g, "family", "?"));
    }
  }
  return "hybrid: " + (out.empty() ? std::string("no groups") : out);
}

}  // namespace

std::string network_label(const json& network, std::int64_t workers) {
  if (!network.is_object()) return "?";
  const std::string given = string_at(network, "label", "");
  if (!given.empty()) return given;
  const std::string family = string_at(network, "family", "?");
  if (family == "ethernet") return "Ethernet " + rate_text(network.value("rate", json("1Gbps")));
  if (family == "wifi") return wifi_label(network, workers);
  if (family == "lte") return lte_label(network, workers);
  if (family == "hybrid") return hybrid_label(network);
  return family;
}

std::string label_slug(const std::string& label) {
  std::string out;
  for (char c : label) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '.') {
      out.push_back(c);
    } else if (!out.empty() && out.back() != '-') {
      out.push_back('-');
    }
  }
  // No leading '.' (a hidden folder) or '-' (read as an option), no trailing separator.
  while (!out.empty() && (out.back() == '-' || out.back() == '.')) out.pop_back();
  while (!out.empty() && (out.front() == '.' || out.front() == '-')) out.erase(out.begin());
  return out.empty() ? "network" : out;
}

}  // namespace gradwire
