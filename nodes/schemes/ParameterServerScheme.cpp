// The parameter server's declaration: a synchronous collective, or an asynchronous scheme that
// applies each push as it lands with optionally bounded staleness.
#include <memory>

#include "common/ConfigError.h"
#include "nodes/schemes/AsyncParameterServer.h"
#include "nodes/schemes/BuiltinSchemes.h"
#include "nodes/schemes/ParameterServer.h"

namespace gradwire {

SchemeInfo parameter_server_scheme() {
  using namespace params;
  SchemeInfo ps;
  ps.name = "ps";
  ps.summary =
      "parameter server on a host of its own: workers push encoded gradients, the server "
      "aggregates and sends the update back (sync), or applies each push as it lands (async)";
  ps.modes = {SyncMode::kSync, SyncMode::kAsync};
  ps.server_host = true;
  ps.gradient_buckets = true;
  ps.faults_sync = true;
  ps.processes = true;
  ps.participation = true;
  FieldTable<AsyncServerOptions> fields;
  fields.add(
      integer("max_staleness", -1, -1, 1000000,
              "async only: bounded staleness; a worker more than this many updates ahead of "
              "the slowest waits until it catches up (-1: unbounded)"),
      [](const JsonFields& f, const ParamSpec& spec, AsyncServerOptions& o) {
        o.max_staleness = static_cast<int>(declared_integer(f, spec));
      },
      // Unbounded is the default and the only value of the sync mode: not written.
      [](const AsyncServerOptions& o, const ParamSpec& spec, nlohmann::json& out) {
        if (o.max_staleness >= 0) out[spec.name] = o.max_staleness;
      });
  ps.declare<AsyncServerOptions>(
      fields, [](const AsyncServerOptions&, const JsonFields& f, SyncMode mode) {
        if (f.has("max_staleness") && mode != SyncMode::kAsync) {
          throw ConfigError(f.path_of("max_staleness"),
                            "expected only with topology.mode \"async\"");
        }
      });
  ps.collective_modes = {SyncMode::kSync};
  ps.collective = [](const CollectiveParts& p, const std::any&) -> std::unique_ptr<Collective> {
    return std::make_unique<ParameterServer>(p.workers, p.server, p.codecs, p.server_codec,
                                             p.participation, p.phases);
  };
  ps.scheme = [](const SchemeParts& p, const std::any& settings) -> std::unique_ptr<TrainingScheme> {
    AsyncServerOptions o = std::any_cast<const AsyncServerOptions&>(settings);
    o.momentum = p.optimizer.momentum;
    o.weight_decay = p.optimizer.weight_decay;
    o.nesterov = p.optimizer.nesterov;
    o.lr = p.optimizer.lr;
    std::vector<std::vector<Codec*>> per_bucket;
    std::vector<Codec*> server_per_bucket;
    for (std::size_t b = 0; b < p.buckets.size(); ++b) {
      per_bucket.push_back(p.codecs(b));
      server_per_bucket.push_back(p.server_codec(b));
    }
    return std::make_unique<AsyncParameterServer>(p.workers, p.server, p.buckets,
                                                  std::move(per_bucket),
                                                  std::move(server_per_bucket), o, p.on_update);
  };
  return ps;
}

}  // namespace gradwire
