// Ring all-reduce's declaration: synchronous only, no keys of its own.
#include <memory>

#include "nodes/schemes/BuiltinSchemes.h"
#include "nodes/schemes/RingAllReduce.h"

namespace gradwire {

namespace {
struct RingSettings {};
}  // namespace

SchemeInfo ring_scheme() {
  SchemeInfo ring;
  ring.name = "ring";
  ring.summary =
      "synchronous ring all-reduce (reduce-scatter then all-gather); summable codecs are "
      "reduced hop by hop without decoding. Sync only: every hop needs its predecessor's "
      "chunk, so an asynchronous ring has no meaning, and the literature has none "
      "(TF-Replicator's switch to asynchronous training goes through parameter servers)";
  ring.modes = {SyncMode::kSync};
  ring.gradient_buckets = true;
  ring.faults_sync = true;
  ring.processes = true;
  ring.declare(FieldTable<RingSettings>());
  ring.collective_modes = {SyncMode::kSync};
  ring.collective = [](const CollectiveParts& p, const std::any&) -> std::unique_ptr<Collective> {
    auto ring = std::make_unique<RingAllReduce>(p.workers, p.codecs);
    if (!p.devices.empty()) ring->set_devices(p.devices);
    return ring;
  };
  return ring;
}

}  // namespace gradwire
