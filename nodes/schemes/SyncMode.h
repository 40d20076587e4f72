// Whether every step waits for the aggregate.
#pragma once

#include <string>

namespace gradwire {

/// sync: every step waits for the aggregate; async: nobody waits (the parameter server applies
/// each push as it lands; Leader SGD pulls towards the leaders' parameters last received).
enum class SyncMode { kSync, kAsync };

std::string mode_name(SyncMode mode);
SyncMode parse_mode(const std::string& name);  ///< "sync" | "async"; std::invalid_argument

}  // namespace gradwire
