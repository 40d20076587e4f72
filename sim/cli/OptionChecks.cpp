#include "sim/cli/OptionChecks.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/ConfigError.h"

namespace gradwire {

namespace {

std::string shown(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

std::string duration_problem(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0 || seconds > kLongestDurationS) {
    return "expected a finite duration > 0 and at most " + shown(kLongestDurationS) +
           " seconds; got " + shown(seconds) + " s";
  }
  return "";
}

CLI::Validator duration_seconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') return "expected a number of seconds; got " + text;
        return duration_problem(v);
      },
      "SECONDS", "duration");
}

CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v)) {
          return "expected a finite number; got " + text;
        }
        return "";
      },
      "", "finite");
}

double checked_duration(const std::string& option, double value, double unit_s) {
  const double seconds = value * unit_s;
  if (!std::isfinite(value) || !(seconds > 0) || seconds > kLongestDurationS) {
    throw ConfigError(option, "expected a finite duration > 0 and at most " +
                                  shown(kLongestDurationS / unit_s) +
                                  (unit_s == 1.0 ? " s" : unit_s == 1e-3 ? " ms" : "") +
                                  "; got " + shown(value));
  }
  return seconds;
}

std::string endpoint_port_problem(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) return "";
  const std::size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon < 6) return "expected tcp://ADDRESS:PORT; got " + endpoint;
  const std::string port = endpoint.substr(colon + 1);
  if (port == "*") return "";
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  const long value = digits ? std::strtol(port.c_str(), nullptr, 10) : 0;
  if (!digits || value < 1 || value > 65535) {
    return "expected a port in [1, 65535] (or * for any free port); got \"" + port + "\" in " +
           endpoint;
  }
  return "";
}

CLI::Validator endpoint_port() {
  return CLI::Validator([](std::string& text) { return endpoint_port_problem(text); },
                        "ENDPOINT", "endpoint port");
}

}  // namespace gradwire
