#include "common/Units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

namespace gradwire {
namespace {

// Splits "12.5 Mbps" into 12.5 and "mbps" (lower-cased, spaces dropped).
bool split_number_unit(const std::string& text, double& value, std::string& unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value)) return false;
  unit.clear();
  for (const char* p = end; *p; ++p) {
    if (!std::isspace(static_cast<unsigned char>(*p))) {
      unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(*p))));
    }
  }
  return true;
}

}  // namespace

bool parse_data_rate(const std::string& text, double& bits_per_second) {
  static const std::map<std::string, double> kUnits = {
      {"bps", 1.0},    {"b/s", 1.0},    {"kbps", 1e3},  {"kb/s", 1e3},  {"mbps", 1e6},
      {"mb/s", 1e6},   {"gbps", 1e9},   {"gb/s", 1e9},  {"tbps", 1e12}, {"tb/s", 1e12}};
  double value = 0;
  std::string unit;
  if (!split_number_unit(text, value, unit)) return false;
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) return false;
  bits_per_second = value * it->second;
  return bits_per_second >= kMinRateBps && bits_per_second <= kMaxRateBps;
}

bool parse_duration(const std::string& text, double& seconds) {
  static const std::map<std::string, double> kUnits = {
      {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  double value = 0;
  std::string unit;
  if (!split_number_unit(text, value, unit)) return false;
  auto it = kUnits.find(unit);
  if (it == kUnits.end() || value < 0) return false;
  seconds = value * it->second;
  return seconds <= kMaxDurationS;
}

std::string format_duration(double seconds) {
  char buf[64];
  if (seconds != 0 && seconds < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.12gus", seconds * 1e6);
  } else if (seconds != 0 && seconds < 1) {
    std::snprintf(buf, sizeof buf, "%.12gms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.12gs", seconds);
  }
  return buf;
}

std::string format_bps(double bits_per_second) {
  // Prefer the unit a person would write ("10Gbps"); both forms parse in ns-3 and here.
  const auto bps = static_cast<std::uint64_t>(std::llround(bits_per_second));
  // ns-3's DataRate knows no "Tbps": Gbps is the largest unit written.
  static const std::pair<std::uint64_t, const char*> kUnits[] = {
      {1000000000ull, "Gbps"}, {1000000ull, "Mbps"}, {1000ull, "Kbps"}};
  for (const auto& [scale, unit] : kUnits) {
    if (bps >= scale && bps % scale == 0) return std::to_string(bps / scale) + unit;
  }
  return std::to_string(bps) + "bps";
}

}  // namespace gradwire

#include "common/ConfigError.h"
#include "common/JsonFields.h"

namespace gradwire {

double read_data_rate(const JsonFields& fields, const std::string& key, double fallback_bps) {
  if (!fields.has(key)) return fallback_bps;
  const auto& v = fields.object().at(key);
  double bps = 0;
  if (!v.is_string() || !parse_data_rate(v.get<std::string>(), bps)) {
    throw ConfigError(fields.path_of(key),
                      "expected a data rate from 1bps to 1Tbps such as \"1Gbps\" or "
                      "\"100Mbps\", got " +
                          json_brief(v));
  }
  return bps;
}

double read_duration(const JsonFields& fields, const std::string& key, double fallback_s) {
  if (!fields.has(key)) return fallback_s;
  const auto& v = fields.object().at(key);
  double s = 0;
  if (!v.is_string() || !parse_duration(v.get<std::string>(), s)) {
    throw ConfigError(fields.path_of(key),
                      "expected a duration up to 1000000s such as \"50us\", \"2ms\" or "
                      "\"0.1s\", got " +
                          json_brief(v));
  }
  return s;
}

}  // namespace gradwire
