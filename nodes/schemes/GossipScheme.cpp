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
  fields
      .add(integer("tau", 0, 0, PushSumOptions::kMaxTau,
                   "delay bound (overlap SGP): a node mixes the shares sent to it tau steps "
                   "earlier, so sending overlaps the next tau steps' compute and a node runs at "
                   "most tau steps ahead of its in-peers (0: wait for this step's shares); not "
                   "with faults"),
           &PushSumOptions::tau)
      .written_when([](const PushSumOptions& o) { return o.tau > 0 && !o.overlap; });
  fields.add(
      boolean("overlap", false, "the older spelling of tau: true is tau 1; not together with tau"),
      [](const JsonFields& f, const ParamSpec& spec, PushSumOptions& o) {
        o.overlap = f.boolean(spec.name, false);
        if (o.overlap) o.tau = 1;
      },
      [](const PushSumOptions& o, const ParamSpec& spec, nlohmann::json& out) {
        if (o.overlap) out[spec.name] = true;
      });
  gossip.declare<PushSumOptions>(
      fields, [](const PushSumOptions&, const JsonFields& f, SyncMode) {
        if (f.has("overlap") && f.has("tau")) {
          throw ConfigError(f.path_of("overlap"),
                            "is the older spelling of tau (true: tau 1); give " +
                                f.path_of("tau") + " alone");
        }
      });
  gossip.check_with_faults = [](const std::any& settings) {
    const auto& o = std::any_cast<const PushSumOptions&>(settings);
    if (o.overlap) throw ConfigError("topology.overlap", "not supported together with faults");
    if (o.tau > 0) {
      throw ConfigError("topology.tau",
                        "expected 0 together with faults (a node finds a gone in-peer while "
                        "it waits for this step's shares), got " + std::to_string(o.tau));
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
