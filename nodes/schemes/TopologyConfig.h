// A scenario's `topology`, resolved: the scheme's name, its mode, the fault timeout and the
// scheme's own typed settings (what its declaration reads from its keys).
#pragma once

#include <any>
#include <string>

#include <nlohmann/json.hpp>

#include "common/JsonFields.h"
#include "nodes/schemes/SchemeRegistry.h"
#include "nodes/schemes/SyncMode.h"

namespace gradwire {

struct TopologyConfig {
  std::string kind = "ring";
  SyncMode mode = SyncMode::kSync;  ///< async: the schemes that declare it (ps, leader)
  double timeout_s = 0.2;           ///< faults: how long a collective waits before declaring a peer gone
  std::any settings;                ///< the scheme's options struct (its declaration's `read`)

  /// The scheme's declaration (what it supports).
  const SchemeInfo& scheme() const { return SchemeRegistry::builtin().at(kind); }
  const std::string& name() const { return kind; }
  bool async() const { return mode == SyncMode::kAsync; }
  /// Whether the scheme, with these settings, has a server host.
  bool with_server() const { return scheme().with_server(settings); }
  template <typename Settings>
  const Settings& settings_as() const {
    return std::any_cast<const Settings&>(settings);
  }
};

/// Reads `topology` through the schemes' declarations: the common keys, then the named
/// scheme's own (another scheme's key is refused, naming the schemes that take it).
TopologyConfig read_topology(const JsonFields& topology);

/// The resolved object: kind, mode, the timeout with faults, and the scheme's keys.
nlohmann::json topology_json(const TopologyConfig& topology, bool faults);

}  // namespace gradwire
