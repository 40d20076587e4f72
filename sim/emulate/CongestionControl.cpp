#include "sim/emulate/CongestionControl.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "common/ConfigError.h"

namespace gradwire {

namespace {

constexpr const char* kAllowedFile = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

bool listed(const std::string& list, const std::string& name) {
  std::istringstream words(list);
  std::string word;
  while (words >> word) {
    if (word == name) return true;
  }
  return false;
}

}  // namespace

CongestionControlChoice choose_congestion_control(const std::string& asked) {
  CongestionControlChoice choice;
  std::ifstream file(kAllowedFile);
  std::getline(file, choice.allowed);
  // Reno is built into every kernel and always allowed, even where the list cannot be read.
  const auto allowed = [&](const std::string& name) {
    return name == "reno" || listed(choice.allowed, name);
  };
  if (asked.empty()) {
    if (allowed(kSimulatedCongestionControl)) choice.name = kSimulatedCongestionControl;
    return choice;
  }
  if (!allowed(asked)) {
    throw ConfigError("--congestion-control",
                      "expected an algorithm this machine lets a network namespace choose (" +
                          std::string(kAllowedFile) + ": " +
                          (choice.allowed.empty() ? std::string("reno") : choice.allowed) +
                          "); got \"" + asked + "\"");
  }
  choice.name = asked;
  return choice;
}

}  // namespace gradwire
