#include "sim/emulate/CongestionControl.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "common/ConfigError.h"

namespace gradwire {

std::string congestion_control_list(const char* file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

bool congestion_control_listed(const std::string& list, const std::string& name) {
  std::istringstream words(list);
  std::string word;
  while (words >> word) {
    if (word == name) return true;
  }
  return false;
}

CongestionControlChoice choose_congestion_control(const std::string& asked) {
  CongestionControlChoice choice;
  choice.allowed = congestion_control_list(kAllowedCongestionControlFile);
  // Reno is built into every kernel and always allowed, even where the list cannot be read.
  const auto allowed = [&](const std::string& name) {
    return name == "reno" || congestion_control_listed(choice.allowed, name);
  };
  if (asked.empty()) {
    if (allowed(kSimulatedCongestionControl)) choice.name = kSimulatedCongestionControl;
    return choice;
  }
  if (!allowed(asked)) {
    throw ConfigError("--congestion-control",
                      "expected an algorithm this machine lets a network namespace choose (" +
                          std::string(kAllowedCongestionControlFile) + ": " +
                          (choice.allowed.empty() ? std::string("reno") : choice.allowed) +
                          "); got \"" + asked + "\"");
  }
  choice.name = asked;
  return choice;
}

}  // namespace gradwire
