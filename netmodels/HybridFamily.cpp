// The `hybrid` family's declaration (NetworkRegistry lists it).
#include <memory>
#include <string>

#include "netmodels/FamilyConfig.h"
#include "netmodels/HybridNetwork.h"
#include "netmodels/NetworkFamilyInfo.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

namespace {

class HybridFamilyConfig final : public FamilyConfig {
 public:
  explicit HybridFamilyConfig(HybridConfig config) : config_(std::move(config)) {}
  nlohmann::json to_json() const override { return config_.to_json(); }
  std::uint32_t mtu() const override { return 1500; }  // every link it builds
  std::unique_ptr<Network> build(std::size_t hosts) const override {
    return std::make_unique<HybridNetwork>(config_, hosts);
  }

 private:
  HybridConfig config_;
};

}  // namespace

NetworkFamilyInfo hybrid_family() {
  NetworkFamilyInfo f;
  f.name = "hybrid";
  f.summary =
      "Groups of workers on different families (Wi-Fi cells, one LTE cell, switched "
      "Ethernet); each group's gateway has its own backhaul to a core router, and the server "
      "host, when the topology has one, hangs off that router";
  f.params = hybrid_params();
  f.entry_params = hybrid_group_params();
  f.minimal = {{"family", f.name},
               {"groups", nlohmann::json::array({{{"family", "ethernet"}, {"workers", 1}}})}};
  f.resolve = [](const nlohmann::json& object,
                 const std::string& path) -> std::shared_ptr<const FamilyConfig> {
    return std::make_shared<HybridFamilyConfig>(
        read_resolved<HybridConfig>(object, path));
  };
  return f;
}

}  // namespace gradwire
