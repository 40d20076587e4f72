#include "sim/service/HostLayout.h"

#include "sim/engine/Scenario.h"

namespace gradwire {

HostLayout HostLayout::of(const Scenario& scenario) {
  HostLayout layout;
  layout.workers = scenario.training.workers;
  layout.with_server = scenario.topology.with_server();
  layout.hosts = static_cast<std::uint32_t>(layout.workers) + (layout.with_server ? 1 : 0);
  return layout;
}

std::string HostLayout::host_name(std::uint32_t h) const {
  return h < static_cast<std::uint32_t>(workers) ? "worker " + std::to_string(h)
                                                 : "server (host " + std::to_string(h) + ")";
}

}  // namespace gradwire
