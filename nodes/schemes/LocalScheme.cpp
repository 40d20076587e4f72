// Local-update training's declaration: H local steps, then the pseudo-gradient through a
// parameter server or a ring with the scenario's codec, and an outer optimiser (FedAvg,
// FedAvgM, DiLoCo); fragments on staggered schedules for Streaming DiLoCo.
#include <memory>

#include "common/ConfigError.h"
#include "nodes/schemes/BuiltinSchemes.h"
#include "nodes/schemes/LocalSgd.h"
#include "nodes/schemes/ParameterServer.h"
#include "nodes/schemes/RingAllReduce.h"
#include "nodes/transport/EndpointChannels.h"

namespace gradwire {

SchemeInfo local_scheme() {
  using namespace params;
  SchemeInfo local;
  local.name = "local";
  local.summary =
      "local-update training: each worker takes local_steps optimizer steps on its shard, then "
      "the pseudo-gradients (round start minus local parameters, weighted by samples) are "
      "aggregated by a parameter server or a ring with the scenario's codec and every worker "
      "applies the outer optimiser (outer_lr 1 without momentum: FedAvg; Nesterov momentum: "
      "DiLoCo); fragments > 1 synchronises parts of the model on staggered schedules "
      "(Streaming DiLoCo)";
  local.modes = {SyncMode::kSync};
  // Partial participation samples the aggregation rounds (every H local steps) at the
  // parameter server; a ring needs every worker in every round, and staggered fragments would
  // need a sample per fragment round.
  local.participation = true;
  local.check_with_participation = [](const std::any& settings) {
    const auto& o = std::any_cast<const LocalOptions&>(settings);
    if (o.aggregation != "ps") {
      throw ConfigError("participation", "with topology local, participation needs "
                                         "topology.aggregation \"ps\" (a ring needs every "
                                         "worker in every round), not \"" +
                                             o.aggregation + "\"");
    }
    if (o.fragments > 1) {
      throw ConfigError("topology.fragments", "expected 1 with participation (every fragment "
                                              "would need rounds of its own), got " +
                                                  std::to_string(o.fragments));
    }
    if (o.overlap) {
      throw ConfigError("topology.overlap", "expected false with participation (a client "
                                            "that is not sampled does not compute)");
    }
  };
  local.server_host_if = [](const std::any& settings) {
    return std::any_cast<const LocalOptions&>(settings).aggregation == "ps";
  };
  local.server_host_when = "with `aggregation` \"ps\"";
  FieldTable<LocalOptions> fields;
  fields.add(integer("local_steps", 8, 1, 100000000,
                     "H: local optimizer steps per round (1 with outer_lr 1: synchronous SGD)"),
             &LocalOptions::local_steps);
  fields.add(choice("aggregation", "ps", {"ps", "ring"},
                    "how the pseudo-gradients are averaged: a parameter server on a host of its "
                    "own, or ring all-reduce"),
             &LocalOptions::aggregation);
  fields.add(number("outer_lr", 1.0, 0, 1000, "the outer optimiser's learning rate (DiLoCo: 0.7)",
                    true),
             &LocalOptions::outer_lr);
  fields.add(number("outer_momentum", 0.0, 0, 0.9999,
                    "the outer optimiser's momentum (FedAvgM; DiLoCo: 0.9)"),
             &LocalOptions::outer_momentum);
  fields.add(boolean("outer_nesterov", false, "Nesterov outer momentum (DiLoCo: true)"),
             &LocalOptions::outer_nesterov);
  fields.add(integer("fragments", 1, 1, 1024,
                     "P: the parameters in P fragments (contiguous groups of tensors); fragment "
                     "p is synchronised when (step - p H / P) is a multiple of H (at most H, and "
                     "at most the model's tensors)"),
             &LocalOptions::fragments);
  fields.add(boolean("overlap", false,
                     "keep computing while a fragment is in flight and merge it on arrival, "
                     "keeping the local progress made meanwhile (false: wait for it)"),
             &LocalOptions::overlap);
  local.declare<LocalOptions>(fields, [](const LocalOptions& o, const JsonFields& f, SyncMode) {
    if (o.fragments > o.local_steps) {
      throw ConfigError(f.path_of("fragments"),
                        "expected at most local_steps (" + std::to_string(o.local_steps) +
                            ") fragments, got " + std::to_string(o.fragments));
    }
  });
  local.model_parts = [](const std::any& settings, const std::vector<std::int64_t>& numels) {
    const auto& o = std::any_cast<const LocalOptions&>(settings);
    if (o.fragments > static_cast<std::int64_t>(numels.size())) {
      throw ConfigError("topology.fragments",
                        "expected at most the model's parameter tensors (" +
                            std::to_string(numels.size()) + "), got " +
                            std::to_string(o.fragments));
    }
    return plan_fragments(numels, static_cast<int>(o.fragments));
  };
  local.scheme = [](const SchemeParts& p, const std::any& settings) -> std::unique_ptr<TrainingScheme> {
    const auto& o = std::any_cast<const LocalOptions&>(settings);
    const bool ps = o.aggregation == "ps";
    const int count = static_cast<int>(p.buckets.size());
    // One collective per fragment, each on its own channel of every host's endpoint.
    std::vector<std::unique_ptr<EndpointChannels>> channels;
    if (count > 1) {
      for (Endpoint* e : p.workers) channels.push_back(std::make_unique<EndpointChannels>(*e, count));
      if (ps) channels.push_back(std::make_unique<EndpointChannels>(*p.server, count));
    }
    std::vector<std::unique_ptr<Collective>> collectives;
    for (int b = 0; b < count; ++b) {
      std::vector<Endpoint*> ends = p.workers;
      Endpoint* server = p.server;
      if (count > 1) {
        for (std::size_t r = 0; r < ends.size(); ++r) ends[r] = &channels[r]->channel(b);
        if (ps) server = &channels.back()->channel(b);
      }
      const auto codecs = p.codecs(static_cast<std::size_t>(b));
      if (ps) {
        collectives.push_back(std::make_unique<ParameterServer>(
            ends, server, codecs, p.server_codec(static_cast<std::size_t>(b)), p.participation));
      } else {
        collectives.push_back(std::make_unique<RingAllReduce>(ends, codecs));
      }
    }
    return std::make_unique<LocalSgd>(p.buckets, std::move(channels), std::move(collectives),
                                      p.samples, o, p.participation);
  };
  return local;
}

}  // namespace gradwire
