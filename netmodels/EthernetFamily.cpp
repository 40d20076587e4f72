// The `ethernet` family's declaration (NetworkRegistry lists it).
#include <memory>
#include <string>

#include "netmodels/EthernetNetwork.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/FamilyConfig.h"
#include "netmodels/NetworkFamilyInfo.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

namespace {

class EthernetFamilyConfig final : public FamilyConfig {
 public:
  explicit EthernetFamilyConfig(EthernetConfig config) : config_(std::move(config)) {}
  nlohmann::json to_json() const override { return config_.to_json(); }
  std::uint32_t mtu() const override { return config_.mtu; }
  std::unique_ptr<Network> build(std::size_t hosts) const override {
    return std::make_unique<EthernetNetwork>(config_, hosts);
  }

 private:
  EthernetConfig config_;
};

}  // namespace

NetworkFamilyInfo ethernet_family() {
  NetworkFamilyInfo f;
  f.name = "ethernet";
  f.summary =
      "A switched star: every host has its own full-duplex link to one store-and-forward "
      "switch, with a drop-tail queue per port (the lab cluster on 1 or 10 GbE)";
  f.params = ethernet_params();
  f.group_params = ethernet_group_params();
  f.minimal = {{"family", f.name}};
  f.resolve = [](const nlohmann::json& object,
                 const std::string& path) -> std::shared_ptr<const FamilyConfig> {
    return std::make_shared<EthernetFamilyConfig>(
        read_resolved<EthernetConfig>(object, path));
  };
  return f;
}

}  // namespace gradwire
