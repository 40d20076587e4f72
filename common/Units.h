// Parsing of the scenario's human units: data rates ("1Gbps", "100Mbps", "10 Gb/s") and
// durations ("50us", "2ms", "0.1s"). Returns false instead of aborting (ns-3's own parsers
// call NS_FATAL_ERROR on bad input, which would lose the JSON path in the error).
#pragma once

#include <cstdint>
#include <string>

namespace gradwire {

/// The rates a scenario may name: ns-3 keeps a rate as whole bits per second in 64 bits, and
/// nothing it simulates is slower than 1 bit/s or faster than 1 Tbit/s.
constexpr double kMinRateBps = 1;
constexpr double kMaxRateBps = 1e12;
/// The longest duration a scenario may name (11.6 days of simulated time; ns-3's clock counts
/// nanoseconds in 64 bits, and no training run lasts longer).
constexpr double kMaxDurationS = 1e6;

/// Bits per second; accepts bps, Kbps, Mbps, Gbps, Tbps (also kb/s style), from kMinRateBps
/// to kMaxRateBps.
bool parse_data_rate(const std::string& text, double& bits_per_second);

/// Seconds; accepts s, ms, us, ns, from 0 to kMaxDurationS.
bool parse_duration(const std::string& text, double& seconds);

/// Formats bits per second in the largest exact unit ("1Gbps", "2500Mbps"); ns-3 accepts it.
std::string format_bps(double bits_per_second);

/// Formats seconds in a readable unit ("50us", "2ms", "1.5s"); parse_duration reads it back.
std::string format_duration(double seconds);

}  // namespace gradwire

namespace gradwire {
class JsonFields;

/// Reads an optional data-rate string field ("1Gbps"); ConfigError with the path if malformed.
double read_data_rate(const JsonFields& fields, const std::string& key, double fallback_bps);
/// Reads an optional duration string field ("50us"); ConfigError with the path if malformed.
double read_duration(const JsonFields& fields, const std::string& key, double fallback_s);
}  // namespace gradwire
