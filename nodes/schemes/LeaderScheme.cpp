// Leader SGD's declaration: local steps, and pulls towards the group's and the global leader,
// waiting for them (sync) or towards the last copies received (async).
#include <memory>

#include "nodes/schemes/AsyncLeaderSgd.h"
#include "nodes/schemes/BuiltinSchemes.h"
#include "nodes/schemes/LeaderSgd.h"

namespace gradwire {

SchemeInfo leader_scheme() {
  using namespace params;
  SchemeInfo leader;
  leader.name = "leader";
  leader.summary =
      "Leader SGD: local steps; every l_comm steps the workers of a group (consecutive ranks) "
      "are pulled towards the group's leader (lowest loss), every g_comm steps towards the "
      "global leader (both in one update when both fall on a step); only the leaders' "
      "parameters travel, the global leader's through the group leaders. Sync: each pull waits "
      "for the losses and the leaders' parameters; async (the paper's asynchronous version): "
      "nobody waits, each worker pulls towards the leaders' parameters it last received, "
      "and losses and leaders' parameters travel in the background";
  leader.modes = {SyncMode::kSync, SyncMode::kAsync};
  leader.sends_gradients = false;
  FieldTable<LeaderOptions> fields;
  fields.add(integer("l_comm", 16, 1, 100000000, "steps between pulls towards the group leader"),
             &LeaderOptions::l_comm);
  fields.add(integer("g_comm", 64, 1, 100000000, "steps between pulls towards the global leader"),
             &LeaderOptions::g_comm);
  fields.add(number("c1", 0.5, 0, 1, "x = (1 - c1) x + c1 x_leader at a group pull"),
             &LeaderOptions::c1);
  fields.add(number("c2", 0.5, 0, 1, "the same with the global leader at a global pull"),
             &LeaderOptions::c2);
  fields.add(integer("group_size", 4, 1, 1024, "workers per group (consecutive ranks)"),
             &LeaderOptions::group_size);
  leader.declare(fields);
  // The mode picks the class; the options carry it from validation to the run.
  leader.read = [read_keys = leader.read](const JsonFields& topology, SyncMode mode) -> std::any {
    LeaderOptions o = std::any_cast<LeaderOptions>(read_keys(topology, mode));
    o.async = mode == SyncMode::kAsync;
    return o;
  };
  leader.scheme = [](const SchemeParts& p, const std::any& settings) -> std::unique_ptr<TrainingScheme> {
    const auto& o = std::any_cast<const LeaderOptions&>(settings);
    if (o.async) return std::make_unique<AsyncLeaderSgd>(p.workers, o);
    return std::make_unique<LeaderSgd>(p.workers, o);
  };
  return leader;
}

}  // namespace gradwire
