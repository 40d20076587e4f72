// Stochastic Gradient Push's declaration: parameters travel, so codecs must be `none`.
#include <memory>
#include <string>

#include "common/ConfigError.h"
#include "nodes/schemes/BuiltinSchemes.h"
#include "nodes/schemes/ExponentialGraph.h"
#include "nodes/schemes/PushSumGossip.h"

namespace gradwire {

SchemeInfo gossip_scheme() {
  using namespace params;
  SchemeInfo gossip;
  gossip.name = "gossip";
  gossip.summary =
      "Stochastic Gradient Push: push-sum weights on the time-varying directed exponential "
      "graph, mixing weight 1/(peers+1); each push carries the node's parameters and weight";
  gossip.modes = {SyncMode::kSync};
  gossip.sends_gradients = false;
  gossip.faults_sync = true;
  FieldTable<PushSumOptions> fields;
  fields.add(integer("peers", 1, 1, 16,
                     "out-peers per step, at most floor(log2(workers - 1)) + 1 (the graph's "
                     "distinct shifts 2^0, 2^1, ...)"),
             &PushSumOptions::peers);
  fields.add(
      boolean("overlap", false,
              "mix the previous step's shares so sending overlaps compute (SGP with tau = 1); "
              "not with faults"),
      [](const JsonFields& f, const ParamSpec& spec, PushSumOptions& o) {
        o.overlap = f.boolean(spec.name, false);
      },
      [](const PushSumOptions& o, const ParamSpec& spec, nlohmann::json& out) {
        if (o.overlap) out[spec.name] = true;
      });
  gossip.declare(fields);
  gossip.check_with_faults = [](const std::any& settings) {
    if (std::any_cast<const PushSumOptions&>(settings).overlap) {
      throw ConfigError("topology.overlap", "not supported together with faults");
    }
  };
  gossip.check_with_workers = [](const std::any& settings, int workers) {
    const int peers = std::any_cast<const PushSumOptions&>(settings).peers;
    const int most = ExponentialGraph::max_peers(workers);
    if (peers > most) {
      throw ConfigError("topology.peers",
                        "expected at most " + std::to_string(most) + " with " +
                            std::to_string(workers) + " workers (the exponential graph over " +
                            std::to_string(workers) + " nodes has " + std::to_string(most) +
                            " distinct out-peers), got " + std::to_string(peers));
    }
  };
  gossip.scheme = [](const SchemeParts& p, const std::any& settings) -> std::unique_ptr<TrainingScheme> {
    PushSumOptions o = std::any_cast<const PushSumOptions&>(settings);
    o.momentum = p.optimizer.momentum;
    o.weight_decay = p.optimizer.weight_decay;
    o.nesterov = p.optimizer.nesterov;
    o.lr = p.optimizer.lr;
    return std::make_unique<PushSumGossip>(p.workers, o);
  };
  return gossip;
}

}  // namespace gradwire
