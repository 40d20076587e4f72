#include "netmodels/NetworkSettings.h"

#include <stdexcept>
#include <utility>


namespace gradwire {

NetworkSettings::NetworkSettings(std::string family, std::shared_ptr<const FamilyConfig> config,
                                 TransportConfig transport, std::string label)
    : family_(std::move(family)),
      config_(std::move(config)),
      transport_(std::move(transport)),
      label_(std::move(label)) {
  if (!config_) return;
  resolved_ = config_->to_json();
  resolved_["transport"] = transport_.to_json();
  resolved_["label"] = label_;
}

std::uint32_t NetworkSettings::mtu() const { return config().mtu(); }

const FamilyConfig& NetworkSettings::config() const {
  if (!config_) throw std::logic_error("the scenario's network has not been resolved");
  return *config_;
}

std::unique_ptr<Network> NetworkSettings::build(std::size_t hosts) const {
  return config().build(hosts);
}

}  // namespace gradwire
