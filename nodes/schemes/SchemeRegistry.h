// The training schemes a scenario's `topology` can name, declared once (common/KindRegistry.h):
// each one's modes, what it supports (faults, compression codecs, gradient buckets, worker
// processes), its keys bound to its typed settings, and how a run builds it. Scenario
// validation, `gradwire schemes`, docs/schemes.md and TrainingSetup all read this declaration.
#pragma once

#include <any>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/FieldTable.h"
#include "common/JsonFields.h"
#include "common/KindRegistry.h"
#include "common/ParamSpec.h"
#include "nodes/schemes/SchemeParts.h"
#include "nodes/schemes/SyncMode.h"

namespace gradwire {

class Collective;
class TrainingScheme;

struct SchemeInfo : KindDeclaration {
  std::vector<SyncMode> modes;
  bool server_host = false;      ///< needs a host of its own for the server
  /// When the server host depends on the scheme's keys (server_host false): whether these
  /// settings need it, and in words when (for the listings).
  std::function<bool(const std::any& settings)> server_host_if;
  std::string server_host_when;
  bool sends_gradients = true;   ///< false: exchanges parameters, so codecs must be `none`
  bool gradient_buckets = false; ///< takes `training.buckets` (reduces buckets while backward runs)
  bool faults_sync = false;      ///< handles workers leaving and rejoining (sync mode)
  bool processes = false;        ///< runs with `gradwire run --processes`
  /// Takes a `participation` section (sampled clients per round, availability, a deadline;
  /// nodes/schemes/Participation.h) in its collective modes.
  bool participation = false;
  /// With `participation`: ConfigError for settings whose rounds cannot be sampled.
  std::function<void(const std::any& settings)> check_with_participation;
  /// The scheme's settings from its own keys (`params`), typed (an options struct), with the
  /// checks that involve its mode; ConfigError naming topology.<key>.
  std::function<std::any(const JsonFields& topology, SyncMode mode)> read;
  /// Its keys back as the resolved topology object carries them.
  std::function<void(const std::any& settings, nlohmann::json& topology)> write;
  /// With `faults`: ConfigError for settings that cannot be replayed when a worker leaves.
  std::function<void(const std::any& settings)> check_with_faults;
  /// ConfigError naming topology.<key> for settings `workers` workers cannot carry (checked
  /// at validation, where the worker count is known).
  std::function<void(const std::any& settings, int workers)> check_with_workers;
  /// A scheme that exchanges parts of the model on schedules of its own: the parts (contiguous
  /// groups of parameter tensors, forward order), which the run gives codecs each as it does
  /// gradient buckets; ConfigError naming topology.<key> when the model cannot be cut so.
  std::function<std::vector<GradientBucket>(const std::any& settings,
                                            const std::vector<std::int64_t>& parameter_numels)>
      model_parts;
  /// Synchronous schemes in `collective_modes`: one collective over the parts' endpoints and
  /// codecs. A run with gradient buckets gets one per bucket (TrainingSetup).
  std::vector<SyncMode> collective_modes;
  std::function<std::unique_ptr<Collective>(const CollectiveParts&, const std::any& settings)>
      collective;
  /// Every other mode: the scheme itself.
  std::function<std::unique_ptr<TrainingScheme>(const SchemeParts&, const std::any& settings)>
      scheme;

  bool has_mode(SyncMode mode) const;
  /// Whether a run with `settings` has a server host.
  bool with_server(const std::any& settings) const;
  bool collective_in(SyncMode mode) const;

  /// Declares `fields` as the scheme's keys: params, read (then `check`) and write.
  template <typename Settings>
  void declare(FieldTable<Settings> fields,
               std::function<void(const Settings&, const JsonFields&, SyncMode)> check = {}) {
    params = fields.params();
    read = [fields, check](const JsonFields& f, SyncMode mode) -> std::any {
      Settings s;
      fields.read(f, s);
      if (check) check(s, f, mode);
      return s;
    };
    write = [fields](const std::any& settings, nlohmann::json& out) {
      fields.write(std::any_cast<const Settings&>(settings), out);
    };
  }
};

class SchemeRegistry : public KindRegistry<SchemeInfo>, public BuiltinKinds<SchemeRegistry> {
 public:
  /// `kind`, `mode` and `timeout`: the keys every topology object takes. `kind`'s choices are
  /// the declared names when it is asked for.
  std::vector<ParamSpec> common_params() const;

 private:
  friend class BuiltinKinds<SchemeRegistry>;
  SchemeRegistry();
};

/// The schemes that run as worker processes, quoted: "\"ring\" and \"ps\"".
std::string schemes_with_processes();
/// The schemes that have `mode`, quoted as schemes_with_processes() quotes them.
std::string schemes_with_mode(SyncMode mode);

/// The declaration as Markdown (docs/schemes.md's generated part) and as JSON.
std::string scheme_reference_markdown();
nlohmann::json scheme_reference_json();

}  // namespace gradwire
