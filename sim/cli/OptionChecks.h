// Checks shared by every command's options: durations, plain numbers and ZeroMQ endpoints'
// ports. A bad value is exit 2 naming the option, never a limit that silently means something
// else (NaN, a duration that overflows the clock and fires at once, a port that wraps).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace gradwire {

/// The longest duration an option may give, in seconds (about 11.6 days): longer ones would
/// overflow the millisecond and nanosecond clocks the waits are converted to.
constexpr double kLongestDurationS = 1e6;

/// Why `seconds` is not a usable duration ("" when it is): finite, > 0, at most
/// kLongestDurationS.
std::string duration_problem(double seconds);

/// For options read with CLI11: a duration in seconds (see duration_problem).
CLI::Validator duration_seconds();
/// For options read with CLI11: any finite number (CLI::Range lets NaN through).
CLI::Validator finite_number();

/// A duration given as `value` in `unit_s` seconds (1e-3 for milliseconds): the value in
/// seconds, or ConfigError naming `option`.
double checked_duration(const std::string& option, double value, double unit_s = 1.0);

/// A ZeroMQ endpoint's TCP port must be `*` or 1-65535 (ZeroMQ would take 99999 as 34463):
/// "" when it is, else what is wrong. Endpoints of other transports pass unchecked.
std::string endpoint_port_problem(const std::string& endpoint);
/// For options read with CLI11: endpoint_port_problem.
CLI::Validator endpoint_port();

}  // namespace gradwire
