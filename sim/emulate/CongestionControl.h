// The TCP congestion control of the emulated hosts' kernels. A new network namespace takes the
// machine's own default (`net.ipv4.tcp_congestion_control`, e.g. BBR), which is not what the
// simulated hosts run: ns-3's TCP in gradwire is CUBIC, as Linux's default. A namespace may
// choose only an algorithm the machine allows (`net.ipv4.tcp_allowed_congestion_control`).
#pragma once

#include <string>

namespace gradwire {

/// What the hosts run unless asked otherwise: the simulator's TCP.
inline constexpr const char* kSimulatedCongestionControl = "cubic";
/// Where the machine does not let a namespace choose CUBIC: like it in slow start and after
/// idle periods, and always allowed.
inline constexpr const char* kFallbackCongestionControl = "reno";

struct CongestionControlChoice {
  std::string name;     ///< what every host's namespace is set to
  std::string allowed;  ///< the machine's tcp_allowed_congestion_control, as it reads
  bool fell_back = false;  ///< CUBIC was wanted (no --congestion-control) but is not allowed
};

/// The algorithm for `asked` (empty: CUBIC, else Reno where CUBIC is not allowed). ConfigError
/// naming --congestion-control when `asked` is not one the machine lets a namespace choose.
CongestionControlChoice choose_congestion_control(const std::string& asked);

}  // namespace gradwire
