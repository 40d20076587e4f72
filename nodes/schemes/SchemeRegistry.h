// The training schemes a scenario's `topology` can name, declared once: each entry's kind,
// modes, what it supports (faults, compression codecs, worker processes) and its parameters.
// Scenario validation, `gradwire schemes` and docs/schemes.md all read this declaration.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/ParamSpec.h"

namespace gradwire {

enum class SchemeKind { kRing, kParameterServer, kGossip, kLeader };

/// sync: every step waits for the aggregate; async: the parameter server applies each push as
/// it lands.
enum class SyncMode { kSync, kAsync };

struct SchemeInfo {
  SchemeKind kind = SchemeKind::kRing;
  std::string name;  ///< `topology.kind`
  std::string summary;
  std::vector<SyncMode> modes;
  bool server_host = false;  ///< needs a host of its own for the server
  bool sends_gradients = true;  ///< false: exchanges parameters, so codecs must be `none`
  bool faults_sync = false;     ///< handles workers leaving and rejoining (sync mode)
  bool processes = false;       ///< runs with `gradwire run --processes`
  std::vector<ParamSpec> params;  ///< keys of its own, besides kind, mode and timeout

  bool has_mode(SyncMode mode) const;
};

class SchemeRegistry {
 public:
  static const SchemeRegistry& builtin();

  const SchemeInfo& at(SchemeKind kind) const;
  /// nullptr when no scheme has that name.
  const SchemeInfo* find(const std::string& name) const;
  const std::vector<SchemeInfo>& list() const { return schemes_; }
  std::vector<std::string> names() const;
  /// `kind`, `mode` and `timeout`: the keys every topology object takes.
  const std::vector<ParamSpec>& common_params() const { return common_; }

 private:
  SchemeRegistry();
  std::vector<SchemeInfo> schemes_;
  std::vector<ParamSpec> common_;
};

std::string scheme_name(SchemeKind kind);
/// The schemes that run as worker processes, quoted: "\"ring\" and \"ps\"".
std::string schemes_with_processes();
std::string mode_name(SyncMode mode);
SyncMode parse_mode(const std::string& name);  ///< "sync" | "async"; std::invalid_argument

/// The declaration as Markdown (docs/schemes.md's generated part) and as JSON.
std::string scheme_reference_markdown();
nlohmann::json scheme_reference_json();

}  // namespace gradwire
