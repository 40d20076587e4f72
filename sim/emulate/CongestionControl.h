// The TCP congestion control of the emulated hosts' kernels. A new network namespace takes the
// machine's own default (`net.ipv4.tcp_congestion_control`, e.g. BBR), which is not what the
// simulated hosts run: ns-3's TCP in gradwire is CUBIC, as Linux's default. A namespace may
// choose only an algorithm the machine allows (`net.ipv4.tcp_allowed_congestion_control`).
#pragma once

#include <string>

namespace gradwire {

/// What the hosts run unless asked otherwise: the simulator's TCP.
inline constexpr const char* kSimulatedCongestionControl = "cubic";

struct CongestionControlChoice {
  /// What every host's namespace is set to; empty: left as a new namespace has it (CUBIC was
  /// wanted, with no --congestion-control, but the machine does not allow it). Not Reno in
  /// its place: Reno halves its window at every loss where CUBIC takes 30 %, and over a lossy
  /// cell it falls further behind the simulated CUBIC than the machine's default did.
  std::string name;
  std::string allowed;  ///< the machine's tcp_allowed_congestion_control, as it reads
};

/// Where the machine lists what a network namespace may choose, and what its kernel has.
inline constexpr const char* kAllowedCongestionControlFile =
    "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
inline constexpr const char* kAvailableCongestionControlFile =
    "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// The first line of one of those files as it reads now (empty where it cannot be read).
std::string congestion_control_list(const char* file);

/// Whether `name` is one of the words of `list`.
bool congestion_control_listed(const std::string& list, const std::string& name);

/// The algorithm for `asked` (empty: CUBIC where the machine allows it). ConfigError naming
/// --congestion-control when `asked` is not one the machine lets a namespace choose.
CongestionControlChoice choose_congestion_control(const std::string& asked);

}  // namespace gradwire
